"""frameworks/pgvectors.py: pgvector's binary vectors converted a batch at a time (the same
values vector_of gives one by one), and the rows of a query fetched a batch ahead of the caller
through a server-side cursor on a real PostgreSQL, whose connection is left as it was found."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from pg_server import pg, pg_db  # noqa: F401 - fixtures

from memviz.frameworks.pgvectors import PgSourceConnection, fetch_ahead, vector_of, vectors_as_bytes


def _sent(values) -> bytes:
    """pgvector's binary form: int16 dim, int16 unused, big-endian float4s."""
    return struct.pack(">hh", len(values), 0) + np.asarray(values, dtype=">f4").tobytes()


def test_a_batch_of_vectors_is_what_vector_of_gives_each():
    rng = np.random.default_rng(1)
    raws = [_sent(rng.normal(size=3)), None, _sent(rng.normal(size=3)), _sent([1.5]), _sent(rng.normal(size=5)),
            b"\x00\x02\x00\x00" + np.arange(3, dtype=">f4").tobytes()]  # longer than its header says
    for dims in (None, [2, None, 9, 1, 3, None], [1, 1, 1, 1, 1, 1]):
        got = vectors_as_bytes(raws, dims)
        for i, raw in enumerate(raws):
            want = None if raw is None else vector_of(raw, dims[i] if dims else None).astype("<f4").tobytes()
            assert got[i] == want, (dims, i)
            assert got[i] is None or type(got[i]) is bytes


def test_a_batch_of_one_size_is_what_vector_of_gives_each():
    """The one-size batch converts in one piece, unless a header does not say that size (then
    each row as vector_of reads it); a length that is no vector is an error either way."""
    rng = np.random.default_rng(2)
    same = [_sent(rng.normal(size=4)) for _ in range(5)]
    odd = list(same)
    odd[2] = b"\x00\x03\x00\x00" + odd[2][4:]   # says 3 values in the bytes of 4
    for raws in (same, odd):
        assert vectors_as_bytes(raws) == [vector_of(r).astype("<f4").tobytes() for r in raws]
    with pytest.raises(ValueError):
        vectors_as_bytes([b"", b""])


@pytest.fixture
def conn(pg_db):  # noqa: F811
    db = PgSourceConnection(pg_db)
    c = db.get()
    c.execute("CREATE EXTENSION IF NOT EXISTS vector")
    c.execute("CREATE TABLE t (i int, v vector(3))")
    c.execute("INSERT INTO t SELECT i, ARRAY[i, -i, 0.5]::real[]::vector FROM generate_series(1, 12000) i")
    db.close()
    c = db.get()  # a new connection: the vector type registered
    yield c
    db.close()


def test_rows_arrive_in_batches_with_raw_vectors_and_the_connection_is_left_idle(conn):
    batches = list(fetch_ahead(conn, "SELECT i, v FROM t WHERE i > %s ORDER BY i", (2,), size=5000))
    assert [len(b) for b in batches] == [5000, 5000, 1998]
    first = batches[0][0]
    assert first[0] == 3 and np.array_equal(vector_of(first[1]), np.array([3, -3, 0.5], np.float32))
    assert conn.info.transaction_status.name == "IDLE"
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 12000


def test_a_read_stopped_early_ends_its_transaction(conn):
    rows = fetch_ahead(conn, "SELECT i, v FROM t ORDER BY i", size=1000)
    assert len(next(rows)) == 1000
    rows.close()  # the caller stops (an error, a cancel): the thread stops and its transaction ends
    import time
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if conn.info.transaction_status.name == "IDLE":
            break
        time.sleep(0.05)
    assert conn.info.transaction_status.name == "IDLE"
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 12000


def test_an_error_of_the_query_reaches_the_caller(conn):
    import psycopg
    with pytest.raises(psycopg.errors.UndefinedColumn):
        list(fetch_ahead(conn, "SELECT nope FROM t"))
    assert conn.execute("SELECT 1").fetchone()[0] == 1


def test_what_before_reads_and_the_rows_are_of_one_snapshot(conn, pg_db):  # noqa: F811
    """`before` runs first, in the transaction the rows are then read in (REPEATABLE READ): a row
    committed by an agent in between is in neither."""
    import psycopg

    def before(c):
        n = c.execute("SELECT count(*) FROM t").fetchone()[0]
        with psycopg.connect(pg_db, autocommit=True) as agent:
            agent.execute("INSERT INTO t VALUES (-1, '[0,0,1]')")
        return n
    got = fetch_ahead(conn, "SELECT i FROM t", size=5000, before=before)
    counted = next(got)
    rows = [r for batch in got for r in batch]
    assert counted == len(rows) == 12000 and (-1,) not in rows
    assert conn.info.transaction_status.name == "IDLE"
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 12001
