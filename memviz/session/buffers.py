"""Columns that grow without being copied: each is the first rows of a buffer with spare rows.

A live refresh appends a few rows to every column of the arrays (the embedding matrix too);
`grow` writes them into the spare rows, so an insert does not copy 100 MB, and copies a column
only when its buffer is full. Room is made before it is needed: a whole read puts the matrix in
such a buffer (memviz.store.arrays.rows_with_room), the first refresh copies the small columns
into buffers (`rooms`), and when a column's spare rows fall below AHEAD, a background job
(`ColumnGrowth`) copies it into a buffer half as large again, which a later refresh takes
(adding the few rows written since), so no refresh waits for a copy of the matrix. Panels keep
their per-row arrays (plot points, map positions) in such buffers too, given their room where
they are made whole (`taken`, `with_room`): a refresh's first append to a million points copies none of them.
"""
from __future__ import annotations

from dataclasses import fields

import numpy as np

from memviz.background import in_thread
from memviz.store.arrays import MemoryArrays, rows_with_room, spare_rows

# A column's copy gets store.arrays.spare_rows of its rows (half as many again): geometric, so a
# steady writer makes the matrix copied ever more rarely (untouched spare rows are address space,
# not resident memory).
AHEAD = 1 / 4  # a column whose spare rows fall below this share of what a copy gives (spare_rows)
               # is copied by a background job, long before it is full


def row_columns(a: MemoryArrays):
    """(name, column) of the columns of `a` that grow with its rows."""
    for f in fields(MemoryArrays):
        col = getattr(a, f.name)
        if f.name not in ("embedding_model", "_index") and isinstance(col, np.ndarray):
            yield f.name, col


def buffer_of(col: np.ndarray) -> np.ndarray | None:
    """The writable buffer `col` is the first rows of (None: it is not such a view)."""
    base = col.base
    if isinstance(base, np.ndarray) and base.ndim == col.ndim and col.flags.writeable \
            and base.shape[1:] == col.shape[1:] and base.dtype == col.dtype and base.flags.c_contiguous \
            and (not col.size or col.ctypes.data == base.ctypes.data):
        return base
    return None


def spare(col: np.ndarray) -> int:
    """Rows that can still be appended to `col` without a copy (-1: it is not in such a buffer)."""
    buf = buffer_of(col)
    return -1 if buf is None else buf.shape[0] - col.shape[0]


def with_room(col: np.ndarray, k: int = 0) -> np.ndarray:
    """A copy of `col` as the first rows of a buffer with spare rows (spare_rows of its length, + k)."""
    out = rows_with_room(col.shape[0], col.shape[1:], col.dtype, k)
    out[:] = col
    return out


def taken(col: np.ndarray, index: np.ndarray) -> np.ndarray:
    """`col[index]` as the first rows of a buffer with spare rows: for the per-row arrays a panel
    makes whole (a redraw), where the room costs what the array costs anyway, so that the next
    live refresh appends to them without copying them on the GUI thread (10-20 ms a column of a
    million rows)."""
    out = rows_with_room(len(index), col.shape[1:], col.dtype)
    np.take(col, index, axis=0, out=out)
    return out


def grow(col: np.ndarray, add: np.ndarray, patch: bool = False) -> np.ndarray:
    """`col` with `add` below it: a view into a buffer with spare rows, copied only when full
    (or when `col` is read-only and `patch` says rows of it will be written)."""
    n, k = col.shape[0], add.shape[0]
    if k == 0 and (col.flags.writeable or not patch):
        return col
    if spare(col) < k:
        col = with_room(col, k)
    buf = buffer_of(col)
    buf[n:n + k] = add
    return buf[:n + k]


def rooms(data, a: MemoryArrays, k: int) -> dict:
    """Off the GUI thread: copies, with spare rows, of the columns of `a` (the loaded arrays of
    StoreData `data`) that cannot take `k` more rows in place (or cannot be patched: read-only,
    not in a buffer) and that no background copy is making (one that is, is waited for: never two
    copies of a column at once). Columns whose spare rows run low get a background copy
    (`data.growth`, a ColumnGrowth), taken by a later refresh."""
    growth = data.growth
    need = {name for name, col in row_columns(a) if spare(col) < k}
    if growth is not None and need & growth.names:
        growth.job.exception()  # made ahead, but not ready in time: wait for it rather than copy again
    out = {name: with_room(col, k) for name, col in row_columns(a)
           if name in need and (growth is None or name not in growth.names)}
    low = {name for name, col in row_columns(a)
           if name not in out and spare(col) - k < AHEAD * spare_rows(len(col))}
    if low and growth is None:
        data.growth = ColumnGrowth(a, low)
    return out


class ColumnGrowth:
    """Columns being copied into larger buffers by a background thread, ahead of need. The copy
    holds the rows the columns had when it started; `finish` (on the GUI thread) adds the rows
    appended since and the rows patched since (recorded in `patched`), a few rows."""

    def __init__(self, a: MemoryArrays, names: set):
        self.names, self.n = frozenset(names), len(a)
        self.patched: list[np.ndarray] = []
        cols = {name: getattr(a, name) for name in names}
        self.job = in_thread(lambda: {name: with_room(col) for name, col in cols.items()}, "memviz-grow")

    def finish(self, a: MemoryArrays, k: int) -> dict:
        """The copies brought up to `a` (name -> a view of a.n rows with room for `k` more);
        a column whose copy does not fit (another shape, too little room) is left out."""
        if self.job.exception() is not None:
            return {}  # (out of memory) the columns grow when they must, in the refresh
        out = {}
        rows = np.unique(np.concatenate(self.patched)) if self.patched else np.zeros(0, np.int64)
        rows = rows[rows < self.n]
        for name, copy in self.job.result().items():
            col = getattr(a, name)
            buf = buffer_of(copy)
            if col is None or buf is None or len(col) < self.n or col.shape[1:] != copy.shape[1:] \
                    or col.dtype != copy.dtype or buf.shape[0] < len(col) + k:
                continue
            buf[self.n:len(col)] = col[self.n:]
            buf[rows] = col[rows]
            out[name] = buf[:len(col)]
        return out
