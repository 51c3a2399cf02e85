"""The store as it was at a moment T, rebuilt on the loaded arrays (the store is not touched).

    timeline = Timeline(store, arrays)      # reads the audit log once
    view = timeline.at(T)                   # cheap: one searchsorted and a few column copies

Rules (issue 15 §2):
- a memory is there at T if its `created_at` <= T (when it entered the agent's memory; for an
  imported store that is the agent's own time, not the import's);
- a field changed after T by an audited write (memviz's edits, corrections, undo/redo, the
  agent's writes through memviz) shows the `before` of the earliest audit entry after T;
- `valid_until` after T means the memory was still current at T (retired later: shown current);
- `last_accessed` after T is shown as never accessed: the store keeps no older access time.
Changes written around the audit log (an agent's plain SQL) cannot be undone, except
retirements, which `valid_until` itself dates.

Rows keep their index in the arrays (hidden ones are masked by `visible`), so panels keep
their row numbers and selections across scrubber steps.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field

import numpy as np

from .texts import parse_tags

#: array columns an audited write can change, with how a stored value becomes an array value
_COLUMNS = {
    "importance": float, "decay_rate": float, "confidence": float, "event_time": float, "created_at": float,
    "last_accessed": float, "valid_until": float, "access_count": int, "protected": bool,
    "kind": str, "agent": str,
}
_TEXT_FIELDS = ("content", "tags")
PREVIEW_CHARS = 240  # as memviz.session.state reads previews


@dataclass
class AsOfView:
    """The arrays as they were at `T`; `visible` masks the memories that existed then."""

    T: float
    arrays: object                 # MemoryArrays, same rows as the loaded ones
    visible: np.ndarray            # bool
    content: dict = field(default_factory=dict)  # row -> text at T, for rows whose text changed since
    tags: dict = field(default_factory=dict)     # row -> tags at T, for rows whose tags changed since

    @property
    def live(self) -> np.ndarray:
        """Visible and current at T."""
        return self.visible & np.isnan(self.arrays.valid_until)


@dataclass
class _Field:
    at: np.ndarray      # float64, ascending
    rows: np.ndarray    # int64
    before: np.ndarray  # values before each change (object for text fields)


def _value(name, v):
    if name in _COLUMNS:
        kind = _COLUMNS[name]
        if kind is float:
            try:
                return np.nan if v is None else float(v)
            except (TypeError, ValueError):
                return np.nan
        if kind is int:
            return 0 if v is None else int(v)
        if kind is bool:
            return bool(v)
        return "" if v is None else str(v)
    if name == "tags":
        return parse_tags(v)
    return "" if v is None else str(v)


class Timeline:
    """The audit log of one store, indexed by field and time, over one load of its arrays."""

    def __init__(self, store, arrays):
        self.arrays = arrays
        wanted = set(_COLUMNS) | set(_TEXT_FIELDS)
        acc: dict[str, tuple[list, list, list]] = {}
        entries = sorted(store.audit_entries(with_before=True), key=lambda e: e[1])  # by time, then id (stable)
        for _, at, _, mid, before, _ in entries:
            row = arrays.index_of(mid)
            if row is None:
                continue
            try:
                b = json.loads(before)
            except (ValueError, TypeError):
                continue  # a malformed audit entry tells nothing about the past
            if not isinstance(b, dict):
                continue
            for name in wanted.intersection(b):
                a, r, v = acc.setdefault(name, ([], [], []))
                a.append(float(at))
                r.append(row)
                v.append(_value(name, b[name]))
        self.fields: dict[str, _Field] = {}
        for name, (a, r, v) in acc.items():
            vals = np.empty(len(v), dtype=object) if name in _TEXT_FIELDS or _COLUMNS[name] is str else None
            if vals is not None:
                vals[:] = v
            else:
                vals = np.array(v, dtype={float: np.float64, int: np.int64, bool: bool}[_COLUMNS[name]])
            self.fields[name] = _Field(np.array(a, np.float64), np.array(r, np.int64), vals)
        self.entries = sum(len(f.at) for f in self.fields.values())

    def _before(self, name: str, T: float):
        """(rows changed after T, their value at T) for one field."""
        f = self.fields.get(name)
        if f is None:
            return None
        i0 = int(np.searchsorted(f.at, T, side="right"))
        if i0 == len(f.at):
            return None
        rows, first = np.unique(f.rows[i0:], return_index=True)  # earliest entry after T per row
        return rows, f.before[i0:][first]

    def at(self, T) -> AsOfView:
        a = self.arrays
        if T is None or (isinstance(T, float) and math.isinf(T) and T > 0):
            return AsOfView(math.inf, a, np.ones(len(a), bool))
        T = float(T)
        cols = {}
        for name in _COLUMNS:
            got = self._before(name, T)
            if got is not None:
                col = getattr(a, name).copy()
                col[got[0]] = got[1]
                cols[name] = col
        vu = cols.get("valid_until", a.valid_until)
        if np.any(vu > T):
            vu = vu.copy() if "valid_until" not in cols else vu
            vu[vu > T] = np.nan  # retired after T: current at T
            cols["valid_until"] = vu
        la = cols.get("last_accessed", a.last_accessed)
        if np.any(la > T):
            la = la.copy() if "last_accessed" not in cols else la
            la[la > T] = np.nan
            cols["last_accessed"] = la
        texts = {}
        for name in _TEXT_FIELDS:
            got = self._before(name, T)
            texts[name] = dict(zip(got[0].tolist(), got[1].tolist())) if got is not None else {}
        if texts["content"] and a.preview is not None:
            prev = a.preview.copy()
            for r, t in texts["content"].items():
                prev[r] = t.replace("\r", " ").replace("\n", " ").replace("\t", " ")[:PREVIEW_CHARS]
            cols["preview"] = prev
        view_arrays = dataclasses.replace(a, **cols) if cols else a
        if cols:
            view_arrays._index = a._index  # same ids, same rows: share the id lookup
        created = cols.get("created_at", a.created_at)
        return AsOfView(T, view_arrays, created <= T, texts["content"], texts["tags"])

    def changed_rows(self, name: str, t1: float, t2: float) -> np.ndarray:
        """Rows with an audited change of `name` in (t1, t2]."""
        f = self.fields.get(name)
        if f is None:
            return np.zeros(0, np.int64)
        lo = int(np.searchsorted(f.at, t1, side="right"))
        hi = int(np.searchsorted(f.at, t2, side="right"))
        return np.unique(f.rows[lo:hi])
