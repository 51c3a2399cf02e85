"""A live refresh: read what changed in the store and apply it to the loaded arrays in place.

`read_refresh(data)` runs off the GUI thread: it asks the store what changed since `data.token`
(memviz.store.changes) and reads only those rows; when the change cannot be read as a delta it
reads the whole store instead (a StoreData). `install(data, fresh)` runs on the GUI thread
(AppState.apply_refresh calls it): appended rows go at the end of every column (each column,
the embedding matrix too, grows inside a buffer with spare rows, so an insert does not copy
100 MB), changed rows are patched, and the answer is a RowsDelta naming the rows for the
panels. The arrays object is replaced: a job still reading the old one sees its own rows.

Room for new rows is made before it is needed: a whole read puts the matrix in a buffer with
spare rows (memviz.store.arrays.rows_with_room), the first refresh copies the small columns into
such buffers, and when a column's spare rows fall below AHEAD, a background job (`ColumnGrowth`)
copies it into a buffer half as large again, which a later install takes (adding the few rows
written since), so no refresh waits for a copy of the matrix.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from memviz.background import in_thread
from memviz.retrieval import quantized
from memviz.store.arrays import MemoryArrays, rows_with_room, spare_rows
from memviz.store.changes import Changes, changes_since

# A column's copy gets store.arrays.spare_rows of its rows (half as many again): geometric, so a
# steady writer makes the matrix copied ever more rarely (untouched spare rows are address space,
# not resident memory).
AHEAD = 1 / 4  # a column whose spare rows fall below this share of what a copy gives (spare_rows)
               # is copied by a background job, long before it is full


@dataclass
class FreshRows:
    """What read_refresh found: the changes and the rows they name, read as arrays."""

    changes: Changes
    rows: MemoryArrays | None   # the added and changed rows, in rowid order
    links: list                 # (id, source ids, superseded ids) of the added rows that have links
    data: object = None         # the StoreData it was read for
    room: dict | None = None  # columns copied into buffers with spare rows (off the GUI thread) when
                              # the ones in use cannot take the new rows: name -> the copy


@dataclass
class RowsDelta:
    """Rows of the new arrays a refresh touched (indices into `StoreData.arrays`)."""

    added: np.ndarray     # appended rows (new memories), ascending
    changed: np.ndarray   # rows that were there and were re-read
    retired: np.ndarray   # of `changed`: current before, retired now
    restored: np.ndarray  # of `changed`: retired before, current now
    links: bool           # added rows brought source or supersede links (Provenance extended)
    n_before: int         # rows before the refresh
    fields: frozenset = frozenset()  # the MemoryArrays columns whose value changed in `changed` rows


def read_refresh(data, max_share: float | None = None):
    """Off the GUI thread. FreshRows, or a StoreData when the whole store had to be read again
    (its `full_reason` says why), or None when nothing changed."""
    from memviz.session.state import PREVIEW_CHARS, load_store_data  # state imports this module

    store = data.store
    kw = {} if max_share is None else {"max_share": max_share}
    changes = changes_since(store, data.token, **kw)
    if changes.full is not None:
        out = load_store_data(store)
        out.full_reason = changes.full
        return out
    if changes.empty:
        data.token = changes.token
        return None
    wanted = changes.added + changes.changed
    a = data.arrays
    rows = store.arrays_of(wanted, a.embedding_model, a.dim if a.embedding_model else None, preview=PREVIEW_CHARS)
    # links of new rows (a reflection's sources, a correction's supersedes); a link an agent
    # rewrites on an existing row is seen at the next whole read
    links = store.links_of(changes.added) if changes.added else []
    return FreshRows(changes, rows, links, data, _rooms(data, a, 4 * len(changes.added)))


def _columns(a: MemoryArrays):
    """(name, column) of the columns of `a` that grow with its rows."""
    for f in fields(MemoryArrays):
        col = getattr(a, f.name)
        if f.name not in ("embedding_model", "_index") and isinstance(col, np.ndarray):
            yield f.name, col


def _rooms(data, a: MemoryArrays, k: int) -> dict:
    """Off the GUI thread: copies, with spare rows, of the columns of `a` that cannot take `k`
    more rows in place (or cannot be patched: read-only, not in a buffer) and that no background
    copy is making (one that is, is waited for: never two copies of a column at once). Columns
    whose spare rows run low get a background copy (`ColumnGrowth`), taken by a later install."""
    growth = data.growth
    need = {name for name, col in _columns(a) if _spare(col) < k}
    if growth is not None and need & growth.names:
        growth.job.exception()  # made ahead, but not ready in time: wait for it rather than copy again
    out = {name: _with_room(col, k) for name, col in _columns(a)
           if name in need and (growth is None or name not in growth.names)}
    low = {name for name, col in _columns(a)
           if name not in out and _spare(col) - k < AHEAD * spare_rows(len(col))}
    if low and growth is None:
        data.growth = ColumnGrowth(a, low)
    return out


class ColumnGrowth:
    """Columns being copied into larger buffers by a background thread, ahead of need. The copy
    holds the rows the columns had when it started; `finish` (install, on the GUI thread) adds
    the rows appended since and the rows patched since (recorded in `patched`), a few rows."""

    def __init__(self, a: MemoryArrays, names: set):
        self.names, self.n = frozenset(names), len(a)
        self.patched: list[np.ndarray] = []
        cols = {name: getattr(a, name) for name in names}
        self.job = in_thread(lambda: {name: _with_room(col) for name, col in cols.items()}, "memviz-grow")

    def finish(self, a: MemoryArrays, k: int) -> dict:
        """The copies brought up to `a` (name -> a view of a.n rows with room for `k` more);
        a column whose copy does not fit (another shape, too little room) is left out."""
        if self.job.exception() is not None:
            return {}  # (out of memory) the columns grow when they must, in install
        out = {}
        rows = np.unique(np.concatenate(self.patched)) if self.patched else np.zeros(0, np.int64)
        rows = rows[rows < self.n]
        for name, copy in self.job.result().items():
            col = getattr(a, name)
            buf = _buffer(copy)
            if col is None or buf is None or len(col) < self.n or col.shape[1:] != copy.shape[1:] \
                    or col.dtype != copy.dtype or buf.shape[0] < len(col) + k:
                continue
            buf[self.n:len(col)] = col[self.n:]
            buf[rows] = col[rows]
            out[name] = buf[:len(col)]
        return out


@dataclass
class Applied:
    """What apply_rows made: the new arrays and what changed (values compared before patching)."""

    arrays: MemoryArrays
    added: np.ndarray     # appended rows
    changed: np.ndarray   # patched rows, ascending
    was_live: np.ndarray  # per changed row: current before the refresh
    fields: frozenset     # columns whose value differs in the changed rows


def apply_rows(a: MemoryArrays, fresh: MemoryArrays, room: dict | None = None) -> Applied | None:
    """New arrays with `fresh`'s rows appended (rowid above the last loaded one) or patched in
    place of the rows with their rowid. None when `fresh` does not fit (a rowid unknown below
    the last, a rowid now holding another id, another embedding model): the caller re-reads
    everything. `room`: columns of `a` already copied into buffers with spare rows (read_refresh),
    each used if it still holds as many rows as the column.

    Every column is a view into a buffer with spare rows, so an insert writes only the new
    rows (no 100k-row copies per refresh). The old arrays keep seeing their own rows; a
    patched row is patched for them too (the buffers are shared)."""
    n = len(a)
    last = int(a.rowid[-1]) if n else -1
    is_new = fresh.rowid > last
    at = np.searchsorted(a.rowid, fresh.rowid[~is_new]) if n else np.zeros(0, np.int64)
    old_part = np.flatnonzero(~is_new)
    if len(at) and ((at >= n).any() or (a.rowid[np.minimum(at, n - 1)] != fresh.rowid[~is_new]).any()):
        return None
    if any(a.ids[i] != fresh.ids[j] for i, j in zip(at.tolist(), old_part.tolist())):
        return None
    if fresh.has_embedding.any() and (a.embedding_model != fresh.embedding_model or a.dim != fresh.dim):
        return None
    new_part = np.flatnonzero(is_new)
    was_live = np.isnan(a.valid_until[at])
    changed_fields, cols = set(), {}
    for f in fields(MemoryArrays):
        name = f.name
        old, add = getattr(a, name), getattr(fresh, name)
        if name in ("embedding_model", "_index") or old is None:
            continue
        if len(at) and name != "rowid" and not _same(old[at], add[old_part]):
            changed_fields.add(name)
        copy = (room or {}).get(name)
        base = copy if copy is not None and copy.shape == old.shape else old
        col = grow(base, add[new_part], patch=len(at) > 0)
        if len(at):
            col[at] = add[old_part]
        cols[name] = col
    # the id index is shared and extended (copying 100k entries per refresh costs more than it
    # saves): the old arrays answer index_of for a new id with a row they do not have
    index = a._index
    if index is not None:
        for k, mid in enumerate(fresh.ids[new_part].tolist()):
            index[mid] = n + k
    out = replace(a, _index=index, **cols)
    return Applied(out, np.arange(n, n + len(new_part), dtype=np.int64), at.astype(np.int64), was_live,
                   frozenset(changed_fields))


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    if x.dtype == object:
        return list(x) == list(y)
    return bool(np.array_equal(x, y, equal_nan=x.dtype.kind == "f"))


def _buffer(col: np.ndarray) -> np.ndarray | None:
    """The writable buffer `col` is the first rows of (None: it is not such a view)."""
    base = col.base
    if isinstance(base, np.ndarray) and base.ndim == col.ndim and col.flags.writeable \
            and base.shape[1:] == col.shape[1:] and base.dtype == col.dtype and base.flags.c_contiguous \
            and (not col.size or col.ctypes.data == base.ctypes.data):
        return base
    return None


def _spare(col: np.ndarray) -> int:
    """Rows that can still be appended to `col` without a copy (-1: it is not in such a buffer)."""
    buf = _buffer(col)
    return -1 if buf is None else buf.shape[0] - col.shape[0]


def _with_room(col: np.ndarray, k: int = 0) -> np.ndarray:
    """A copy of `col` as the first rows of a buffer with spare rows (spare_rows of its length, + k)."""
    out = rows_with_room(col.shape[0], col.shape[1:], col.dtype, k)
    out[:] = col
    return out


def grow(col: np.ndarray, add: np.ndarray, patch: bool = False) -> np.ndarray:
    """`col` with `add` below it: a view into a buffer with spare rows, copied only when full
    (or when `col` is read-only and `patch` says rows of it will be written)."""
    n, k = col.shape[0], add.shape[0]
    if k == 0 and (col.flags.writeable or not patch):
        return col
    if _spare(col) < k:
        col = _with_room(col, k)
    buf = _buffer(col)
    buf[n:n + k] = add
    return buf[:n + k]


def install(data, fresh: FreshRows) -> RowsDelta | None:
    """Apply `fresh` to `data` (a StoreData) on the GUI thread: new arrays, kind/agent codes
    extended (a new kind goes last, so existing codes and colours stay), counts, token, and
    provenance dropped when links may have changed. None: re-read the whole store instead."""
    from memviz.session.state import counts_shifted

    a = data.arrays
    room = dict(fresh.room or {})
    growth = data.growth
    if growth is not None and growth.job.done():  # a background copy is ready: bring it up to date, use it
        data.growth = None
        k = int((fresh.rows.rowid > a.rowid[-1]).sum()) if len(a) else len(fresh.rows)
        room.update({name: col for name, col in growth.finish(a, k).items() if name not in room})
    got = apply_rows(a, fresh.rows, room)
    if got is None:
        return None
    if data.growth is not None:
        data.growth.patched.append(got.changed)  # a copy under way may have read these rows before
    new, added, changed = got.arrays, got.added, got.changed
    before, after = got.was_live, np.isnan(new.valid_until[changed])
    touched = np.concatenate([changed, added])
    old = (data.kind_codes[changed].copy(), data.agent_codes[changed].copy(), before)  # (the codes grow in place)
    data.kind_codes = _extend_codes(data.kind_codes, data.kinds, new.kind, touched, len(new))
    data.agent_codes = _extend_codes(data.agent_codes, data.agents, new.agent, touched, len(new))
    # the int8 index of the queries grows with the matrix (rows appended, re-embedded ones quantised again)
    quantized.carry(a, new, changed if "embedding" in got.fields or "has_embedding" in got.fields else changed[:0])
    data.arrays = new
    data.counts = counts_shifted(data.counts, (data.kinds, data.agents), old,
                                 (data.kind_codes[touched], data.agent_codes[touched], np.isnan(new.valid_until[touched])))
    data.token = fresh.changes.token
    if fresh.links:
        data.add_links(fresh.links)
    return RowsDelta(added, changed, changed[before & ~after], changed[~before & after], bool(fresh.links), len(a),
                     got.fields)


def _extend_codes(codes: np.ndarray, names: list[str], values: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    """Codes for n rows: the old ones, and those of `rows` looked up in `names` (extended in place).
    The codes grow inside a buffer with spare rows, like the columns."""
    out = grow(codes, np.zeros(n - len(codes), np.int64), patch=True)
    lookup = {v: i for i, v in enumerate(names)}
    for r in rows.tolist():
        v = str(values[r])
        if v not in lookup:
            lookup[v] = len(names)
            names.append(v)
        out[r] = lookup[v]
    return out
