"""A live refresh: read what changed in the store and apply it to the loaded arrays in place.

`read_refresh(data)` runs off the GUI thread: it asks the store what changed since `data.token`
(memviz.store.changes) and reads only those rows; when the change cannot be read as a delta it
reads the whole store instead (a StoreData). `apply_rows(data, fresh)` runs on the GUI thread
(AppState.apply_refresh calls it): appended rows go at the end of every column (the embedding
matrix grows inside a buffer with spare room, so an insert does not copy 100 MB), changed rows
are patched, and the answer is a RowsDelta naming the rows for the panels. The arrays object is
replaced, not mutated, so a job still reading the old one sees it whole.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace

import numpy as np

from memviz.store.arrays import MemoryArrays, load_arrays
from memviz.store.changes import Changes, changes_since

GROW = 1 / 16  # spare rows the embedding buffer keeps, as a share of the store (at least 256)


@dataclass
class FreshRows:
    """What read_refresh found: the changes and the rows they name, read as arrays."""

    changes: Changes
    rows: MemoryArrays | None   # the added and changed rows, in rowid order
    links: bool                 # one of them has sources or a supersede link (provenance to re-read)
    data: object = None         # the StoreData it was read for


@dataclass
class RowsDelta:
    """Rows of the new arrays a refresh touched (indices into `StoreData.arrays`)."""

    added: np.ndarray     # appended rows (new memories), ascending
    changed: np.ndarray   # rows that were there and were re-read
    retired: np.ndarray   # of `changed`: current before, retired now
    restored: np.ndarray  # of `changed`: retired before, current now
    links: bool           # source or supersede links may have changed
    n_before: int         # rows before the refresh


def read_refresh(data, max_share: float | None = None):
    """Off the GUI thread. FreshRows, or a StoreData when the whole store had to be read again
    (its `full_reason` says why), or None when nothing changed."""
    from memviz.session.state import PREVIEW_CHARS, load_store_data  # noqa: PLC0415 - state imports this module

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
    rows = load_arrays(store.conn, a.embedding_model, a.dim if a.embedding_model else None, preview=PREVIEW_CHARS,
                       rowids=wanted)
    linked = store.conn.execute(
        "SELECT count(*) FROM memories WHERE rowid IN (SELECT value FROM json_each(?)) "
        "AND (source_ids NOT IN ('[]', '') OR attributes LIKE '%supersedes%')", (json.dumps(wanted),)).fetchone()[0]
    return FreshRows(changes, rows, bool(linked), data)


_SKIP = {"embedding", "embedding_model", "_index"}


def apply_rows(a: MemoryArrays, fresh: MemoryArrays) -> tuple[MemoryArrays, np.ndarray, np.ndarray] | None:
    """New arrays with `fresh`'s rows appended (rowid above the last loaded one) or patched in
    place of the rows with their rowid; (arrays, added rows, changed rows). None when `fresh`
    does not fit (a rowid unknown below the last, a rowid now holding another id, another
    embedding model): the caller re-reads everything."""
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
    cols = {}
    for f in fields(MemoryArrays):
        name = f.name
        if name in _SKIP:
            continue
        old, add = getattr(a, name), getattr(fresh, name)
        if old is None:
            cols[name] = None
            continue
        col = np.concatenate([old, add[new_part]]) if len(new_part) else old.copy()
        if len(at):
            col[at] = add[old_part]
        cols[name] = col
    emb = _grow(a.embedding, fresh.embedding[new_part])
    if len(at):
        emb[at] = fresh.embedding[old_part]  # writes into the shared buffer: a re-embedded row
    index = dict(a._index) if a._index is not None else None
    if index is not None:
        for k, mid in enumerate(fresh.ids[new_part].tolist()):
            index[mid] = n + k
    out = replace(a, embedding=emb, _index=index, **cols)
    return out, np.arange(n, n + len(new_part), dtype=np.int64), np.sort(at).astype(np.int64)


def _grow(emb: np.ndarray, add: np.ndarray) -> np.ndarray:
    """emb with `add` below it: a view into a buffer with spare rows, copied only when full."""
    n, k = emb.shape[0], add.shape[0]
    base = emb.base if isinstance(emb.base, np.ndarray) and emb.base.ndim == 2 else None
    if base is not None and emb.flags.writeable and base.shape[0] >= n + k and base.shape[1] == emb.shape[1] \
            and np.shares_memory(base[:1], emb[:1]) and emb.ctypes.data == base.ctypes.data:
        buf = base
    else:
        if k == 0 and emb.flags.writeable:
            return emb
        buf = np.empty((n + k + max(256, int((n + k) * GROW)), emb.shape[1]), dtype=emb.dtype)
        buf[:n] = emb
    buf[n:n + k] = add
    return buf[:n + k]


def install(data, fresh: FreshRows) -> RowsDelta | None:
    """Apply `fresh` to `data` (a StoreData) on the GUI thread: new arrays, kind/agent codes
    extended (a new kind goes last, so existing codes and colours stay), counts, token, and
    provenance dropped when links may have changed. None: re-read the whole store instead."""
    from memviz.session.state import counts_of  # noqa: PLC0415

    a = data.arrays
    got = apply_rows(a, fresh.rows)
    if got is None:
        return None
    new, added, changed = got
    before, after = a.live[changed], new.live[changed]
    touched = np.concatenate([changed, added])
    data.kind_codes = _extend_codes(data.kind_codes, data.kinds, new.kind, touched, len(new))
    data.agent_codes = _extend_codes(data.agent_codes, data.agents, new.agent, touched, len(new))
    data.arrays = new
    data.counts = counts_of(new, (data.kinds, data.kind_codes), (data.agents, data.agent_codes))
    data.token = fresh.changes.token
    if fresh.links:
        with data._lock:
            data.provenance_ = None
    return RowsDelta(added, changed, changed[before & ~after], changed[~before & after], fresh.links, len(a))


def _extend_codes(codes: np.ndarray, names: list[str], values: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    """Codes for n rows: the old ones, and those of `rows` looked up in `names` (extended in place)."""
    out = np.empty(n, np.int64)
    out[:len(codes)] = codes
    lookup = {v: i for i, v in enumerate(names)}
    for r in rows.tolist():
        v = str(values[r])
        if v not in lookup:
            lookup[v] = len(names)
            names.append(v)
        out[r] = lookup[v]
    return out
