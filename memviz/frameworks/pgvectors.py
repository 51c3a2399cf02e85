"""PostgreSQL access shared by the systems that keep their memories there (mem0, HTM, Letta,
LangGraph): one connection per source, reused between the live window's polls; pgvector columns
read in binary (parsing 100k vectors as text would take seconds) and converted a batch at a time
to the float32 bytes the mirror writes; a large read fetched a batch ahead of its mapping."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from ..background import read_ahead
from ..store.postgres.connect import connect, register_vector, vector_oid


class PgSourceConnection:
    """A source's autocommit connection, opened on first use and again after it broke (the
    server restarted): a poll must not fail forever on a connection that died once."""

    def __init__(self, dsn: str):
        self.dsn = dsn
        self._conn = None
        self._lock = threading.Lock()

    def get(self):
        with self._lock:
            if self._conn is None or self._conn.closed or self._conn.broken:
                self._conn = connect(self.dsn, need_vector=False)
                register_vector(self._conn)
            return self._conn

    @contextmanager
    def snapshot(self):
        """The connection inside one REPEATABLE READ transaction: what it reads is one snapshot
        (a source's row versions and the check of them against a sync's token)."""
        conn = self.get()
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def vector_cursor(conn, name: str | None = None):
    """A binary cursor that hands `vector` values over as raw bytes (see `vector_of`); `name`: a
    server-side cursor of that name (inside a transaction)."""
    from psycopg.adapt import Loader
    from psycopg.pq import Format

    class Raw(Loader):
        format = Format.BINARY

        def load(self, data):
            return bytes(data)

    cur = conn.cursor(name, binary=True) if name else conn.cursor(binary=True)
    oid = vector_oid(conn)
    if oid is not None:
        cur.adapters.register_loader(oid, Raw)
    return cur


def fetch_ahead(conn, sql: str, params=(), *, size: int = 5000, before=None) -> Iterator:
    """The rows of `sql` (vectors as raw bytes, see vector_cursor) in lists of `size`, fetched
    through a server-side cursor by a thread a list ahead of the caller: the server finds and
    sends (and detoasts) the next rows while the caller maps these, where one fetch of everything
    first left the server and the client waiting on each other. psycopg waits without the GIL.
    `conn` (autocommit) is the thread's until the rows are read: one transaction holds the cursor.
    `before`: fn(conn) run first, in a REPEATABLE READ transaction that the rows are then read in
    (what it reads and the rows are of one snapshot); its result is the first thing yielded."""
    def fetch():
        with conn.transaction():
            if before is not None:
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield before(conn)
            cur = vector_cursor(conn, "memviz_fetch_ahead")
            try:
                cur.execute(sql, params)
                while rows := cur.fetchmany(size):
                    yield rows
            finally:
                cur.close()
    for [rows] in read_ahead(fetch, 1, "memviz-pg-fetch", depth=2):
        yield rows


def vector_of(raw: bytes | None, dim: int | None = None) -> np.ndarray | None:
    """pgvector's binary form (int16 dim, int16 unused, big-endian float4s) as float32; the
    first `dim` values when a store pads its vectors to a fixed column width."""
    if raw is None:
        return None
    n = int.from_bytes(raw[:2], "big")
    if dim is not None:
        n = min(n, dim)
    return np.frombuffer(raw, dtype=">f4", count=n, offset=4).astype(np.float32)


def vectors_as_bytes(raws, dims=None) -> list[bytes | None]:
    """[vector_of(raw, dim) as little-endian float32 bytes] of a batch (records.normalize_many
    takes such bytes as they are): the vectors of one length converted together, not with numpy
    calls per row. `dims`: each row's `dim` for vector_of, or None."""
    if dims is None and raws and None not in raws and len(set(map(len, raws))) == 1:
        flat = _one_size(raws)  # the usual batch: every vector of one size, each whole
        if flat is not None:
            step = len(raws[0]) - 4
            return [flat[k:k + step] for k in range(0, len(flat), step)]
    out: list[bytes | None] = [None] * len(raws)
    groups: dict[tuple[int, int], list[int]] = {}
    for i, raw in enumerate(raws):
        if raw is None:
            continue
        d = dims[i] if dims is not None else None
        n = int.from_bytes(raw[:2], "big")
        if len(raw) != 4 + 4 * n or (d is not None and d < 1):  # not the usual form: as vector_of reads it
            out[i] = vector_of(raw, d).astype("<f4").tobytes()
        else:
            groups.setdefault((n, n if d is None else min(n, d)), []).append(i)
    for (n, keep), at in groups.items():
        block = np.frombuffer(b"".join([raws[i] for i in at]), dtype=">f4").reshape(len(at), 1 + n)
        flat = block[:, 1:1 + keep].astype("<f4").tobytes()  # column 0: the header's 4 bytes
        step = 4 * keep
        for k, i in enumerate(at):
            out[i] = flat[k * step:(k + 1) * step]
    return out


def _one_size(raws) -> bytes | None:
    """The vectors of `raws` (all of one length) as little-endian float32 bytes joined, or None
    when a header does not say that length (not the usual form: vectors_as_bytes reads it)."""
    n = (len(raws[0]) - 4) // 4
    if n < 1 or len(raws[0]) != 4 + 4 * n:
        return None
    block = np.frombuffer(b"".join(raws), dtype=">f4").reshape(len(raws), 1 + n)
    if not (block[:, :1].view(">u4") == (n << 16)).all():  # int16 dim = n, int16 unused = 0
        return None
    return block[:, 1:].astype("<f4").tobytes()


def vector_param(vec) -> object:
    """A float vector as a parameter for a `vector` column (memviz's binary dumper)."""
    from ..store.postgres.connect import PgVector
    return PgVector(np.asarray(vec, dtype="<f4").tobytes())
