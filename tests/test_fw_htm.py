"""HTM (seed 004) long-term memory on PostgreSQL, opened in place (memviz/frameworks/htm.py).
HTM is a Ruby gem (no Python package): the store is made by HTM's own schema text, its
sql/schema.sql at the commit tests/data/htm/NOTICE.md names (nodes, relationships, tags,
operations_log, robots, their indexes, trigger and views), and written with the SQL its
LongTermMemory runs; reading back uses plain SQL, as HTM does."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pg_server import db_name, pg, pg_db  # noqa: F401 - fixtures

from memviz.frameworks import describe, open_source, recognise
from memviz.store import ReadOnlyError
from memviz.store.changes import changes_since, token_now

HTM_SCHEMA = Path(__file__).parent / "data" / "htm" / "schema.sql"
#: what the test server cannot run of HTM's schema text, and what stands for it: pgvector's
#: extension is named `vector` (HTM's text names the project), and pg_trgm is not in the server
#: (it serves one fuzzy-match index, which nothing here reads)
NOT_ON_THE_TEST_SERVER = {
    "CREATE EXTENSION IF NOT EXISTS pgvector;": "CREATE EXTENSION IF NOT EXISTS vector;",
    "CREATE EXTENSION IF NOT EXISTS pg_trgm;": "",
    "CREATE INDEX IF NOT EXISTS idx_nodes_value_trgm ON nodes USING gin(value gin_trgm_ops);": "",
}


def htm_schema() -> str:
    text = HTM_SCHEMA.read_text()
    for line, instead in NOT_ON_THE_TEST_SERVER.items():
        assert text.count(line) == 1, line
        text = text.replace(line, instead)
    return text


DIM = 8


def padded(seed: int) -> str:
    v = np.random.default_rng(seed).normal(size=DIM)
    return "[" + ",".join(f"{x:.6f}" for x in v) + ",0" * (2000 - DIM) + "]"


def add_node(c, key, value, robot, *, importance=1.0, type_=None, wm=True, seed=0):
    """HTM's LongTermMemory#add, then the working memory's flag and the operations log."""
    nid = c.execute("INSERT INTO nodes (key, value, embedding, embedding_dimension, robot_id, importance, type, "
                    "created_at, in_working_memory) VALUES (%s, %s, %s, %s, %s, %s, %s, CURRENT_TIMESTAMP, %s) RETURNING id",
                    (key, value, padded(seed), DIM, robot, importance, type_, wm)).fetchone()[0]
    c.execute("INSERT INTO operations_log (operation, node_id, robot_id, details) VALUES ('add', %s, %s, '{}')", (nid, robot))
    return nid


@pytest.fixture
def htm(pg, pg_db, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("MEMVIZ_CACHE_DIR", str(tmp_path / "cache"))
    with pg.admin(db_name(pg_db)) as c:
        c.execute(htm_schema())
        c.execute("INSERT INTO robots (id, name) VALUES ('r-1', 'Rover'), ('r-2', 'Scout')")
        n1 = add_node(c, "pref-db", "The user prefers PostgreSQL for time-series data", "r-1",
                      importance=8.0, type_="preference", seed=1)
        add_node(c, "fact-tz", "Deploys run in UTC", "r-1", type_="fact", wm=False, seed=2)
        add_node(c, "q-cache", "Should the cache be warmed at startup?", "r-2", importance=3.0, type_="question", seed=3)
        c.execute("INSERT INTO tags (node_id, tag) VALUES (%s, 'database'), (%s, 'ops')", (n1, n1))
    return pg, pg_db


def sql(pg, dsn, query, *args):  # noqa: F811
    with pg.admin(db_name(dsn)) as c:
        return c.execute(query, args).fetchall()


def test_recognised_and_fields_shown(htm):
    pg, dsn = htm  # noqa: F811
    assert recognise(dsn).system == "htm"
    assert "3 nodes of 2 robots, 2 in working memory" in describe(dsn)
    with open_source(dsn) as s:
        rows = {r["id"]: r for r in s.get_many(["pref-db", "fact-tz", "q-cache"])}
        p = rows["pref-db"]
        assert p["agent"] == "Rover" and p["kind"] == "preference" and p["importance"] == 8.0
        assert p["content"] == "The user prefers PostgreSQL for time-series data"
        assert p["tags"] == ["database", "ops", "working-memory"]
        assert p["attributes"]["htm"]["in_working_memory"] is True and p["attributes"]["htm"]["robot_id"] == "r-1"
        assert rows["fact-tz"]["tags"] == [] and rows["fact-tz"]["attributes"]["htm"]["in_working_memory"] is False
        assert rows["q-cache"]["agent"] == "Scout" and rows["q-cache"]["kind"] == "question"
        vec = np.frombuffer(p["embedding"], "<f4") if isinstance(p["embedding"], bytes) else p["embedding"]
        assert len(vec) == DIM  # the padding to vector(2000) is trimmed to embedding_dimension
        assert p["embedding_model"] == "htm-embedder-8d"
        assert any("HTM operations log: add by robot r-1" in (h.get("note") or "") for h in s.history("pref-db"))


def test_eviction_and_recall_arrive_live(htm):
    pg, dsn = htm  # noqa: F811
    with open_source(dsn) as s:
        tok = token_now(s)
        sql(pg, dsn, "UPDATE nodes SET in_working_memory = FALSE WHERE key = ANY(%s) RETURNING id", ["pref-db"])  # mark_evicted
        with pg.admin(db_name(dsn)) as c:
            add_node(c, "ctx-1", "Working on the ingestion pipeline", "r-2", type_="context", seed=4)
        ch = changes_since(s, tok)
        assert ch is not None and ch.full is None and len(ch.added) == 1 and len(ch.changed) == 1
        assert "working-memory" not in s.get("pref-db")["tags"]
        assert s.get("ctx-1")["agent"] == "Scout"


def test_importance_and_tags_written_as_htm_would(htm):
    pg, dsn = htm  # noqa: F811
    with open_source(dsn) as s:
        s.update_fields("q-cache", {"importance": 9.0})
        s.update_fields("pref-db", {"tags": ["database", "storage", "working-memory"]})
    assert sql(pg, dsn, "SELECT importance FROM nodes WHERE key = 'q-cache'") == [(9.0,)]
    assert sorted(sql(pg, dsn, "SELECT t.tag FROM tags t JOIN nodes n ON n.id = t.node_id WHERE n.key = 'pref-db'")) == [
        ("database",), ("storage",)]
    log = sql(pg, dsn, "SELECT operation, details->>'by' FROM operations_log WHERE operation = 'update'")
    assert log == [("update", "memviz"), ("update", "memviz")]
    with open_source(dsn) as s:  # reopened: read back from HTM's tables
        assert s.get("q-cache")["importance"] == 9.0
        assert s.get("pref-db")["tags"] == ["database", "storage", "working-memory"]


def test_unsupported_edits_refused(htm):
    pg, dsn = htm  # noqa: F811
    with open_source(dsn) as s:
        with pytest.raises(ReadOnlyError) as e:
            s.update_fields("q-cache", {"valid_until": 1})
        assert "HTM store" in str(e.value)
        with pytest.raises(ReadOnlyError) as e:
            s.supersede("q-cache", "Warm the cache at startup")
        assert "correcting a memory's text" in str(e.value)
        with pytest.raises(ReadOnlyError) as e:  # the flag is HTM's working memory's to set
            s.update_fields("fact-tz", {"tags": ["working-memory"]})
        assert "in_working_memory" in str(e.value)
    assert sql(pg, dsn, "SELECT value, in_working_memory FROM nodes WHERE key = 'fact-tz'") == [("Deploys run in UTC", False)]


def test_not_htm(pg, pg_db):  # noqa: F811
    with pg.admin(db_name(pg_db)) as c:
        c.execute("CREATE TABLE nodes (id bigserial, key text, value text)")  # a graph app's nodes
    assert recognise(pg_db) is None


def test_reopened_unchanged_then_changed_reads_only_the_change(htm):
    pg, dsn = htm  # noqa: F811
    open_source(dsn).close()
    with open_source(dsn) as s:
        tok = token_now(s)
        assert sorted(s.source._versions) == ["fact-tz", "pref-db", "q-cache"]
        sql(pg, dsn, "UPDATE nodes SET importance = 4 WHERE key = 'fact-tz' RETURNING id")
        ch = changes_since(s, tok)
        assert ch is not None and len(ch.changed) == 1 and s.get("fact-tz")["importance"] == 4.0
        sql(pg, dsn, "INSERT INTO tags (node_id, tag) SELECT id, 'utc' FROM nodes WHERE key = 'fact-tz' RETURNING id")
        assert s.source.changed_since(None, ()) is None  # a tag changed: read in full
