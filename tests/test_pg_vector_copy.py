"""The vectors' binary COPY decoded into one float32 matrix (store/postgres/vector_copy.py),
against a real server: bit-exact for any split of the stream into messages, odd dimensions,
rows without a vector, rows of another model or another dimension, and any estimate of the
rows; a damaged stream is refused with a clear error."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import unit_vectors
from pg_server import pg, pg_db  # noqa: F401 - fixtures

import memviz.store as ms
from memviz.store.errors import StoreError
from memviz.store.postgres import arrays as pg_arrays
from memviz.store.postgres.store import vector_bytes
from memviz.store.postgres.vector_copy import VectorCopy


@pytest.fixture
def store(pg_db):  # noqa: F811
    s = ms.create(pg_db)
    yield s
    s.close()


def _mixed(store):
    """Rows of 7 and 3 dimensions, two models of 7, some without a vector, a vector that is not
    unit length and one of extreme floats; returns {id: (model, float32 vector or None)}."""
    want = {}
    v7, v3, w7 = unit_vectors(40, 7, 1), unit_vectors(25, 3, 2), unit_vectors(10, 7, 3)
    v7[5] = np.float32([1e-30, -0.0, 0.25, 1.0000001, -2.5, 7.0, 3.0])  # not unit: normalized on read
    v7[6] = np.float32([1e-45, 0.6, 0.8, 1e-38, -0.0, 0.0, -1e-45])  # unit, with subnormals and signed zeros
    recs = []
    for i in range(40):
        recs.append((f"a7-{i}", "m", v7[i]))
        if i < 25:
            recs.append((f"b3-{i}", "s", v3[i]))  # a model keeps one dimension
        if i < 10:
            recs.append((f"c7-{i}", "other", w7[i]))
        if i % 9 == 0:
            recs.append((f"none-{i}", None, None))
    store.insert_memories([{"id": mid, "kind": "fact", "agent": "a", "content": mid, "embedding": v,
                            "embedding_model": model, "event_time": 1_700_000_000 + k} for k, (mid, model, v) in enumerate(recs)])
    for mid, model, v in recs:
        want[mid] = (model, v)
    return want


def _expected(a, want, model, dim):
    for i, mid in enumerate(a.ids):
        m, v = want[mid]
        if m == model and v is not None and len(v) == dim:
            assert a.has_embedding[i], mid
            if abs(float(v @ v) - 1) > 1e-6:  # scaled to unit length, as the SQLite store does
                assert np.allclose(a.embedding[i], v / np.linalg.norm(v.astype(np.float64)), rtol=1e-6, atol=0), mid
            else:
                assert a.embedding[i].tobytes() == v.tobytes(), mid
        else:
            assert not a.has_embedding[i] and not a.embedding[i].any(), mid


@pytest.fixture(params=["scan order", "rowid index order"])
def order(request, monkeypatch):
    """Both ways the vectors come: narrow ones in the scan's order, wide ones in the index's."""
    monkeypatch.setattr(pg_arrays, "_INDEX_ORDER_DIM", 10**6 if request.param == "scan order" else 1)


def test_every_model_and_dimension_reads_bit_exact(store, order):
    want = _mixed(store)
    for model, dim in (("m", 7), ("s", 3), ("other", 7)):
        a = store.arrays(model=model)
        assert a.embedding_model == model and a.embedding.shape == (len(want), dim) and a.embedding.dtype == np.float32
        assert list(a.rowid) == sorted(a.rowid)
        _expected(a, want, model, dim)
        some = [int(r) for r in a.rowid[::4]]  # a live refresh's read of a few rows
        part = store.arrays_of(some, model, dim)
        assert list(part.ids) == list(a.ids[::4])
        assert part.embedding.tobytes() == a.embedding[::4].tobytes()


def test_rows_moved_by_edits_still_land_on_their_rows(store, order):
    want = _mixed(store)
    for mid in ("a7-3", "a7-30", "b3-1"):  # new row versions: the heap's order is not rowid's
        store.update_fields(mid, {"content": "edited " * 200})
    _expected(store.arrays(model="m"), want, "m", 7)


def _stream(store, dim):
    """The server's own COPY stream of (rowid, vector) rows, as its messages."""
    with store.conn.cursor().copy(f"COPY (SELECT rowid::int8, embedding_{dim} FROM memories WHERE embedding_{dim} "
                                  "IS NOT NULL) TO STDOUT (FORMAT BINARY)") as cp:
        return [bytes(m) for m in cp]


def _decode(messages, dim, hint):
    ids, blocks = VectorCopy(dim, hint).read(messages)
    return ids, np.concatenate(blocks)


def test_any_split_of_the_stream_and_any_estimate_give_the_same_matrix(store):
    _mixed(store)
    messages = _stream(store, 7)
    rows = {int(r): vector_bytes(v) for r, v in store.conn.execute(  # each row's own read (store.get's)
        "SELECT rowid, vector_send(embedding_7) FROM memories WHERE embedding_7 IS NOT NULL").fetchall()}
    ids, matrix = _decode(messages, 7, len(rows))
    assert sorted(ids.tolist()) == sorted(rows) and matrix.shape == (len(rows), 7)
    for r, v in zip(ids.tolist(), matrix):
        assert v.tobytes() == rows[r]
    whole = b"".join(messages)
    rng = np.random.default_rng(0)
    cuts = sorted(set(rng.integers(1, len(whole), 60).tolist()))
    for split in ([whole], [whole[i:i + 1] for i in range(len(whole))], [whole[a:b] for a, b in
                                                                         zip([0] + cuts, cuts + [len(whole)])]):
        for hint in (0, 1, 5, len(rows), 10 * len(rows)):
            got_ids, got = _decode(split, 7, hint)
            assert np.array_equal(got_ids, ids) and got.tobytes() == matrix.tobytes()


def test_a_damaged_or_cut_stream_is_refused(store):
    _mixed(store)
    whole = b"".join(_stream(store, 3))
    second = 19 + 22 + 4 * 3  # header, then rows of 22 bytes and the floats
    for bad in (b"PGCOPZ" + whole[6:], whole[:-2], whole[:-30],  # signature, no trailer, cut mid-row
                whole[:second] + b"\x00\x03" + whole[second + 2:]):  # the second row's field count
        with pytest.raises(StoreError, match="binary COPY of the vectors"):
            _decode([bad], 3, 10)
    with pytest.raises(StoreError):  # a 3-d stream read as 7-d
        _decode([whole], 7, 10)


def test_a_whole_read_keeps_room_for_a_live_refresh_and_a_read_of_rows_does_not(store):
    # the matrix the arrays keep has the spare rows store.arrays.ROOM gives (a live refresh appends
    # into them, session/buffers.py); the vector COPY's own margin alone made the first refreshes copy it
    from memviz.session.buffers import spare
    from memviz.store.arrays import ROOM
    n = 2000
    v = unit_vectors(n, 5, 4)
    store.insert_memories([{"id": f"m{i}", "kind": "fact", "agent": "a", "content": f"m{i}", "embedding": v[i],
                            "embedding_model": "m", "event_time": 1_700_000_000 + i} for i in range(n)])
    store.conn.execute("ANALYZE memories")  # the planner's estimate right: the COPY's matrix is the one kept
    store.conn.commit()
    a = store.arrays()
    assert a.embedding.tobytes() == v.tobytes()
    assert spare(a.embedding) >= int(n * ROOM)
    some = store.arrays_of([int(r) for r in a.rowid[:7]], "m", 5)
    assert some.embedding.tobytes() == v[:7].tobytes() and spare(some.embedding) <= 64


def test_prefault_leaves_what_is_written_alone_even_while_it_is_written():
    import sys
    import threading

    from memviz.store.postgres.vector_copy import prefault
    block = np.empty((20_000, 1536), np.float32)  # 123 MB, fresh pages
    block[:5] = 7.0
    writer = threading.Thread(target=lambda: block[5:10_000].fill(3.0))  # the decoder, meanwhile
    writer.start()
    done = prefault(block)
    writer.join()
    assert done == sys.platform.startswith("linux")  # elsewhere a no-op that says so
    assert (block[:5] == 7.0).all() and (block[5:10_000] == 3.0).all()
    assert prefault(block[:0]) is False  # nothing to fault in
