"""The embedding matrix read from vec0's chunk blobs (store/vec_chunks.py) equals the one read
row by row from memories.embedding, bit for bit, whatever holes, reorderings and gaps the store's
history left in the index; and where the index cannot be trusted, the rows are read instead."""
import uuid

import numpy as np
import orjson
import pytest
from conftest import SCANS, assert_same_arrays, scan_as, unit_vectors

from memviz.store import arrays as A
from memviz.store import vec_chunks
from memviz.store.vectors import vec_ddl, vec_table

DIM = 8
N = 2600   # vec0 keeps 1024 vectors a chunk: three chunks, the last one partly filled


def _fill(store, n=N, start=0, model="m", dim=DIM, seed=0):
    vecs = unit_vectors(n, dim, seed)
    store.insert_memories([{"id": f"{model}-{start + i}", "kind": "episode", "content": f"memory {start + i}",
                            "event_time": 1000 + i, "embedding": vecs[i], "embedding_model": model}
                           for i in range(n)], audit=False)


def _by_index(store, nbytes=4 * DIM):
    """(read_from_index's answer, its matrix, the row-by-row matrix) over the rows with a blob of nbytes."""
    conn = store.conn
    rowid, ids, size = (np.array(x) for x in zip(*conn.execute(
        "SELECT rowid, id, coalesce(length(embedding), -1) FROM memories ORDER BY rowid")))
    ids = ids.astype(object)
    want = size == nbytes
    out = np.zeros((len(rowid), nbytes // 4), np.float32)
    with A.one_read(conn):
        ok = vec_chunks.read_from_index(conn, ids, rowid, want, nbytes, out)
        rows = A._read_vectors(conn, rowid, size, want, nbytes)  # no ids: memories.embedding, row by row
    return ok, out, rows


def _exact(store):
    """Store.arrays() (the chunk path) against the row-by-row scan, every field, the matrix bit for bit."""
    fast, slow = store.arrays(), A.load_arrays(store.conn, in_sqlite=False)
    assert_same_arrays(fast, slow)
    assert fast.embedding.tobytes() == slow.embedding.tobytes()
    return fast


def test_chunks_equal_rows_bit_for_bit_on_a_fresh_store(store):
    _fill(store)
    ok, out, rows = _by_index(store)
    assert ok and out.tobytes() == rows.tobytes() and out.any(axis=1).all()
    _exact(store)


def test_holes_and_reorderings_left_by_updates_and_deletes(store):
    _fill(store)
    new = unit_vectors(300, DIM, seed=9)
    with store.transaction() as c:
        # re-embedding: vec0 deletes the old slot (a hole) and appends the row at the end (out of order)
        for k, i in enumerate(range(5, N, 9)):
            c.execute("UPDATE memories SET embedding = ? WHERE id = ?", (new[k % 300].astype("<f4").tobytes(), f"m-{i}"))
        c.execute("DELETE FROM memories WHERE id IN ('m-0', 'm-1023', 'm-1024', 'm-2000')")  # physical deletes: holes
        c.execute("UPDATE memories SET embedding = NULL WHERE id = 'm-7'")                  # a vector removed
        c.execute("UPDATE memories SET valid_until = 5 WHERE id = 'm-8'")                   # retired: still shown
        c.execute("UPDATE memories SET embedding = CAST(X'00000080' || substr(embedding, 5) AS BLOB) WHERE id = 'm-9'")  # -0.0 kept
    ok, out, rows = _by_index(store)
    assert ok and out.tobytes() == rows.tobytes()
    a = _exact(store)
    assert not a.has_embedding[a.index_of("m-7")] and a.embedding[a.index_of("m-14")].tobytes() == new[1].tobytes()


def test_other_models_other_dimensions_and_rows_without_vectors(store):
    _fill(store, 1500)
    _fill(store, 700, start=5000, model="other", seed=3)          # the same dimension, another model
    _fill(store, 40, start=9000, model="wide", dim=12, seed=4)    # another dimension, its own vec0 table
    store.insert_memories([{"id": "plain", "kind": "fact", "content": "no vector"}])
    ok, out, rows = _by_index(store)
    assert ok and out.tobytes() == rows.tobytes()
    a = _exact(store)
    assert a.embedding_model == "m" and a.has_embedding.sum() == 1500


def test_vectors_written_before_their_table_are_read_from_their_rows(store):
    # an agent's plain SQL wrote 16-d vectors; memviz made the vec0 table later (without them)
    vecs = unit_vectors(50, 16, 5)
    insert = ("INSERT INTO memories(id, kind, content, event_time, created_at, embedding, embedding_model) "
              "VALUES (?, 'fact', 'x', 1, 1, ?, 'w')")
    with store.transaction() as c:
        for i in range(50):
            c.execute(insert, (f"w-{i}", vecs[i].astype("<f4").tobytes()))
        for sql in vec_ddl(16):
            c.execute(sql)
        c.execute(insert, ("w-new", vecs[0].astype("<f4").tobytes()))
    assert store.conn.execute(f"SELECT count(*) FROM {vec_table(16)}").fetchone()[0] == 1
    ok, out, rows = _by_index(store, 64)
    assert ok and out.tobytes() == rows.tobytes()
    _exact(store)


def test_an_index_without_memviz_triggers_is_not_used(store):
    _fill(store, 1200)
    with store.transaction() as c:
        c.execute(f"DROP TRIGGER {vec_table(DIM)}_au")  # updates no longer reach it
        c.execute("UPDATE memories SET embedding = ? WHERE id = 'm-3'", (unit_vectors(1, DIM, 7)[0].tobytes(),))
    ok, _, _ = _by_index(store)
    assert not ok
    _exact(store)


@pytest.mark.parametrize("row", ["m-0", "m-1199"])
def test_a_stale_vector_in_the_sample_makes_the_rows_read(store, row):
    # the index out of step with a row (triggers recreated after a write that bypassed them):
    # the sample (spread over the store, and the newest rows) finds it
    _fill(store, 1200)
    with store.transaction() as c:
        c.execute(f"DROP TRIGGER {vec_table(DIM)}_au")
        c.execute("UPDATE memories SET embedding = ? WHERE id = ?", (unit_vectors(1, DIM, 7)[0].tobytes(), row))
        c.execute(vec_ddl(DIM)[3])
    ok, _, _ = _by_index(store)
    assert not ok
    assert _exact(store).embedding[store.arrays().index_of(row)].tobytes() == unit_vectors(1, DIM, 7)[0].tobytes()


@pytest.fixture
def beside(monkeypatch):
    """The reads of a whole store split over two connections at any size (second_read.py: the rows
    after the split and the chunks read beside the scan); the matrices place_read made, listed."""
    monkeypatch.setattr(A, "_SPLIT_FROM", 0)
    made = []

    def place(*args, **kw):
        out = vec_chunks.place_read(*args, **kw)
        made.append(out)
        return out
    monkeypatch.setattr(A, "place_read", place)
    return made


@pytest.mark.parametrize("case", ["fresh", "rewritten", "no-vector-first", "both"])
def test_chunks_read_beside_the_scan_equal_the_rows(store, beside, case):
    # each row's slot at it (fresh), after it (vectors rewritten: appended to the index), before it
    # (memories without vectors first), or both (a new matrix): moved in place or gathered
    if case in ("no-vector-first", "both"):
        store.insert_memories([{"id": f"plain-{i}", "kind": "fact", "content": "no vector"} for i in range(30)])
    _fill(store)
    if case in ("rewritten", "both"):
        new = unit_vectors(40, DIM, seed=11)
        with store.transaction() as c:
            for k in range(40):
                c.execute("UPDATE memories SET embedding = ? WHERE id = ?", (new[k].astype("<f4").tobytes(), f"m-{k * 50}"))
    a = _exact(store)
    assert len(beside) == 1 and beside[0] is not None and a.has_embedding.sum() == N
    room = beside[0].base is not None and len(beside[0].base) >= len(a) + A.spare_rows(len(a))
    assert room and not beside[0].base[len(a):].any()   # spare rows (a live refresh's) that hold nothing


def test_a_commit_between_the_two_reads_beginnings_is_seen(store, store_path):
    # the second connection would see a state the caller's does not: it is not used
    import apsw

    from memviz.store.second_read import read_beside, second_reader
    _fill(store, 10)
    second = second_reader(store.conn)
    assert second is not None
    other = apsw.Connection(str(store_path))
    other.execute("UPDATE memories SET importance = 9 WHERE id = 'm-1'")
    other.close()
    with A.one_read(store.conn):
        store.conn.execute("SELECT 1 FROM memories LIMIT 1").fetchall()
        assert read_beside(store.conn, second, lambda c: 1) is None
    second = second_reader(store.conn)
    with A.one_read(store.conn):
        store.conn.execute("SELECT 1 FROM memories LIMIT 1").fetchall()
        got = read_beside(store.conn, second, lambda c: c.execute("SELECT importance FROM memories WHERE id = 'm-1'")
                          .fetchone()[0])
        assert got is not None and got.result() == 9


@pytest.mark.parametrize("scan", SCANS)
def test_a_store_of_uuid_ids_places_its_vectors_without_parsing_an_id(store, beside, monkeypatch, scan):
    # vec0 lists its ids in the order its rows were added, the memories' own: the two lists are
    # compared as text, even where the ids' own order is another (uuids, memviz's ids)
    ids = [uuid.uuid4().hex for _ in range(60)]
    vecs = unit_vectors(60, DIM, 5)
    store.insert_memories([{"id": m, "kind": "fact", "content": f"memory {k}", "embedding": vecs[k],
                            "embedding_model": "m"} for k, m in enumerate(ids)])
    scan_as(scan, store.conn, monkeypatch)

    class NoParse:   # orjson as vec_chunks uses it, but parsing the index's ids fails the test
        JSONDecodeError = orjson.JSONDecodeError
        dumps = staticmethod(orjson.dumps)

        @staticmethod
        def loads(_text):
            raise AssertionError("the index's ids were parsed")
    monkeypatch.setattr(vec_chunks, "orjson", NoParse)
    a = store.arrays()
    assert beside and beside[-1] is not None   # placed from the chunks
    assert list(a.ids) == ids and np.array_equal(a.embedding[:60], vecs)
