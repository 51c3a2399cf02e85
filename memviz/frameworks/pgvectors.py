"""PostgreSQL access shared by the systems that keep their memories there (mem0, HTM): one
connection per source, reused between the live window's polls, and pgvector columns read in
binary (parsing 100k vectors as text would take seconds)."""
from __future__ import annotations

import threading

import numpy as np

from ..store.postgres.connect import _psycopg, connect, register_vector, vector_oid


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

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def vector_cursor(conn):
    """A binary cursor that hands `vector` values over as raw bytes (see `vector_of`)."""
    from psycopg.adapt import Loader
    from psycopg.pq import Format

    class Raw(Loader):
        format = Format.BINARY

        def load(self, data):
            return bytes(data)

    cur = conn.cursor(binary=True)
    oid = vector_oid(conn)
    if oid is not None:
        cur.adapters.register_loader(oid, Raw)
    return cur


def vector_of(raw: bytes | None, dim: int | None = None) -> np.ndarray | None:
    """pgvector's binary form (int16 dim, int16 unused, big-endian float4s) as float32; the
    first `dim` values when a store pads its vectors to a fixed column width."""
    if raw is None:
        return None
    n = int.from_bytes(raw[:2], "big")
    if dim is not None:
        n = min(n, dim)
    return np.frombuffer(raw, dtype=">f4", count=n, offset=4).astype(np.float32)


def vector_param(vec) -> object:
    """A float vector as a parameter for a `vector` column (memviz's binary dumper)."""
    from ..store.postgres.connect import PgVector
    return PgVector(np.asarray(vec, dtype="<f4").tobytes())


def is_pg_error(e: BaseException) -> bool:
    return isinstance(e, _psycopg().Error)
