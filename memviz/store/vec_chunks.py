"""The embedding matrix read from sqlite-vec's own storage instead of one blob per memory.

vec0 keeps a dimension's vectors in chunk blobs of `size` vectors each (`<table>_vector_chunks00`,
one row per chunk; `<table>_chunks` holds each chunk's validity bitmap and the vec0 rowid of each
slot, `<table>_rowids` each vec0 row's memory id, chunk and offset). A million 256-d vectors are
then a thousand 1 MB blob reads rather than a million row reads, copied straight into the matrix
in runs of consecutive slots.

The index is a copy of `memories.embedding` kept by memviz's triggers (vectors.py), so it is used
only where that holds: the table layout is the one this reader knows, every trigger of the
dimension is present with memviz's own SQL (an agent that dropped one leaves `memviz check`
findings, and the rows are read instead), vec0's own tables agree with each other for every
slot used, and a sample of rows spread over the store is compared byte for byte with
`memories.embedding`. Memories missing from the index (vectors written before their dimension had
a table) are read from their rows. Anything else unexpected answers False: the caller reads the rows.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

import apsw
import numpy as np
import orjson

from .records import json_ints
from .vectors import VEC_PREFIX, native_vec_triggers, vec_table

SAMPLE = 256   # rows compared with memories.embedding on every read (evenly spread, plus the newest)


def read_from_index(conn, ids: np.ndarray, rowid: np.ndarray, want: np.ndarray, nbytes: int,
                    out: np.ndarray) -> bool:
    """Fill the rows `want` of `out` ((n, nbytes/4) float32, zeros elsewhere) with the vectors of
    memories `ids` (rowids `rowid`, store order) from the vec0 table of that dimension; rows the
    index lacks are read from `memories`. False (nothing trustworthy written) when the index cannot
    be used: the caller reads every row instead. Runs on the caller's connection and read state."""
    if nbytes % 4 or not want.any():
        return False
    table = vec_table(nbytes // 4)
    index = _index(conn, nbytes // 4)
    if index is None:
        return False
    (size, blob_rowid, valid, slot_rowid), vec_rows = index
    place = _places(vec_rows, ids, want, size, valid, slot_rowid)
    if place is None:
        return False
    rows = np.flatnonzero(want)
    slot = place[rows]
    found = slot >= 0
    try:
        _copy_runs(conn, table, rows[found], slot[found], size, blob_rowid, nbytes, out)
        _copy_rows(conn, rowid, rows[~found], nbytes, out)
    except (apsw.Error, ValueError):
        return False   # a chunk or a row changed shape under us: read the rows instead
    return _sample_agrees(conn, rowid, rows, nbytes, out)


@dataclass
class Chunks:
    """A vec0 table read whole (read_chunks): its layout (_chunk_layout), its rows' memory ids
    and vec0 rowids, and every chunk's vectors in slot order: the first rows of `buffer`, a
    buffer with spare rows."""
    nbytes: int
    layout: tuple
    vec_rows: tuple
    slots: np.ndarray
    buffer: np.ndarray


def likely_dim(conn) -> int:
    """The dimension whose vec0 table has had the most rows (its largest rowid: no count of a large
    table), 0 if there is none."""
    best = (0, 0)
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB ?",
                                (f"{VEC_PREFIX}[0-9]*_rowids",)):
        dim = name[len(VEC_PREFIX):-len("_rowids")]
        if dim.isdigit():
            best = max(best, (conn.execute(f'SELECT coalesce(max(rowid), 0) FROM "{name}"').fetchone()[0], int(dim)))
    return best[1]


def read_chunks(conn, dim: int, allocate, rows: int = 0) -> Chunks | None:
    """The chunks of the vec0 table of `dim` copied, in slot order up to the last slot used, into
    `allocate(max(slots, rows), dim)` (`rows`: what the memories likely number, so that the buffer
    is the one the matrix needs where the two line up). A connection beside the scan of the rows
    reads them (second_read.py); place_read makes them the matrix. None where the table is not
    as this reader knows it, or memviz's triggers do not keep it."""
    table, nbytes = vec_table(dim), 4 * dim
    index = _index(conn, dim)
    if index is None:
        return None
    layout, vec_rows = index
    size, blob_rowid, valid, _slot_rowid = layout
    used = np.flatnonzero(valid.ravel())
    end = int(used[-1]) + 1 if len(used) else 0
    buffer = allocate(max(end, rows), dim)
    flat = memoryview(buffer).cast("B")
    blob = None
    try:
        for c, cid in enumerate(blob_rowid[:-(-end // size)].tolist()):
            if blob is None:
                blob = conn.blob_open("main", f"{table}_vector_chunks00", "vectors", cid, False)
            else:
                blob.reopen(cid)
            if blob.length() != size * nbytes:
                return None
            blob.read_into(flat, c * size * nbytes, min(size, end - c * size) * nbytes)
    finally:
        if blob is not None:
            blob.close()
    return Chunks(nbytes, layout, vec_rows, buffer[:end], buffer if buffer.base is None else buffer.base)


def place_read(conn, chunks: Chunks, ids: np.ndarray, rowid: np.ndarray, want: np.ndarray,
               room: int, allocate, ids_json: str | None = None) -> np.ndarray | None:
    """The matrix of the rows `want` (zeros elsewhere) from `chunks`: its buffer itself where
    every row's slot lies at or after the row (or every one at or before it; the usual index, or
    one where some vectors were rewritten or some memories have none), the vectors moved there in
    place; else a new matrix. Rows the index lacks are read from `memories` on `conn`, where a
    sample is compared too (read_from_index's checks). `room`: the rows the matrix's buffer must
    hold (its rows and their spare ones). `ids_json`: `ids` as SQLite's json_group_array wrote
    them, if at hand (_places). None: the index cannot be used (the caller reads the rows)."""
    n, nbytes = len(ids), chunks.nbytes
    size, _blob_rowid, valid, slot_rowid = chunks.layout
    place = _places(chunks.vec_rows, ids, want, size, valid, slot_rowid, ids_json)
    if place is None or not want.any():
        return None
    rows = np.flatnonzero(want)
    slot = place[rows]
    found = slot >= 0
    rows_f, slot_f = rows[found], slot[found]
    shift = slot_f - rows_f
    buffer = chunks.buffer
    if len(buffer) >= room and ((shift >= 0).all() or (shift <= 0).all()):
        _move_in_place(buffer, rows_f, shift, nbytes)
        out = buffer[:n]
        keep = np.zeros(n, bool)
        keep[rows_f] = True
        out[~keep] = 0
        buffer[n:max(n, len(chunks.slots))] = 0   # the spare rows hold nothing, as a new buffer's
    else:
        out = allocate(n, nbytes // 4)
        out[rows_f] = chunks.slots[slot_f]
    try:
        _copy_rows(conn, rowid, rows[~found], nbytes, out)
    except (apsw.Error, ValueError):
        return None
    return out if _sample_agrees(conn, rowid, rows, nbytes, out) else None


def _move_in_place(buffer: np.ndarray, rows: np.ndarray, shift: np.ndarray, nbytes: int) -> None:
    """buffer[rows] = buffer[rows + shift], every shift of one sign: runs of rows moved by one
    shift, in the order that reads each source before it is written over (memmove: no copy of a
    run, which may be most of the matrix)."""
    if not len(rows) or not shift.any():
        return
    brk = np.flatnonzero((np.diff(rows) != 1) | (np.diff(shift) != 0)) + 1
    runs = list(zip(np.concatenate(([0], brk)).tolist(), np.concatenate((brk, [len(rows)])).tolist()))
    base = buffer.ctypes.data
    for s, e in (runs if shift.max() > 0 else reversed(runs)):
        k, r = int(shift[s]), int(rows[s])
        if k:
            ctypes.memmove(base + r * nbytes, base + (r + k) * nbytes, (e - s) * nbytes)


def _index(conn, dim: int):
    """(_chunk_layout, _vec_rows) of the vec0 table of `dim` where this reader knows its layout and
    memviz's triggers keep it, else None."""
    table = vec_table(dim)
    layout = _chunk_layout(conn, table) if _native_triggers(conn, dim) else None
    vec_rows = _vec_rows(conn, table) if layout is not None else None
    return None if vec_rows is None else (layout, vec_rows)


def _vec_rows(conn, table: str) -> tuple[str, np.ndarray] | None:
    """(memory ids as a JSON array, vec0 rowids) of the vec0 table's rows, in vec0 rowid order (the
    order its rows were added, the memories' own as a rule; a scan SQLite chooses itself may go by
    the ids' index). The ids stay text: where they are the memories' own JSON, character for
    character, no id is parsed (_places)."""
    ids, rowids = conn.execute(f'SELECT json_group_array(id), json_group_array(r) FROM '
                               f'(SELECT id, rowid AS r FROM "{table}_rowids" ORDER BY rowid)').fetchone()
    if not isinstance(ids, str) or not isinstance(rowids, str):
        return None
    at = json_ints(rowids)
    return None if at is None else (ids, at)


def _chunk_layout(conn, table: str):
    """(slots per chunk, each chunk's vector blob rowid, validity (chunks, size) bool, vec0 rowid
    of each slot (chunks, size)) of a vec0 table stored as this reader knows it, else None."""
    want = {f"{table}_chunks": ["chunk_id", "size", "validity", "rowids"],
            f"{table}_rowids": ["rowid", "id", "chunk_id", "chunk_offset"],
            f"{table}_vector_chunks00": ["rowid", "vectors"]}
    for name, cols in want.items():
        have = [r[1] for r in conn.execute("SELECT * FROM pragma_table_info(?)", (name,))]
        if have != cols:
            return None
    rows = conn.execute(f'SELECT chunk_id, size, validity, rowids FROM "{table}_chunks" ORDER BY chunk_id').fetchall()
    if not rows:
        return None
    size = rows[0][1]
    if not isinstance(size, int) or size <= 0 or size % 8:
        return None
    for _cid, s, validity, rowids in rows:
        if s != size or not isinstance(validity, bytes) or len(validity) != size // 8 \
                or not isinstance(rowids, bytes) or len(rowids) != 8 * size:
            return None
    chunk_ids = np.array([r[0] for r in rows], np.int64)
    # the blob of a chunk, by the table's own rowid (its column named "rowid" holds the chunk id)
    real = dict(conn.execute(f'SELECT rowid, _rowid_ FROM "{table}_vector_chunks00"'))
    if any(c not in real for c in chunk_ids.tolist()):
        return None
    blob_rowid = np.array([real[c] for c in chunk_ids.tolist()], np.int64)
    valid = np.unpackbits(np.frombuffer(b"".join(r[2] for r in rows), np.uint8), bitorder="little").astype(bool)
    slot_rowid = np.frombuffer(b"".join(r[3] for r in rows), "<i8")
    return size, blob_rowid, valid.reshape(len(rows), size), slot_rowid.reshape(len(rows), size)


def _native_triggers(conn, dim: int) -> bool:
    """Every trigger keeping the dimension's vec0 table is memviz's, unchanged: each write to
    memories.embedding since the table was made has reached the index."""
    want = native_vec_triggers(dim)
    have = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'memories' "
                             "AND name IN (SELECT value FROM json_each(?))", (orjson.dumps(list(want)).decode(),)))
    return have == want


def _places(vec_rows, ids, want, size, valid, slot_rowid, ids_json: str | None = None) -> np.ndarray | None:
    """Per memory row, its slot in the chunks (chunk position * size + offset), -1 if the index
    has no vector for it. A slot belongs to the vec0 row its chunk names there (what vec0's own
    search reports), so only (id, rowid) of vec0's rowid table are read (`vec_rows`:
    _vec_rows'). `ids_json`: `ids` as json_group_array wrote them; where every row is wanted
    and the index lists the same text, the index was filled in the memories' order (the usual
    store) and no id is parsed. None if vec0's tables disagree with each other."""
    vec_text, vec_rowid = vec_rows
    used = np.flatnonzero(valid.ravel())          # the slots holding a vector, in chunk order
    at = slot_rowid.ravel()[used]                 # and the vec0 rowid of each
    if len(at) != len(vec_rowid):
        return None
    if np.array_equal(at, vec_rowid):
        vec_slot = used   # the usual index: vectors appended in rowid order
    else:
        order = np.argsort(at, kind="stable")
        k = np.searchsorted(at[order], vec_rowid)
        if (np.diff(at[order]) <= 0).any() or (k >= len(at)).any() or not np.array_equal(at[order][k], vec_rowid):
            return None   # a rowid with no slot, or in two
        vec_slot = used[order[k]]
    place = np.full(len(ids), -1, np.int64)
    rows = np.flatnonzero(want)
    if ids_json is not None and len(rows) == len(ids) and ids_json == vec_text:
        place[rows] = vec_slot   # the same ids, in the same order
        return place
    try:
        vec_ids = np.array(orjson.loads(vec_text), dtype=object)
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return None
    if len(vec_ids) != len(vec_rowid):
        return None
    mine = ids[rows]
    if len(vec_ids) == len(rows) and (vec_ids == mine).all():
        place[rows] = vec_slot   # the index was filled in the order the memories were
        return place
    where = dict(zip(vec_ids.tolist(), vec_slot.tolist()))
    place[rows] = np.fromiter((where.get(m, -1) for m in mine.tolist()), np.int64, count=len(rows))
    return place


def _copy_runs(conn, table, rows, slots, size, blob_rowid, nbytes, out) -> None:
    """out[rows] = the vectors at `slots`, read from the chunk blobs in runs of consecutive slots
    that land on consecutive rows (a store's vectors are mostly one run per chunk)."""
    if len(rows) == 0:
        return
    order = np.argsort(slots, kind="stable")
    rows, slots = rows[order], slots[order]
    chunk = slots // size
    brk = np.flatnonzero((np.diff(slots) != 1) | (np.diff(rows) != 1) | (np.diff(chunk) != 0)) + 1
    starts = np.concatenate(([0], brk))
    ends = np.concatenate((brk, [len(rows)]))
    flat = memoryview(out).cast("B")
    blob, open_chunk = None, -1
    try:
        for s, e in zip(starts.tolist(), ends.tolist()):
            c = int(chunk[s])
            if c != open_chunk:
                cid = int(blob_rowid[c])
                if blob is None:
                    blob = conn.blob_open("main", f"{table}_vector_chunks00", "vectors", cid, False)
                else:
                    blob.reopen(cid)
                if blob.length() != size * nbytes:
                    raise ValueError("a vector chunk of another size")
                open_chunk = c
            blob.seek(int(slots[s] - c * size) * nbytes)
            blob.read_into(flat, int(rows[s]) * nbytes, (e - s) * nbytes)
    finally:
        if blob is not None:
            blob.close()


def _copy_rows(conn, rowid, rows, nbytes, out) -> None:
    """out[rows] read from memories.embedding one blob each (the few the index lacks)."""
    if len(rows) == 0:
        return
    flat = memoryview(out).cast("B")
    blob = None
    try:
        for i in rows.tolist():
            if blob is None:
                blob = conn.blob_open("main", "memories", "embedding", int(rowid[i]), False)
            else:
                blob.reopen(int(rowid[i]))
            if blob.length() != nbytes:
                raise ValueError("an embedding changed size")
            blob.read_into(flat, i * nbytes, nbytes)
    finally:
        if blob is not None:
            blob.close()


def _sample_agrees(conn, rowid, rows, nbytes, out) -> bool:
    """The vectors read equal memories.embedding, byte for byte, on SAMPLE rows spread over the
    store and on its newest rows (where an agent's latest writes are)."""
    pick = np.unique(np.concatenate((rows[np.linspace(0, len(rows) - 1, min(SAMPLE, len(rows))).astype(np.int64)],
                                     rows[-min(SAMPLE // 4, len(rows)):])))
    at = dict(zip(rowid[pick].tolist(), pick.tolist()))
    seen = 0
    for rid, blob in conn.execute("SELECT rowid, embedding FROM memories WHERE rowid IN (SELECT value FROM json_each(?))",
                                  (orjson.dumps(list(at)).decode(),)):
        if not isinstance(blob, bytes) or blob != out[at[rid]].tobytes():
            return False
        seen += 1
    return seen == len(at)
