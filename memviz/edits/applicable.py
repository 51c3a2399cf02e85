"""Which edit applies to which memories, and why not. No Qt here.

The window's edit menus ask this module whether an entry is enabled and what its tooltip
says; the rules read only the loaded arrays (what the panels show), so asking is cheap
enough for every selection change and context menu. The write itself is still guarded by
the store (edits/commands.py refuses what does not apply to the row as it is now).
"""
from __future__ import annotations

import numpy as np

from memviz.store import iso

#: the edits a user can ask for, in menu order
EDITS = ("correct", "confirm", "unprotect", "delete", "restore", "importance", "tags")
#: the memory field each edit writes (another system's store may take only some: store.refuses)
FIELD_OF = {"correct": "content", "confirm": "protected", "unprotect": "protected", "delete": "valid_until",
            "restore": "valid_until", "importance": "importance", "tags": "tags"}


def store_refusal(store, as_of: float | None = None) -> str | None:
    """Why no edit can be written to `store` at all (None: edits can be written). `as_of`: the
    moment the window shows, when it shows the past."""
    if store is None:
        return "no store is open"
    if store.read_only:
        return f"read-only: {store.read_only_reason}"
    return past_refusal(as_of)


def past_refusal(as_of: float | None) -> str | None:
    """Edits change the store as it is now; while the window shows an earlier moment, what the
    user sees is not what an edit would change."""
    if as_of is None:
        return None
    return f"viewing the past (as of {iso(as_of)} UTC); go back to now to edit"


def refusal(key: str, arrays, ids, store=None, as_of: float | None = None) -> str | None:
    """Why edit `key` does not apply to `ids` as loaded in `arrays` (None: it applies).
    With `store`, a store that cannot be written refuses every edit first; with `as_of`, so
    does looking at the past."""
    if key not in EDITS:
        raise ValueError(f"unknown edit {key!r}; one of: {', '.join(EDITS)}")
    if store is not None and (why := store_refusal(store) or store.refuses(FIELD_OF[key])):
        return why
    if why := past_refusal(as_of):
        return why
    if arrays is None:
        return "no store is open"
    ids = list(dict.fromkeys(ids))  # as the edits count them
    rows = np.array([r for r in (arrays.index_of(i) for i in ids) if r is not None], dtype=np.int64)
    if not len(rows):
        return "select a memory first"
    live, prot = arrays.live[rows], arrays.protected[rows].astype(bool)
    some = "the memory is" if len(rows) == 1 else "every chosen memory is"
    if key == "correct":
        if len(ids) != 1:
            return "correct works on one memory at a time"
        return None if live.all() else "the memory is retired; restore it before correcting it"
    if key == "confirm":  # protected with a decay rate left (e.g. by the agent) can still be confirmed
        return None if (~prot | (arrays.decay_rate[rows] != 0)).any() else f"{some} already protected"
    if key == "unprotect":
        return None if prot.any() else f"{some} not protected"
    if key == "delete":
        return None if live.any() else f"{some} already retired"
    if key == "restore":
        return None if (~live).any() else f"{some} current, so there is nothing to restore"
    return None  # importance and tags apply to any memory


def applies(key: str, arrays, ids, store=None) -> bool:
    return refusal(key, arrays, ids, store) is None


def targets(key: str, arrays, ids) -> list[str]:
    """The ids among `ids` that `key` changes (e.g. soft-delete skips already retired memories)."""
    return [i for i in ids if refusal(key, arrays, [i]) is None]


def protected(arrays, ids) -> list[str]:
    """The protected memories among `ids` as loaded: what a soft-delete must be told to include
    (edits.SoftDelete's `include_protected`), so the window asks first."""
    return [i for i in ids if (r := arrays.index_of(i)) is not None and bool(arrays.protected[r])]
