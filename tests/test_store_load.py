"""The one-scan `Store.arrays()` and the batch-insert fast paths (bench/store.py measures them)."""
import numpy as np
import pytest
from conftest import SCANS, assert_same_arrays, scan_as, unit_vectors

import memviz.store as ms


def _recs(n, model, dim, start=0, scale=1.0, seed=0):
    vecs = unit_vectors(n, dim, seed) * scale
    return [{"id": f"{model}-{start + i}", "kind": "episode", "content": f"memory {start + i}", "event_time": 1000 + i,
             "embedding": vecs[i], "embedding_model": model} for i in range(n)]


def test_arrays_pick_the_most_used_model_or_the_one_asked_for(store):
    store.insert_memories(_recs(3, "small", 4) + _recs(5, "big", 8, scale=3.0))
    store.insert_memories([{"id": "plain", "kind": "fact", "content": "no vector"}])
    a = store.arrays()
    assert a.embedding_model == "big" and a.embedding.shape == (9, 8)
    assert a.has_embedding.tolist() == [False] * 3 + [True] * 5 + [False]
    np.testing.assert_allclose(np.linalg.norm(a.embedding[a.has_embedding], axis=1), 1.0, atol=1e-6)
    assert not a.embedding[~a.has_embedding].any()
    s = store.arrays("small")
    assert s.embedding_model == "small" and s.embedding.shape == (9, 4) and s.has_embedding.sum() == 3
    np.testing.assert_allclose(s.embedding[:3], unit_vectors(3, 4, 0), atol=1e-6)
    none = store.arrays("missing")
    assert none.embedding.shape == (9, 0) and not none.has_embedding.any()
    assert (store.main_model()[0], store.main_model()[1]) == (a.embedding_model, a.dim)


def test_arrays_of_an_empty_store(store):
    a = store.arrays()
    assert len(a) == 0 and a.embedding_model is None and a.embedding.shape == (0, 0)


def test_text_columns_decode_in_bulk_and_flag_bad_utf8(store):
    store.insert_memories(_recs(4, "m", 4))
    with store.transaction() as c:
        c.execute("UPDATE memories SET agent = CAST(X'61FF62' AS TEXT) WHERE id = 'm-1'")
        c.execute("UPDATE memories SET kind = 'ep' || char(0) || 'x' WHERE id = 'm-2'")  # a NUL inside text
    a = store.arrays()
    assert a.bad_text.tolist() == [False, True, False, False]
    assert a.agent[1] == "a\ufffdb" and a.kind[2] == "ep\x00x" and a.ids.tolist() == [f"m-{i}" for i in range(4)]


def test_batches_check_the_dimension_already_used_by_a_model(store):
    store.insert_memories(_recs(3, "m", 4))
    with pytest.raises(ms.ValidationError, match="4"):
        store.insert_memories(_recs(2, "m", 6, start=10))
    store.insert_memories(_recs(2, "other", 6, start=10))  # a new model may use another dimension
    assert {(m, d) for m, d, _ in store.embedding_models()} == {("m", 4), ("other", 6)}


def test_float32_and_list_vectors_store_the_same_bytes(store):
    v = unit_vectors(1, 8, 3)[0]
    store.insert_memories([{"id": "a", "kind": "fact", "content": "x", "embedding": v, "embedding_model": "m"},
                           {"id": "b", "kind": "fact", "content": "y", "embedding": v.tolist(), "embedding_model": "m"}])
    blobs = [b for (b,) in store.conn.execute("SELECT embedding FROM memories ORDER BY id")]
    assert blobs[0] == blobs[1] == v.astype("<f4").tobytes()
    with pytest.raises(ms.ValidationError, match="NaN"):
        store.insert_memories([{"kind": "fact", "content": "z", "embedding": np.full(8, np.nan, np.float32),
                                "embedding_model": "m"}])


def test_empty_json_values_are_stored_canonically_and_checked(store):
    store.insert_memories([{"id": "e", "kind": "fact", "content": "x", "tags": (), "source_ids": [], "attributes": {}}])
    assert store.conn.execute("SELECT source_ids, entity_ids, tags, attributes FROM memories").fetchone() == ("[]", "[]", "[]", "{}")
    with pytest.raises(ms.ValidationError, match="list"):
        store.insert_memories([{"kind": "fact", "content": "x", "tags": {}}])
    with pytest.raises(ms.ValidationError, match="object"):
        store.insert_memories([{"kind": "fact", "content": "x", "attributes": []}])


@pytest.mark.parametrize("scan", SCANS)
def test_the_in_sqlite_scan_equals_the_row_by_row_scan(store, monkeypatch, scan):
    # the fast path (everything aggregated inside SQLite) and the exact one must agree on every
    # column of an awkward store; when the fast path cannot (bad UTF-8 above) the exact one runs.
    # through the read index, the table, or the table on two connections (previews joined by NUL)
    from memviz.store import arrays as A
    scan_as(scan, store.conn, monkeypatch)

    store.insert_memories(_recs(6, "big", 8, scale=2.0) + _recs(3, "small", 4, start=100))
    store.insert_memories([{"id": "plain", "kind": "fact", "content": "line\nbreak\ttab " * 30},
                           {"id": "gone", "kind": "episode", "content": "retired", "valid_until": 5.5,
                            "importance": 2.25, "confidence": 0.123456789012345}])
    with store.transaction() as c:
        c.execute("UPDATE memories SET attributes = '{not json' WHERE id = 'big-1'")
        c.execute("UPDATE memories SET importance = '7', agent = '', kind = '' WHERE id = 'big-2'")
        c.execute("UPDATE memories SET content = 'nul' || char(0) || 'inside' WHERE id = 'big-3'")
        c.execute("UPDATE memories SET content = 'last' || char(0) || 'row' WHERE id = 'gone'")   # after a split too
    fast = _fast_scan(store.conn, 40)
    assert fast is not None
    a = A.load_arrays(store.conn, preview=40)
    assert_same_arrays(a, A.load_arrays(store.conn, preview=40, in_sqlite=False))
    assert a.bad_json.tolist()[1] and a.importance[2] == 7.0 and a.agent[2] == ""
    assert a.confidence[-1] == 0.123456789012345 and a.preview[-2].startswith("line break tab")
    assert a.preview[-1].startswith("last") and a.preview[3].startswith("nul")   # each row's own, NUL or not
    assert a.embedding_model == "big" and a.has_embedding.sum() == 6


def test_the_vectors_read_beside_the_decoding_equal_the_row_by_row_scan(store):
    # the vectors of the most common size are read in a thread while the columns are decoded;
    # rows of that size but another model must come out as zeros
    from memviz.store import arrays as A

    store.insert_memories(_recs(6, "big", 8, scale=2.0) + _recs(3, "other", 8, start=100)
                          + _recs(2, "small", 4, start=200))
    a = A.load_arrays(store.conn)
    assert_same_arrays(a, A.load_arrays(store.conn, in_sqlite=False))
    assert a.embedding_model == "big" and a.has_embedding.sum() == 6
    assert not a.embedding[~a.has_embedding].any()
    small = A.load_arrays(store.conn, model="small")   # not the common size: read after the decoding
    assert small.has_embedding.sum() == 2 and small.dim == 4
    assert_same_arrays(small, A.load_arrays(store.conn, model="small", in_sqlite=False))


def test_text_in_any_time_or_number_column_is_found_by_the_in_sqlite_scan(store):
    # the aggregate reads times and numbers as stored: a string in the JSON (or infinity, or
    # milliseconds) sends the row through the row reader, as the row-by-row scan does
    from memviz.store import arrays as A

    store.insert_memories(_recs(12, "m", 4))
    odd = {"importance": "'very high'", "event_time": "'2026-03-01T12:00:00Z'", "created_at": "'yesterday'",
           "last_accessed": "'2026-03-02'", "valid_until": "'2026-03-03T00:00:00Z'", "confidence": "'0.5'",
           "decay_rate": "'fast'", "access_count": "'3'"}
    with store.transaction() as c:
        for k, (col, value) in enumerate(odd.items()):
            c.execute(f"UPDATE memories SET {col} = {value} WHERE id = 'm-{k}'")
        c.execute("UPDATE memories SET importance = 1e999, event_time = 1772366400000 WHERE id = 'm-9'")
    assert _fast_scan(store.conn, 0) is not None
    a = A.load_arrays(store.conn)
    assert_same_arrays(a, A.load_arrays(store.conn, in_sqlite=False))
    assert a.bad_value.tolist() == [True, False, True, False, False, False, True, False, False, True, False, False]
    assert a.event_time[1] == 1772366400.0 and a.event_time[9] == 1772366400.0 and a.confidence[5] == 0.5
    assert a.access_count[7] == 3 and not a.live[4]


def _fast_scan(conn, preview):
    """The in-SQLite scan alone, its early vector read let finish: that thread uses the same
    connection, and a next read beside it raised apsw's ThreadingViolationError (seen once in CI)."""
    from memviz.store import arrays as A
    c = A._scan_in_sqlite(conn, preview)
    if c is not None and c.get("settle"):
        c["settle"]()
    return c


@pytest.mark.parametrize("text", ["[]", "[1,2,3]", "[1.0,2.0,null]", "[6.05,1.0]", "[1.0e+20]", "[null,null]",
                                  "[-3.0,0.0,-0.0]", "[-10.0,5]", "[9.0e+999]", "[-9223372036854775808,null]",
                                  "[9223372036854775807,1]", "[1767225600,1767225660]"])
def test_numbers_parsed_by_numpy_equal_the_json_reader(text):
    # the scan's integer and whole-real columns skip a Python object per value; what they read is
    # what the JSON reader reads, sign of zero included, or they leave the column to it (None)
    import json

    from memviz.store import arrays as A
    want = np.asarray(json.loads(text), dtype=np.float64)
    got = A._numbers(text, len(want))
    assert got is None or (got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)
                           and np.array_equal(np.signbit(got), np.signbit(want)))
    if text in ("[1,2,3]", "[1.0,2.0,null]", "[null,null]", "[1767225600,1767225660]"):
        assert got is not None


@pytest.mark.parametrize("scan", SCANS)
def test_previews_joined_by_nul_equal_the_row_by_row_scan(store, monkeypatch, scan):
    # the previews come joined by NUL, not as JSON strings: the same lines, on one connection or two
    from memviz.store import arrays as A
    scan_as(scan, store.conn, monkeypatch)
    monkeypatch.setattr(A, "_PREVIEWS_JSON", "SELECT no_such_function()")   # the NUL fallback is not what runs
    store.insert_memories(_recs(5, "m", 4) + [
        {"id": "lines", "kind": "fact", "content": "first\r\nsecond\tthird " * 20},
        {"id": "wide", "kind": "fact", "content": "café ☕ 𝄞 " * 40}, {"id": "short", "kind": "fact", "content": "x"}])
    with store.transaction() as c:
        c.execute("UPDATE memories SET content = '' WHERE id = 'm-2'")
    with A.one_read(store.conn):
        fast = A._scan_in_sqlite(store.conn, 50)
        assert fast is not None
        fast["settle"]()
    slow = A.load_arrays(store.conn, preview=50, in_sqlite=False)
    assert list(fast["preview"]) == list(slow.preview)
    assert slow.preview[5] == ("first  second third " * 3)[:50] and slow.preview[2] == ""
    assert_same_arrays(A.load_arrays(store.conn, preview=50), slow)


def test_a_whole_read_scans_the_read_index_not_the_tables_rows(store, monkeypatch):
    # the rows hold their vectors: the read takes every other column from the read index (SQLite
    # uses it only where each of the query's expressions is one the index holds, as written)
    from memviz.store import arrays as A
    from memviz.store.schema import READ_INDEX
    store.insert_memories(_recs(30, "m", 8))
    plan = " ".join(r[3] for r in store.conn.execute("EXPLAIN QUERY PLAN " + A._SQL_AGG_INDEXED, ("m", 32)))
    assert plan == f"SCAN memories USING COVERING INDEX {READ_INDEX}"
    used = []
    scan = A._scan_indexed
    monkeypatch.setattr(A, "_scan_indexed", lambda *a: used.append(scan(*a)) or used[-1])
    a = store.arrays(preview=20)
    assert len(used) == 1 and used[0] is not None   # it read, and nothing fell back to another scan
    assert_same_arrays(a, A.load_arrays(store.conn, preview=20, in_sqlite=False))
    assert list(a.ids) == [f"m-{i}" for i in range(30)]   # in rowid order, whatever the index's
