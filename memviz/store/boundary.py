"""The store's error boundary, true by construction: every public method of a store class, its
own and those it inherits (StoreCommon, the query mixins), runs inside the class's `guard`,
which turns its database library's errors into the StoreErrors of memviz.store.errors.

A store class derives from `ErrorBoundary` and defines `guard(fn) -> wrapped fn`; the methods
are wrapped when the class is made (`__init_subclass__`), so a method added to a mixin later is
guarded without anyone remembering to. `SELF_TRANSLATING` names those left as they are because
they translate errors themselves: `transaction` (a context manager: its body runs in the caller's
frame, and a failed write must say whether it was written) and `audit` (runs inside one)."""
from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator

SELF_TRANSLATING = frozenset({"transaction", "audit"})


def public_methods(cls: type) -> Iterator[tuple[str, Callable]]:
    """(name, function) of every public method `cls` has, defined on it or inherited (over its
    MRO); properties, static and class methods are not methods here."""
    for name in dir(cls):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(cls, name)
        if inspect.isfunction(attr):
            yield name, attr


def is_guarded(fn: Callable) -> bool:
    return getattr(fn, "__store_boundary__", False)


class ErrorBoundary:
    """Base of a store class whose public methods translate its library's errors (module docstring)."""

    @staticmethod
    def guard(fn: Callable) -> Callable:
        """`fn` wrapped so that its library's errors leave it as StoreErrors."""
        raise NotImplementedError

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name, fn in public_methods(cls):
            if name not in SELF_TRANSLATING and not is_guarded(fn):
                guarded = cls.guard(fn)
                guarded.__store_boundary__ = True
                setattr(cls, name, guarded)
