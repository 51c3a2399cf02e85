"""The bundled sample copied SQLite -> PostgreSQL -> SQLite against a real server: every
column equal, vectors bit-exact, the same arrays, the same answers from the engine."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_same_arrays
from pg_server import pg, pg_db  # noqa: F401 - fixtures

import memviz.store as ms
from memviz.cli import main
from memviz.retrieval import Engine, preset_params
from memviz.store.copy import copy_store
from memviz.tasks import Cancelled, Task

SAMPLE = Path(__file__).resolve().parents[1] / "sample_dbs" / "assistant.db"
NOW = 1_790_000_000.0
TABLES = {"memories": "rowid", "entities": "id", "memviz_audit": "id", "memviz_layouts": "key", "memviz_meta": "key"}


def _sample_copy(folder: Path) -> str:
    """A private copy of the sample with some history: a correction, a soft delete, a layout."""
    if not SAMPLE.exists():
        if os.environ.get("CI"):
            raise RuntimeError(f"{SAMPLE} is missing")
        pytest.skip("the bundled sample store is not there")
    path = folder / "assistant.db"
    for suffix in ("", "-wal"):
        if Path(str(SAMPLE) + suffix).exists():
            shutil.copy(str(SAMPLE) + suffix, str(path) + suffix)
    with ms.open(str(path)) as s:
        ids = list(s.arrays().ids[:3])
        s.supersede(ids[0], "corrected text", note="parity")
        s.set_valid_until(ids[1], 1_700_000_000, expected={"valid_until": None})
        s.update_fields(ids[2], {"tags": ["x", "ünï"], "importance": 9.5})
        with s.transaction() as c:
            c.execute("INSERT INTO memviz_layouts(key, method, model, params, created_at, ids, coords) "
                      "VALUES ('k1', 'umap', 'm', '{}', 1.5, '[\"a\"]', ?)",
                      (np.arange(2, dtype=np.float32).tobytes(),))
    return str(path)


def _rows(store, table):
    """Every row of a table, in key order, as plain Python values (vectors as LE float32 bytes)."""
    if table == "memories":
        a = store.arrays()
        rows = store.get_many(list(a.ids))
        order = {m: i for i, m in enumerate(a.ids)}
        return sorted((order[r["id"]], tuple(sorted(r.items()))) for r in rows)
    if isinstance(store, ms.Store):
        cols = ", ".join(_COLS[table])
        return [tuple(r) for r in store.conn.execute(f"SELECT {cols} FROM {table} ORDER BY {TABLES[table]}")]
    return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in r) for r in store.conn.execute(
        f"SELECT {', '.join(_COLS[table])} FROM {table} ORDER BY {TABLES[table]}").fetchall()]


_COLS = {
    "entities": ("id", "canonical_name", "type", "aliases", "summary", "embedding", "mention_count", "protected"),
    "memviz_audit": ("id", "at", "action", "memory_id", "before", "after", "actor", "note"),
    "memviz_layouts": ("key", "method", "model", "params", "created_at", "ids", "coords"),
    "memviz_meta": ("key", "value"),
}


@pytest.fixture(scope="module")
def copies(pg, tmp_path_factory):  # noqa: F811
    """(sqlite path, pg dsn, sqlite path copied back) of the sample."""
    folder = tmp_path_factory.mktemp("parity")
    src = _sample_copy(folder)
    name = pg.fresh_db()
    dsn = pg.dsn(name)
    assert copy_store(src, dsn) > 1000
    back = str(folder / "back.db")
    copy_store(dsn, back)
    yield src, dsn, back
    pg.drop_db(name)


def test_round_trip_keeps_every_column(copies):
    src, dsn, back = copies
    with ms.open(src, read_only=True) as a, ms.open(dsn, read_only=True) as p, ms.open(back, read_only=True) as b:
        for table in TABLES:
            ra, rp, rb = _rows(a, table), _rows(p, table), _rows(b, table)
            assert ra or table in ("memviz_audit",), table
            assert ra == rp, f"{table}: SQLite and PostgreSQL differ"
            assert ra == rb, f"{table}: the round trip changed it"
        # vectors bit for bit, and the raw rows (JSON text as written, rowids) of the round trip
        raw = "SELECT rowid, * FROM memories ORDER BY rowid"
        assert a.conn.execute(raw).fetchall() == b.conn.execute(raw).fetchall()
        assert a.provenance() == p.provenance() == b.provenance()
        assert a.counts() == p.counts()
        assert a.embedding_models() == p.embedding_models()
        assert a.history(a.arrays().ids[2]) == p.history(a.arrays().ids[2])
        # the copy back is a whole SQLite store: its vector and full-text indexes were filled too
        q = a.arrays().embedding[11]
        assert b.vec_search(q, 8) == a.vec_search(q, 8) and b.fts_search("tea coffee") == a.fts_search("tea coffee")
        assert b.integrity() == [] and p.integrity() == []


def test_arrays_are_the_same_on_both_backends(copies):
    src, dsn, _ = copies
    with ms.open(src, read_only=True) as a, ms.open(dsn, read_only=True) as p:
        assert_same_arrays(a.arrays(preview=120), p.arrays(preview=120))


@pytest.mark.parametrize("preset", ["dual-memory", "generative-agents", "ada", "working-memory"])
def test_presets_give_the_same_top_k(copies, preset):
    src, dsn, _ = copies
    with ms.open(src, read_only=True) as a, ms.open(dsn, read_only=True) as p:
        like = str(a.arrays().ids[40])
        results = []
        for store in (a, p):
            e = Engine(store, now=NOW)
            if preset != "working-memory":
                e.set_query(like=like)
            results.append(e.score(preset_params(preset, k=15)))
        assert results[0].ids == results[1].ids
        assert np.allclose(results[0].score, results[1].score, atol=1e-6, rtol=0)


def test_hybrid_fuses_postgres_full_text_ranks(copies):
    """The full-text part on PostgreSQL is ts_rank over a 'simple' tsvector, not FTS5 BM25: the
    matching memories are the same, their order may differ; the fusion is the same RRF."""
    src, dsn, _ = copies
    with ms.open(src, read_only=True) as a, ms.open(dsn, read_only=True) as p:
        arrays = a.arrays()
        like = str(arrays.ids[40])
        text = a.get(like)["content"]
        assert {i for i, _ in a.fts_search(text, 5000)} == {i for i, _ in p.fts_search(text, 5000)}
        res = {}
        for name, store in (("sqlite", a), ("pg", p)):
            e = Engine(store, now=NOW)
            e.set_query(like=like)
            res[name] = r = e.score(preset_params("hybrid", k=20))
            k = r.params.rrf_k
            fused = np.where(r.raw["fts_rank"] > 0, 1 / (k + r.raw["fts_rank"]), 0) + \
                np.where(r.raw["vector_rank"] > 0, 1 / (k + r.raw["vector_rank"]), 0)
            assert np.allclose(r.score, fused, atol=1e-12)
        # the vector side is the same on both: equal vector ranks wherever both list a memory
        vs = dict(zip(res["sqlite"].ids, res["sqlite"].raw["vector_rank"]))
        both = [(vs[i], v) for i, v in zip(res["pg"].ids, res["pg"].raw["vector_rank"]) if i in vs]
        assert both and all(x == y for x, y in both)
        # PostgreSQL's full-text ranks follow ts_rank, best first
        hits = p.fts_search(text, 5000)
        assert [s for _, s in hits] == sorted(s for _, s in hits)


def test_retired_list_and_reflection_meter_agree(copies):
    from memviz.edits.retired import retired
    from memviz.reflect.reflection import importance_status
    src, dsn, _ = copies
    with ms.open(src, read_only=True) as a, ms.open(dsn, read_only=True) as p:
        ours, theirs = retired(a), retired(p)
        assert len(ours) > 3 and [r.__dict__ for r in ours] == [r.__dict__ for r in theirs]
        assert any(r.action == "soft_delete" for r in theirs) and any(r.action == "supersede" for r in theirs)
        assert importance_status(a, "assistant") == importance_status(p, "assistant")


def test_vec_search_agrees_with_sqlite_vec(copies):
    src, dsn, _ = copies
    with ms.open(src, read_only=True) as a, ms.open(dsn, read_only=True) as p:
        q = a.arrays().embedding[7]
        ours, theirs = a.vec_search(q, 10), p.vec_search(q, 10)
        assert np.allclose([d for _, d in ours], [d for _, d in theirs], atol=1e-5)
        # the sample repeats some texts: compare the ids inside the k-th distance (ties may swap)
        edge = ours[-1][1] - 1e-5
        assert {i for i, d in ours if d < edge} == {i for i, d in theirs if d < edge}


def test_cancelled_copy_leaves_the_target_as_it_was(pg, tmp_path):  # noqa: F811
    src = _sample_copy(tmp_path)
    name = pg.fresh_db()
    try:
        task = Task("copy", lambda f, t: task.cancel() if f > 0.3 else None)
        with pytest.raises(Cancelled):
            copy_store(src, pg.dsn(name), task)
        with pg.admin(name) as c:  # not even the schema: it was made inside the same transaction
            assert c.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0
        assert copy_store(src, pg.dsn(name)) > 1000  # the empty database still takes a copy
        back = tmp_path / "back.db"
        task = Task("copy", lambda f, t: task.cancel() if f > 0.3 else None)
        with pytest.raises(Cancelled):
            copy_store(pg.dsn(name), str(back), task)
        assert not back.exists() and [p.name for p in tmp_path.iterdir()
                                      if p.name.startswith(".memviz-copy")] == []
        with pytest.raises(ms.StoreError, match="already has a `memories` table"):
            copy_store(src, pg.dsn(name))
    finally:
        pg.drop_db(name)


def test_cli_copy_and_create(pg, tmp_path, capsys):  # noqa: F811
    src = _sample_copy(tmp_path)
    name = pg.fresh_db()
    try:
        dsn = pg.dsn(name)
        assert main(["copy", src, dsn]) == 0
        assert "copied" in capsys.readouterr().out
        assert main(["create", dsn]) == 2  # not over an existing store
        assert "already has a `memories` table" in capsys.readouterr().err
        assert main(["stats", dsn]) == 0
        with ms.open(src, read_only=True) as s:
            total = s.counts()["total"]
        assert str(total) in capsys.readouterr().out
        other = pg.fresh_db()
        try:
            assert main(["create", pg.dsn(other)]) == 0
            with ms.open(pg.dsn(other)) as s:
                assert s.counts()["total"] == 0 and not s.read_only
        finally:
            pg.drop_db(other)
    finally:
        pg.drop_db(name)


def _valid_hnsw(pg, name):  # noqa: F811
    with pg.admin(name) as c:
        return [r[0] for r in c.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_am am ON am.oid = c.relam WHERE am.amname = 'hnsw' AND i.indisvalid")]


def test_the_vector_index_is_built_after_the_commit_and_completed_later(pg, tmp_path, capsys):  # noqa: F811
    """Cancelled while the HNSW index is built: the copied store is whole and usable, the
    index absent (said by `memviz stats`), and `memviz index` completes it, once."""
    src = _sample_copy(tmp_path)
    name = pg.fresh_db()
    try:
        dsn = pg.dsn(name)
        task = Task("copy", lambda f, t: task.cancel() if t.startswith("building the HNSW index") else None)
        with pytest.raises(Cancelled, match="memories are copied.*memviz index"):
            copy_store(src, dsn, task)
        assert _valid_hnsw(pg, name) == []
        with ms.open(src, read_only=True) as a, ms.open(dsn, read_only=True) as p:
            assert p.counts() == a.counts()
            q = a.arrays().embedding[7]
            assert p.vec_search(q, 1)[0][0] == a.vec_search(q, 1)[0][0]  # exact meanwhile
        assert main(["stats", dsn]) == 0
        assert "no HNSW index yet" in capsys.readouterr().out
        assert main(["index", dsn]) == 0
        assert "built 1 vector index" in capsys.readouterr().out
        assert len(_valid_hnsw(pg, name)) == 1
        assert main(["index", dsn]) == 0 and "none was missing" in capsys.readouterr().out
        assert main(["index", str(tmp_path / "x.db")]) == 2
        assert "not a PostgreSQL connection string" in capsys.readouterr().err
    finally:
        pg.drop_db(name)


def test_a_whole_copy_has_its_vector_index(copies, pg):  # noqa: F811
    _src, dsn, _back = copies
    from pg_server import db_name
    assert len(_valid_hnsw(pg, db_name(dsn))) == 1


def test_a_copy_has_the_change_log_and_starts_it_empty(pg, tmp_path):  # noqa: F811
    """The triggers come after the copied rows (a copy is no change to log), and work after."""
    src = str(tmp_path / "src.db")
    with ms.create(src) as s:
        s.insert_memories([{"id": f"c{i}", "kind": "fact", "content": f"copied {i}"} for i in range(30)])
    name = pg.fresh_db()
    try:
        dsn = pg.dsn(name)
        copy_store(src, dsn)
        with ms.open(dsn) as store:
            assert store.has_change_log()
            assert store.conn.execute("SELECT count(*) FROM memviz_changes").fetchone()[0] == 0
            from memviz.store.changes import changes_since, token_now
            token = token_now(store)
            store.update_fields("c3", {"importance": 2})
            got = changes_since(store, token)
            assert got.full is None and len(got.changed) == 1 and got.added == []
    finally:
        pg.drop_db(name)


def test_the_index_build_asks_memory_enough_for_its_graph():
    """A graph that outgrows maintenance_work_mem is built on disk, many times slower: the
    build asks for what the rows need (at least 1 GB, at most MAX_BUILD_MEMORY_MB)."""
    from memviz.store.postgres import schema
    assert schema.build_settings(256, 1000)["maintenance_work_mem"] == "1024MB"
    fleet = int(schema.build_settings(256, 1_000_000)["maintenance_work_mem"].removesuffix("MB"))
    assert fleet * 2**20 > 1_000_000 * (4 * 256 + schema.GRAPH_BYTES_PER_ROW)
    assert schema.build_settings(1536, 50_000_000)["maintenance_work_mem"] == f"{schema.MAX_BUILD_MEMORY_MB}MB"



def test_a_copy_has_the_planners_statistics_before_its_index(pg, tmp_path):  # noqa: F811
    """The open sizes its reads by the planner's statistics (an unanalyzed table counts as small,
    read on one connection): a copy analyzes its rows in its transaction, not only through the
    index build after it, which a cancel or a vector too wide for pgvector's index leaves out."""
    from memviz.store.postgres.arrays import table_size
    from memviz.store.postgres.connect import connect
    src = _sample_copy(tmp_path)
    with ms.open(src) as s:
        n = s.counts()["total"]
    name = pg.fresh_db()
    dsn = pg.dsn(name)
    task = Task("copy", lambda _f, text: text.startswith("building the HNSW index") and task.cancel())
    with pytest.raises(Cancelled):
        copy_store(src, dsn, task)
    conn = connect(dsn)
    try:
        assert table_size(conn)[0] == n
    finally:
        conn.close()
        pg.drop_db(name)
