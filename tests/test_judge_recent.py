"""The agent's own recent queries, where the store records them: HTM logs every `recall` (its
topic and timeframe) in operations_log, and memviz reads them back (MemoryStore.agent_queries)
to say what a change of weights would change in what the agent itself retrieved. memviz's own
stores record no queries: nothing."""
from __future__ import annotations

import json

import pytest
from pg_server import db_name, pg, pg_db  # noqa: F401 - fixtures
from test_fw_htm import htm_schema

import memviz.store as ms
from memviz.embed import LOCAL_MODEL, LocalEmbedder
from memviz.frameworks import open_source
from memviz.judge import JudgedQuery, JudgedSet
from memviz.judge.evaluator import JudgedEvaluator
from memviz.retrieval import preset_params

FACTS = [("db", "The user prefers PostgreSQL for time-series data", 2.0),
         ("tz", "Deploys run in UTC every Tuesday", 9.0),
         ("cache", "Warm the cache at startup before traffic", 1.0),
         ("pg-idx", "PostgreSQL indexes are rebuilt on Sundays", 8.0),
         ("lunch", "The team has lunch at noon", 10.0)]


@pytest.fixture
def htm(pg, pg_db, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("MEMVIZ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMVIZ_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MEMVIZ_HTM_EMBEDDER", LOCAL_MODEL)   # the nodes are embedded with memviz's own model
    vectors = LocalEmbedder().embed([t for _k, t, _i in FACTS])
    with pg.admin(db_name(pg_db)) as c:
        c.execute(htm_schema())
        c.execute("INSERT INTO robots (id, name) VALUES ('r-1', 'Rover')")
        for (key, text, importance), v in zip(FACTS, vectors):
            vec = "[" + ",".join(f"{x:.7f}" for x in v) + ",0" * (2000 - len(v)) + "]"
            c.execute("INSERT INTO nodes (key, value, embedding, embedding_dimension, robot_id, importance, created_at) "
                      "VALUES (%s, %s, %s, %s, 'r-1', %s, '2025-10-20 12:00:00+00')", (key, text, vec, len(v), importance))
        # HTM's recall logs its topic and timeframe (a Ruby Range of Times), node_id NULL
        for at, topic, frame in (("2025-10-27 09:00:00+00", "which database do we use",
                                  "2025-10-20 00:00:00 UTC..2025-10-27 09:00:00 UTC"),
                                 ("2025-10-27 10:00:00+00", "when do deploys happen", "last week"),
                                 ("2025-10-27 11:00:00+00", "", None)):
            c.execute("INSERT INTO operations_log (timestamp, operation, node_id, robot_id, details) "
                      "VALUES (%s, 'recall', NULL, 'r-1', %s)", (at, json.dumps({"topic": topic, "timeframe": frame,
                                                                                "count": 3})))
    return pg_db


def test_htm_recalls_are_the_agents_own_queries_and_what_would_change_in_them(htm):
    with open_source(htm, read_only=True) as s:
        asked = s.agent_queries()
        assert [(q.agent, q.text) for q in asked] == [("Rover", "when do deploys happen"),
                                                      ("Rover", "which database do we use")]   # newest first
        assert asked[0].time_range is None                  # "last week": not a range memviz can read
        assert asked[1].time_range == (1760918400.0, 1761555600.0) and asked[1].at == 1761555600.0
        assert s.agent_queries(limit=1)[0].text == "when do deploys happen"
        judged = JudgedSet("j", (JudgedQuery("q", {"db": 1}, query="database"),))
        relevance = preset_params("dual-memory", alpha=1.0, beta=0.0, gamma=0.0, k=2)
        importance = relevance.replace(alpha=0.0, gamma=1.0)
        ev = JudgedEvaluator(s, judged, relevance)
        changes = ev.recent_changes(relevance, importance)
        assert [c.query.text for c in changes] == ["when do deploys happen", "which database do we use"]
        by_text = {c.query.text: c.change for c in changes}
        db = by_text["which database do we use"]
        assert [m.memory_id for m in db.entered] == ["lunch", "tz"]   # the two most important …
        assert {m.memory_id for m in db.left} == {"db", "pg-idx"}       # … push out the two about databases
        assert ev.recent_changes(relevance, relevance) == []


def test_memvizs_own_stores_record_no_queries(tmp_path):
    with ms.create(str(tmp_path / "s.db")) as s:
        assert s.agent_queries() == []
