"""The native store: schema, reads into arrays, audited writes, FTS and vectors kept in sync."""
import json
import os

import apsw
import numpy as np
import pytest

import memviz.store as ms
from memviz.store import schema
from memviz.store.connection import connect
from tests.conftest import assert_same_arrays, unit_vectors


def _records(n, dim=8, model="m", **extra):
    v = unit_vectors(n, dim)
    return [dict(kind="episode", content=f"memory number {i} about topic{i % 3}", embedding=v[i],
                 embedding_model=model, event_time=1_700_000_000 + 60 * i, importance=1 + i % 10, **extra)
            for i in range(n)]


def test_create_makes_native_schema_with_migrations_and_wal(store, store_path):
    assert store.report.kind == "native"
    assert store.report.version == schema.SCHEMA_VERSION
    names = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master")}
    assert {"memories", "entities", "memories_fts", "memviz_meta", "memviz_audit", "memviz_layouts",
            "memviz_migrations"} <= names
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with pytest.raises(ms.StoreError, match="already exists"):
        ms.create(str(store_path))


def test_insert_reads_back_as_arrays(store):
    ids = store.insert_memories(_records(5) + [dict(kind="fact", content="no vector", agent="bob",
                                                    valid_until=1_800_000_000, protected=True)])
    a = store.arrays()
    assert list(a.ids) == ids
    assert a.embedding.shape == (6, 8)
    assert np.allclose(np.linalg.norm(a.embedding[:5], axis=1), 1, atol=1e-5)
    assert not a.has_embedding[5] and not a.embedding[5].any()
    assert a.live.tolist() == [True] * 5 + [False]
    assert a.protected.tolist() == [False] * 5 + [True]
    assert a.importance[:3].tolist() == [1, 2, 3]
    assert np.isnan(a.last_accessed).all()
    assert a.index_of(ids[3]) == 3 and a.index_of("nope") is None
    assert store.counts()["by_kind"] == {"episode": [5, 0], "fact": [0, 1]}
    assert store.embedding_models() == [("m", 8, 5)]


def test_fts_and_vectors_follow_inserts_updates(store):
    ids = store.insert_memories(_records(4))
    assert store.fts_search("number")[0][0] in ids
    store.update_fields(ids[0], {"content": "completely different words"})
    assert ids[0] not in [i for i, _ in store.fts_search("number")]
    assert [i for i, _ in store.fts_search("different")] == [ids[0]]
    v = unit_vectors(4)
    assert store.vec_search(v[2], k=1)[0][0] == ids[2]
    store.update_fields(ids[1], {"embedding": v[2], "embedding_model": "m"})
    top2 = {i for i, _ in store.vec_search(v[2], k=2)}
    assert top2 == {ids[1], ids[2]}
    assert store.vec_search(np.zeros(8, np.float32), k=2) == []  # no direction: near nothing (was a TypeError)
    assert store.conn.execute("SELECT count(*) FROM vec_memories_8").fetchone()[0] == 4
    assert store.integrity() == []


def test_supersede_is_one_audited_transaction(store):
    old, = store.insert_memories([dict(kind="fact", content="Alice lives in Paris", agent="a",
                                       source_ids=["x"], tags=["home"], event_time=1_700_000_000)])
    new = store.supersede(old, "Alice lives in Lyon", when=1_800_000_000)
    o, n = store.get(old), store.get(new)
    assert o["valid_until"] == 1_800_000_000
    assert n["attributes"]["supersedes"] == old and n["attributes"]["needs_embedding"] is True
    assert n["embedding"] is None and n["kind"] == "fact" and n["tags"] == ["home"] and n["source_ids"] == ["x"]
    assert n["event_time"] == 1_700_000_000 and n["created_at"] == 1_800_000_000
    assert [h["action"] for h in store.history(old)] == ["insert", "supersede"]
    assert store.provenance().supersedes == [(new, old)]
    with pytest.raises(ms.ConflictError):
        store.supersede(old, "again")


def test_update_with_stale_expectation_conflicts(store):
    mid, = store.insert_memories([dict(kind="fact", content="x", importance=3)])
    store.update_fields(mid, {"importance": 7}, expected={"importance": 3})
    with pytest.raises(ms.ConflictError) as err:
        store.update_fields(mid, {"importance": 9}, expected={"importance": 3})
    assert err.value.current["importance"] == 7
    assert store.get(mid)["importance"] == 7


def test_soft_delete_and_restore_are_audited(store):
    mid, = store.insert_memories([dict(kind="fact", content="x")])
    store.set_valid_until(mid, 1_800_000_000)
    store.set_valid_until(mid, None)
    hist = store.history(mid)
    assert [h["action"] for h in hist] == ["insert", "soft_delete", "restore"]
    assert hist[1]["after"] == {"valid_until": 1_800_000_000} and hist[2]["before"] == {"valid_until": 1_800_000_000}
    assert store.get(mid)["valid_until"] is None


def test_provenance_reports_dangling_ids(store):
    a, = store.insert_memories([dict(kind="episode", content="seen")])
    r, = store.insert_memories([dict(kind="reflection", content="insight", source_ids=[a, "ghost"])])
    p = store.provenance()
    assert p.sources == [(r, a)] and p.dangling == [(r, "ghost", "source")]


def test_reopen_roundtrip_and_times(store_path):
    s = ms.create(str(store_path))
    s.insert_memories([dict(kind="episode", content="t", event_time="2026-03-01T12:00", created_at="2026-03-01T12:00:05Z")])
    s.close()
    s = ms.open(str(store_path))
    assert not s.read_only
    row = s.get(s.arrays().ids[0])
    assert row["event_time"] == 1772366400 and row["created_at"] == 1772366405
    assert ms.iso(row["event_time"]) == "2026-03-01 12:00:00"
    s.close()


def test_read_only_open_refuses_writes_and_leaves_file(store_path):
    ms.create(str(store_path)).close()
    before = store_path.read_bytes()
    s = ms.open(str(store_path), read_only=True)
    with pytest.raises(ms.ReadOnlyError, match="read-only"):
        s.insert_memories([dict(kind="fact", content="x")])
    s.close()
    assert store_path.read_bytes() == before


def test_unwritable_folder_opens_read_only(tmp_path, monkeypatch):
    p = tmp_path / "ro" / "m.db"
    p.parent.mkdir()
    ms.create(str(p)).close()
    before = p.read_bytes()
    if os.geteuid() == 0:  # root writes anywhere: have the OS answer as it would for a user
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode: False if (mode == os.W_OK and os.fspath(path) == str(p.parent))
                            else real_access(path, mode))
    else:
        p.parent.chmod(0o555)
    try:
        s = ms.open(str(p))
        assert s.read_only and "folder is not writable" in s.read_only_reason
        with pytest.raises(ms.ReadOnlyError, match="folder is not writable"):
            s.insert_memories([dict(kind="fact", content="x")])
        s.close()
    finally:
        p.parent.chmod(0o755)
    assert p.read_bytes() == before


def test_extension_loading_is_switched_off_after_connect(store_path):
    ms.create(str(store_path)).close()
    conn = connect(str(store_path))
    with pytest.raises(apsw.Error):
        conn.execute("SELECT load_extension('/nonexistent')").fetchall()
    assert conn.execute("SELECT vec_version()").fetchone()[0].startswith("v")


def test_meta_roundtrip(store):
    store.set_meta("ga_weights", {"a": {"recency_w": 1}})
    assert store.meta("ga_weights") == {"a": {"recency_w": 1}}
    assert store.meta("missing", 3) == 3


def test_open_migrates_an_older_native_store(store_path, monkeypatch):
    ms.create(str(store_path)).close()
    ran = []
    extra = schema.Migration(schema.SCHEMA_VERSION + 1, "test", lambda c: ran.append(c.execute("CREATE TABLE t(x)")))
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS + [extra])
    monkeypatch.setattr(schema, "SCHEMA_VERSION", extra.version)
    s = ms.open(str(store_path))
    assert ran and s.report.version == extra.version
    assert json.loads(json.dumps([r[0] for r in s.conn.execute("SELECT version FROM memviz_migrations")])) == \
        [m.version for m in schema.MIGRATIONS]
    s.close()


def test_a_store_from_before_the_read_index_gets_it_at_a_writable_open_and_reads_the_same(store_path):
    s = ms.create(str(store_path))
    s.insert_memories(_records(5))
    with s.transaction() as c:   # as migration 3 left a store
        c.execute(f"DROP INDEX {schema.READ_INDEX}")
        c.execute("DELETE FROM memviz_migrations WHERE version = 4")
    s.close()
    index = f"SELECT 1 FROM sqlite_master WHERE name = '{schema.READ_INDEX}'"
    with ms.open(str(store_path), read_only=True) as ro:   # read from the table
        assert ro.report.version == 3 and not ro.conn.execute(index).fetchall()
        before = ro.arrays(preview=30)
    with ms.open(str(store_path)) as rw:
        assert rw.report.version == 4 and rw.conn.execute(index).fetchall()
        assert_same_arrays(rw.arrays(preview=30), before)


def test_embeddings_without_vector_index_are_noted(store_path):
    s = ms.create(str(store_path))
    s.insert_memories(_records(2))
    with s.transaction() as c:  # an agent writing a new dimension through plain SQL
        c.execute("INSERT INTO memories(id, kind, content, event_time, created_at, embedding, embedding_model) "
                  "VALUES ('x', 'episode', 'e', 1, 1, ?, 'other')", (np.ones(4, np.float32).tobytes(),))
    s.close()
    s = ms.open(str(store_path))
    note, = s.vector_index_notes()
    assert note.startswith("1 memory holds embeddings of 4 dimensions with no vector index") and \
        note.endswith("`memviz check --repair` makes it") and "not of the store's main model" in note
    s.close()


def test_vector_tables_made_since_the_open_are_no_missing_index(store_path):
    """The notes look at the vector tables the store has now: a new store filled in the same
    session (a framework's mirror at its first open, `memviz stats` on it) has its vec0 tables."""
    s = ms.create(str(store_path))
    s.insert_memories(_records(2))
    assert s.vector_index_notes() == []
    s.close()


def test_reopen_gives_a_second_connection_that_sees_writes(store):
    other = store.reopen()
    try:
        assert other.conn is not store.conn and other.report is store.report and not other.read_only
        mid, = other.insert_memories([dict(kind="fact", content="from the second connection")])
        assert store.get(mid)["content"] == "from the second connection"
    finally:
        other.close()
