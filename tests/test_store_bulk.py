"""The bulk load of a new, empty store (memviz/store/bulk.py), used by a framework mirror's first
build and by imports: the store it makes equals the one Store.insert_memories makes row by row
(rows, full-text and vector search, schema and triggers, `memviz check` clean), a bad batch or a
cancel writes nothing, and a store that already holds memories is refused."""
from __future__ import annotations

import numpy as np
import pytest

import memviz.store as ms
from memviz.store import StoreError, ValidationError
from memviz.store.bulk import bulk_load
from memviz.store.check import check_store
from memviz.store.schema import MEMORY_COLUMNS
from memviz.tasks import Cancelled


def _records(n=700, seed=0):
    rng = np.random.default_rng(seed)
    words = ["tea", "trains", "sea", "mountain", "café", "robot", "garden", "日本"]
    out = []
    for i in range(n):
        rec = {"id": f"m{i:04d}", "agent": f"agent{i % 3}", "kind": ["fact", "episode", "preference"][i % 3],
               "content": f"note {i} about {words[i % 8]} and {words[(i * 3) % 8]}", "created_at": 1_700_000_000 + i,
               "importance": float(i % 11), "tags": [words[i % 8]] if i % 2 else [],
               "attributes": {"step": i, "src": {"k": words[i % 5]}}}
        if i % 10 == 3:
            rec["valid_until"] = 1_700_100_000
        if i % 7 == 0:
            pass  # no embedding
        elif i % 5 == 0:
            rec.update(embedding=rng.normal(size=8).tolist(), embedding_model="small")  # a list: the per-row path
        else:
            rec.update(embedding=rng.normal(size=16).astype(np.float32), embedding_model="big")
        out.append(rec)
    return out


def _rows(store):
    return store.conn.execute(f"SELECT rowid, {', '.join(MEMORY_COLUMNS)} FROM memories ORDER BY rowid").fetchall()


def _schema(store):
    return store.conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()


def _per_row(path, records):
    store = ms.create(path)
    for i in range(0, len(records), 250):
        store.insert_memories(records[i:i + 250], audit=False)
    return store


def _bulk(path, records):
    store = ms.create(path)
    with bulk_load(store) as load:
        for i in range(0, len(records), 250):
            load.add(records[i:i + 250])
    return store


def test_bulk_load_equals_the_per_row_path(tmp_path):
    records = _records()
    a = _per_row(str(tmp_path / "a.db"), records)
    b = _bulk(str(tmp_path / "b.db"), records)
    ra, rb = _rows(a), _rows(b)
    assert len(rb) == len(records)
    # created_at defaults to the write time only when missing; every record here has one
    assert ra == rb
    assert _schema(a) == _schema(b)
    for q in ("tea", "trains sea", "café", "日本", "note 42"):
        assert a.fts_search(q, 50) == b.fts_search(q, 50) != []
    rng = np.random.default_rng(9)
    for dim in (8, 16):
        v = rng.normal(size=dim).astype(np.float32)
        assert a.vec_search(v, 20) == b.vec_search(v, 20) != []
    b_path = b.path
    a.close()
    b.close()
    again = ms.open_store(b_path)
    try:
        assert not again.read_only, again.read_only_reason
        report = check_store(again)
        assert report.clean, [f.describe() for f in report.findings]
        # the triggers are back: a later per-row write is indexed as usual
        again.insert_memories([{"id": "late", "kind": "fact", "content": "a zeppelin over the harbour",
                                "embedding": np.ones(16, np.float32), "embedding_model": "big"}])
        assert [i for i, _ in again.fts_search("zeppelin")] == ["late"]
        assert again.vec_search(np.ones(16, np.float32), 1)[0][0] == "late"
        assert check_store(again).clean
    finally:
        again.close()


def test_a_bad_batch_writes_nothing_of_itself(tmp_path):
    records = _records(60)
    store = ms.create(str(tmp_path / "s.db"))
    bad = dict(records[30], embedding=np.full(16, np.nan, np.float32), embedding_model="big")
    with bulk_load(store) as load:
        load.add(records[:20])
        with pytest.raises(ValidationError, match="m0030.*NaN"):
            load.add(records[20:30] + [bad] + records[31:40])
        with pytest.raises(ValidationError, match="already in the store"):
            load.add([records[5]] + records[40:45])  # a duplicate id: rolled back to the batch's start
        load.add(records[40:])
    ids = [r[0] for r in store.conn.execute("SELECT id FROM memories ORDER BY rowid")]
    assert ids == [r["id"] for r in records[:20] + records[40:]]
    assert store.fts_search("note 45")[0][0] == "m0045"
    assert check_store(store).clean
    store.close()


def test_a_cancelled_load_leaves_the_store_as_it_was(tmp_path):
    store = ms.create(str(tmp_path / "s.db"))
    before = _schema(store)
    with pytest.raises(Cancelled):
        with bulk_load(store) as load:
            load.add(_records(100))
            raise Cancelled()
    assert store.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 0
    assert _schema(store) == before  # the insert triggers dropped for the load are back
    store.insert_memories(_records(10))
    assert store.fts_search("note 4")[0][0] == "m0004"
    assert check_store(store).clean
    store.close()


def test_only_an_empty_store_is_bulk_loaded(tmp_path):
    store = ms.create(str(tmp_path / "s.db"))
    store.insert_memories(_records(3))
    with pytest.raises(StoreError, match="already holds memories"):
        with bulk_load(store) as load:
            load.add(_records(5, seed=1))
    assert store.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 3
    store.close()


def test_the_store_is_left_in_wal_mode(tmp_path):
    store = _bulk(str(tmp_path / "s.db"), _records(50))
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()


def _odd_records():
    """Values a batch carries through JSON (bulk._insert_batch) that must come back as bound."""
    texts = ["nul\x00inside", "line\nbreak\ttab\r", 'quote " and \\ back', "\u2028\u2029 é 日本 😀", "", "e-5 null 0.0000"]
    floats = [5e-324, 1e-7, 0.1, 9.999999999999998, 1.7976931348623157e308 / 1e298, 2.5e-5, -0.0, 7.0]
    out = []
    for i, f in enumerate(floats * 2):
        out.append({"id": f"odd{i}", "kind": "fact", "content": texts[i % len(texts)], "agent": texts[(i + 1) % len(texts)],
                    "importance": min(abs(f), 10.0), "confidence": f, "decay_rate": f / 3, "access_count": 2**63 - 1 - i,
                    "created_at": -86_400 * 365 * 40 + i, "last_accessed": 2**40 + i, "valid_until": None if i % 2 else 5,
                    "tags": [texts[i % len(texts)], "x"], "attributes": {"f": f, "tiny": 1e-9, "none": None, "s": texts[i % 3]},
                    "embedding": np.full(4, f if f else 1.0, np.float32), "embedding_model": "m"})
    return out


def test_a_batch_written_by_json_is_the_rows_the_per_row_path_binds(tmp_path):
    statements = []

    def traced(store):
        store.conn.exec_trace = lambda cursor, sql, bindings: statements.append(sql) or True
        return store
    records = _odd_records()
    a = _per_row(str(tmp_path / "a.db"), records)
    b = ms.create(str(tmp_path / "b.db"))
    with bulk_load(traced(b)) as load:
        load.add(records)
    assert any("jsonb_each" in s for s in statements)          # one statement for the batch
    assert not any(s.startswith("INSERT INTO memories (") and "VALUES" in s for s in statements)
    assert _rows(a) == _rows(b)
    assert [type(v) for v in _rows(b)[0]] == [type(v) for v in _rows(a)[0]]
    # what JSON cannot carry goes row by row, and is stored as bound too: an infinite confidence
    statements.clear()
    inf = [{**records[0], "id": "inf", "confidence": float("inf")}]
    c = _per_row(str(tmp_path / "c.db"), inf)
    d = ms.create(str(tmp_path / "d.db"))
    with bulk_load(traced(d)) as load:
        load.add(inf)
    assert not any("jsonb_each" in s for s in statements)
    assert _rows(c) == _rows(d) and _rows(d)[0][MEMORY_COLUMNS.index("confidence") + 1] == float("inf")
    for s in (a, b, c, d):
        s.conn.exec_trace = None
        s.close()
