"""The memory table's sorting and searching at a million rows, Qt-free (the table model uses it).

Sorting: each column's stable ascending order of *all* rows is made once (an argsort of the
numbers, Python's stable sort of the texts) and kept while the rows stay the same; a filtered
table is then that order with the hidden rows dropped, `perm[shown[perm]]` - the same rows in
the same order as a stable argsort of the shown rows' keys, in one pass instead of a sort.

Searching: a substring test over the lower-cased texts; when the new text contains the last one
(typing on), only the last matches are tested again.
"""
from __future__ import annotations

import numpy as np


def stable_order(key: np.ndarray) -> np.ndarray:
    """np.argsort(key, kind="stable"), strings included (a list sort compares them as numpy's
    object sort does, with `<`, and is stable too, in a third of the time)."""
    if key.dtype == object:
        values = key.tolist()
        return np.fromiter(sorted(range(len(values)), key=values.__getitem__), np.int64, count=len(values))
    return np.argsort(key, kind="stable")


class ColumnOrders:
    """Stable orders of all rows per column, for one set of values (`source`: the objects the
    keys are read from; another source, or `clear()` after rows changed, starts afresh)."""

    def __init__(self) -> None:
        self._source: tuple = ()
        self._perm: dict = {}

    def clear(self) -> None:
        self._perm.clear()

    def shown_in_order(self, column, key_of, source: tuple, shown: np.ndarray) -> np.ndarray:
        """Rows where `shown` is True, sorted stably by `key_of()` ascending (made on first use)."""
        if len(source) != len(self._source) or any(a is not b for a, b in zip(source, self._source)):
            self._source, self._perm = source, {}
        perm = self._perm.get(column)
        if perm is None or len(perm) != len(shown):
            perm = self._perm[column] = stable_order(np.asarray(key_of()))
        return perm[shown[perm]]


class TextSearch:
    """Which rows' lower-cased text or id contains a text; remembers the last answer."""

    def __init__(self) -> None:
        self._last: tuple | None = None   # (texts, ids, text, mask)

    def clear(self) -> None:
        self._last = None

    def mask(self, lower: np.ndarray, ids: np.ndarray, text: str) -> np.ndarray:
        text = text.strip().lower()
        n = len(ids)
        if not text:
            return np.ones(n, bool)
        last = self._last
        if last is not None and last[0] is lower and last[1] is ids and len(last[3]) == n and last[2] in text:
            rows = np.flatnonzero(last[3])   # typing on: only the last matches can still match
        else:
            rows = None
        lo, ii = lower.tolist() if rows is None else lower[rows].tolist(), \
            (ids.tolist() if rows is None else ids[rows].tolist())
        hit = np.fromiter(((text in p) or (text in i) for p, i in zip(lo, ii)), bool, count=len(lo))
        if rows is None:
            out = hit
        else:
            out = np.zeros(n, bool)
            out[rows[hit]] = True
        self._last = (lower, ids, text, out)
        return out
