"""Read what changed in the store and apply it to the loaded arrays in place: a live refresh's
read and apply steps (memviz.session.live says how they fit together).

`read_changes(data, loaded)` runs off the GUI thread: it asks the store what changed since
`data.token` (memviz.store.changes) and reads only those rows; when the change cannot be read as
a delta it reads the whole store instead (a StoreData). `apply_changes(state, out)` runs on the
GUI thread: appended rows go at the end of every column (memviz.session.buffers: no copy of the
matrix per insert), changed rows are patched, the derived caches follow (kind/agent codes,
counts, the int8 index of the queries: memviz.retrieval.quantized.carry), the state takes the
new arrays (AppState.take_rows: the as-of view, if one is shown, is made again from them) and
fires rows_changed with a RowsDelta naming the rows for the panels. The arrays object is
replaced: a job still reading the old one sees its own rows.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from memviz.retrieval import quantized
from memviz.session.buffers import grow, rooms
from memviz.session.state import PREVIEW_CHARS, AppState, StoreData, counts_shifted, load_store_data
from memviz.store.arrays import MemoryArrays
from memviz.store.changes import Changes, changes_since


@dataclass
class FreshRows:
    """What read_changes found: the changes and the rows they name, read as arrays."""

    changes: Changes
    rows: MemoryArrays          # the added and changed rows, in rowid order
    links: list                 # (id, source ids, superseded ids) of the added rows that have links
    data: StoreData             # the StoreData it was read for
    loaded: MemoryArrays        # the loaded arrays it was read against (AppState.loaded_arrays)
    room: dict | None = None    # columns copied into buffers with spare rows (off the GUI thread) when
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


def read_changes(data: StoreData, loaded: MemoryArrays, max_share: float | None = None):
    """Off the GUI thread. FreshRows, or a StoreData when the whole store had to be read again
    (its `full_reason` says why), or None when nothing changed. `loaded`: the arrays as the
    store was last read (AppState.loaded_arrays: not an as-of view)."""
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
    a = loaded
    rows = store.arrays_of(wanted, a.embedding_model, a.dim if a.embedding_model else None, preview=PREVIEW_CHARS)
    # links of new rows (a reflection's sources, a correction's supersedes); a link an agent
    # rewrites on an existing row is seen at the next whole read
    links = store.links_of(changes.added) if changes.added else []
    return FreshRows(changes, rows, links, data, a, rooms(data, a, 4 * len(changes.added)))


def refresh(state: AppState, max_share: float | None = None) -> str:
    """read_changes then apply_changes on the calling thread (a script, a test; the window reads
    off the GUI thread). What apply_changes returns."""
    if state.data is None:
        return "none"
    return apply_changes(state, read_changes(state.data, state.loaded_arrays, max_share))


def apply_changes(state: AppState, out) -> str:
    """On the GUI thread, install what read_changes read: a delta patches the loaded arrays and
    fires rows_changed (selection, result and view stay: rows keep their indices); a whole
    re-read goes through set_data. Returns "delta", "full", "none" (nothing, or read for data
    or arrays replaced since), or "misfit" (the delta did not fit the loaded arrays: the caller
    re-reads the store)."""
    data = state.data
    if out is None or data is None:
        return "none"
    if isinstance(out, StoreData):
        if out.store is not data.store:
            return "none"  # read for a store that is no longer open
        state.set_data(out)
        return "full"
    if out.data is not data or out.loaded is not state.loaded_arrays:
        return "none"  # read for data or arrays that have been replaced since
    got = install(data, out)
    if got is None:
        return "misfit"
    arrays, delta = got
    state.take_rows(arrays)
    if out.links:
        data.add_links(out.links)
    state.rows_changed.emit(delta)
    return "delta"


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
    everything. `room`: columns of `a` already copied into buffers with spare rows (read_changes),
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


def install(data: StoreData, fresh: FreshRows) -> tuple[MemoryArrays, RowsDelta] | None:
    """Apply `fresh` to `data` on the GUI thread: the new loaded arrays (made from
    `fresh.loaded`; the caller gives them to the state), kind/agent codes extended (a new kind
    goes last, so existing codes and colours stay), counts and token. None: re-read the whole
    store instead."""
    a = fresh.loaded
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
    data.counts = counts_shifted(data.counts, (data.kinds, data.agents), old,
                                 (data.kind_codes[touched], data.agent_codes[touched], np.isnan(new.valid_until[touched])))
    data.token = fresh.changes.token
    return new, RowsDelta(added, changed, changed[before & ~after], changed[~before & after], bool(fresh.links),
                          len(a), got.fields)


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
