"""The memory of other agent frameworks (mem0, LangGraph, Letta, Chroma, HTM), opened where it
lives, next to memviz's own stores. No Qt here.

`open_source(target)` is how every command and the window open what the user names: a
framework's store is recognised (probe.py, each system's Source.recognise) and opened through
its mirror (mirror.py); anything else opens as a native store (SQLite file or PostgreSQL).
Input that is neither gets one message saying what it looked like and what memviz reads.

The systems memviz knows are registered with `register_source`: the built-in ones (SYSTEM_MODULES)
when the registry is first used, then a plugin's (entry point group `memviz.sources`,
memviz/plugins.py), each checked against what `Source` declares (`check_source`). Recognition
tries them in that order, so a built-in system recognises its stores before any plugin does.
"""
from __future__ import annotations

import importlib
import inspect
import re
import threading
from collections.abc import Callable
from typing import TypeVar

from .. import plugins
from ..background import gc_paused
from ..store import NotAStoreError, StoreError
from ..store import open_and_read as open_and_read_native
from ..tasks import Task
from .mirror import MirroredStore, open_mirrored
from .probe import Probe
from .source import EDIT_NAMES, Source

T = TypeVar("T")

#: one module per system, each defining SOURCES (its Source subclasses), tried in this order
SYSTEM_MODULES: list[str] = [
    "mem0",
    "htm",
    "letta",
    "langgraph",
    "chroma",
]
GROUP = "memviz.sources"
#: a system's key names its mirror file (mirror.py) and its audit rows: short, lower case
_SYSTEM_KEY = re.compile(r"[a-z0-9][a-z0-9_.-]{0,39}")
#: what every Source must implement (the rest has defaults); one that lists edits implements write() too
_REQUIRED = ("recognise", "token", "records")

_systems: list[type[Source]] = []   # registered, in the order recognition tries them
_CLAIMS = plugins.Claims("the memory system key")  # a system's key -> the plugin that registered it
_builtins = threading.Lock()
_builtins_done = False


def check_source(cls) -> None:
    """Raise TypeError / ValueError saying what `cls` lacks to be a memory system memviz opens
    (what `Source` declares: its names, `recognise` as a classmethod, `token`, `records`, and
    `write` when it lists `edits`)."""
    if not (isinstance(cls, type) and issubclass(cls, Source)):
        raise TypeError(f"{cls!r} is not a memory system: make it a subclass of memviz.frameworks.Source")
    name = cls.__name__
    if not isinstance(cls.system, str) or not _SYSTEM_KEY.fullmatch(cls.system):
        raise ValueError(f"{name}.system must be a short lower-case key (letters, digits, '-', '_', '.'), "
                         f"not {cls.system!r}")
    if not isinstance(cls.title, str) or not cls.title.strip():
        raise ValueError(f"{name}.title must be the system's name as users know it, not {cls.title!r}")
    if not isinstance(cls.edits, frozenset) or not cls.edits <= EDIT_NAMES.keys():
        raise ValueError(f"{name}.edits must be a frozenset of {sorted(EDIT_NAMES)}, not {cls.edits!r}")
    if not isinstance(cls.corrects_in_place, bool):
        raise ValueError(f"{name}.corrects_in_place must be True or False, not {cls.corrects_in_place!r}")
    if not isinstance(inspect.getattr_static(cls, "recognise"), classmethod):
        raise TypeError(f"{name}.recognise must be a classmethod (it is given a Probe and returns a source or None)")
    missing = [m for m in (*_REQUIRED, *(("write",) if cls.edits else ()))
               if inspect.getattr_static(cls, m) is inspect.getattr_static(Source, m)]
    if missing:
        raise TypeError(f"{name} does not implement {', '.join(m + '()' for m in missing)}"
                        + (f" (it lists edits {sorted(cls.edits)}, which write() writes back)" if "write" in missing else ""))


def register_source(cls: type[Source], *, plugin: plugins.Plugin | None = None) -> str:
    """Make memviz recognise and open the stores of `cls` (tried after those registered before
    it); returns its `system`. Raises TypeError / ValueError saying what it lacks, or when
    another distribution's entry holds its system key (the one there first wins; memviz's are)."""
    check_source(cls)
    if any(other.system == cls.system for other in _systems):
        held = _CLAIMS.plugin(cls.system)
        if (held.dist if held is not None else None) != (plugin.dist if plugin is not None else None):
            raise _CLAIMS.taken(cls.system)  # one distribution may give a system several classes (backends)
    _systems.append(cls)
    _CLAIMS.add(cls.system, plugin)
    return cls.system


def _unregister(plugin: plugins.Plugin) -> None:
    for cls in [c for c in _systems if c.system == plugin.registered]:
        _systems.remove(cls)
    _CLAIMS.drop(plugin.registered)


def load_plugins() -> None:
    """Register the installed plugins' memory systems, once (after the built-in ones)."""
    global _builtins_done
    with _builtins:
        if not _builtins_done:  # their modules are imported when first needed, not with this package
            for name in SYSTEM_MODULES:
                for cls in importlib.import_module(f"{__name__}.{name}").SOURCES:
                    register_source(cls)
            _builtins_done = True
    plugins.load(GROUP, lambda cls, plugin: register_source(cls, plugin=plugin), _unregister)


def systems() -> list[type[Source]]:
    """Every registered memory system, in the order recognition tries them."""
    load_plugins()
    return list(_systems)


def recognise(target: str) -> Source | None:
    """The framework source at `target`, or None (a native store, or nothing memviz reads). A
    plugin's `recognise` that raises (but a StoreError: it is its store, unreadable) or answers
    with something else than a Source or None is skipped (memviz/plugins.py), never in the way."""
    probe = Probe(target)
    if probe.is_dsn:
        if "memviz_meta" in probe.pg_tables():
            return None  # memviz's own schema on a server
    elif probe.is_file and probe.is_sqlite() and "memviz_meta" in probe.sqlite_tables():
        return None
    for cls in systems():
        plugin = _CLAIMS.plugin(cls.system)
        source = plugins.guarded(plugin, cls.recognise, probe, allow=(StoreError,), doing="recognising a store")
        if source is None:
            continue
        if plugin is not None and not isinstance(source, Source):
            plugins.fault(plugin, f"its recognise() answered {type(source).__name__}, not a Source or None")
            continue
        return source
    return None


#: how each surface names the way in of an export: (where importing is, the other formats it takes)
IMPORTING = {"cli": ("`memviz import`", "the exports listed by `memviz import --help`"),
             "window": ("File ▸ Import…", "the other exports it lists")}


def what_memviz_reads(surface: str = "cli") -> str:
    """What memviz opens and what it imports, in the words of `surface` (a key of IMPORTING)."""
    names = ", ".join(dict.fromkeys(cls.title for cls in systems()))  # one per system, not per backend
    importing, others = IMPORTING[surface]
    return ("memviz opens its own stores (an SQLite file or a PostgreSQL database made by `memviz create`)"
            + (f" and the stores of {names}" if names else "")
            + f"; {importing} brings in Generative Agents folders, ADA streams, JSONL record dumps,"
            + f" Letta agent files (.af) and {others}.")


class NotReadHere(NotAStoreError):
    """A target that is neither memviz's store nor one it recognises: what it looked like, then
    what memviz reads; `worded(surface)` says the second part in another surface's words."""

    def __init__(self, looked_like: str):
        super().__init__(f"{looked_like} {what_memviz_reads()}")
        self.looked_like = looked_like

    def worded(self, surface: str) -> str:
        return f"{self.looked_like} {what_memviz_reads(surface)}"


def open_and_read(target: str, read: Callable | None, *, read_only: bool = False,
                  task: Task | None = None, check_later: bool = False) -> tuple[object, T | None]:
    """(store, read(store)) for whatever `target` is: a framework's store through its mirror,
    else memviz's own store (memviz.store.open_and_read; `check_later` is its option). A target
    that is neither raises a NotAStoreError saying what it looked like and what memviz reads.
    `check_later` (the window) on a large mirror's first build: its indexes are written after
    `read` (mirror.py, MirroredStore.indexing)."""
    source = recognise(target)
    if source is None:
        try:
            return open_and_read_native(target, read, read_only=read_only, check_later=check_later)
        except NotAStoreError as e:
            probe = Probe(target)
            if probe.is_dir:  # how to bring a folder in follows, in the words of the surface that shows it
                said = f"{target} is a folder, not a memory store."
            else:
                said = f"{probe.describe_unknown()}." if probe.is_file and not probe.is_sqlite() else str(e)
            raise NotReadHere(said) from e
    store = open_mirrored(source, task, later=check_later, read_only=read_only)
    try:
        with gc_paused():  # the first read makes 100k-row columns at once (see gc_paused)
            result = read(store) if read is not None else None
    except BaseException:
        store.close()
        raise
    store.index_later()
    return store, result


def open_source(target: str, *, read_only: bool = False, task: Task | None = None):
    """The store at `target` (see open_and_read)."""
    return open_and_read(target, None, read_only=read_only, task=task)[0]


def describe(target: str) -> str:
    """One line saying what `target` is, for `memviz SOURCE` and the window's status bar."""
    source = recognise(target)
    return source.describe() if source is not None else Probe(target).describe_unknown()


__all__ = ["EDIT_NAMES", "MirroredStore", "Probe", "Source", "StoreError", "check_source", "describe", "load_plugins",
           "open_and_read", "open_mirrored", "open_source", "recognise", "register_source", "systems",
           "what_memviz_reads", "NotReadHere"]
