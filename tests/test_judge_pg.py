"""Judged sets and parameter sets on a real PostgreSQL server: migration 4, kept and read back
like on SQLite, audited, undone and redone, refused when they name no memory, carried by
`memviz copy` both ways, absent (not an error) in a database memviz did not make, and ranked
and measured by the evaluator the same as on SQLite."""
from __future__ import annotations

import numpy as np
import pytest
from pg_server import db_name, pg, pg_db  # noqa: F401 - fixtures

import memviz.store as ms
from memviz.edits import History, consistency_problems
from memviz.edits.judged import DeleteJudged
from memviz.judge import JudgedQuery, JudgedSet
from memviz.judge.evaluator import JudgedEvaluator
from memviz.judge.stored import read_set, save_parameters, save_set, saved_parameter_sets
from memviz.retrieval import preset_params
from memviz.retrieval.presets import ParameterSet
from memviz.store.copy import copy_store
from memviz.store.postgres import schema as pg_schema


def _records(n=40):
    rng = np.random.default_rng(5)
    v = rng.normal(size=(n, 8)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return [{"id": f"m{i}", "kind": "fact", "agent": "ann" if i % 3 else "bob", "content": f"fact {i} about tea",
             "importance": float(1 + i % 10), "embedding": v[i], "embedding_model": "m",
             "event_time": 1_700_000_000 + 3600 * i, "created_at": 1_700_000_000 + 3600 * i} for i in range(n)]


def judged():
    return JudgedSet("t", tuple(JudgedQuery(f"q{i}", {f"m{i}": 2, f"m{i + 7}": 1}, like=f"m{i + 1}",
                                            as_of=1_700_000_000 + 3600 * 30.0) for i in range(6)))


@pytest.fixture
def store(pg_db):  # noqa: F811
    s = ms.create(pg_db)
    s.insert_memories(_records())
    yield s
    s.close()


def test_migration_4_and_sets_kept_audited_and_undone(store, pg, pg_db):  # noqa: F811
    with pg.admin(db_name(pg_db)) as c:
        assert [r[0] for r in c.execute("SELECT version FROM memviz_migrations ORDER BY 1")] == \
            [v for v, _n, _s in pg_schema.MIGRATIONS] and pg_schema.SCHEMA_VERSION == 4
    h = History(store)
    h.perform(save_set(judged()))
    h.perform(save_parameters(ParameterSet.of("tuned", preset_params("dual-memory", alpha=0.9, tau_hours=5.0))))
    assert store.judged_sets() == [("t", 6)] and read_set(store, "t") == judged()
    assert saved_parameter_sets(store)[0].params().tau_hours == 5.0
    h.perform(DeleteJudged("t", ["q2", "q4"]))
    assert read_set(store, "t").ids == ("q0", "q1", "q3", "q5")
    h.undo()
    assert read_set(store, "t") == judged()   # back in their places
    h.undo()
    assert store.parameter_sets() == []
    h.redo()
    assert [p.name for p in saved_parameter_sets(store)] == ["tuned"]
    entries = [e for e in store.audit_entries() if e[3].startswith("judged t/")]
    assert len(entries) == 6 + 2 + 2 and entries[-1][2] == "undo:judged:delete"
    assert consistency_problems(store) == []
    with pytest.raises(ms.ValidationError, match="query 'bad' names 'ghost'"):
        h.perform(save_set(JudgedSet("t", (JudgedQuery("bad", {"ghost": 1}, query="x"),))))
    assert read_set(store, "t") == judged()


def test_copy_carries_them_both_ways_and_the_evaluator_agrees(store, pg, tmp_path):  # noqa: F811
    History(store).perform(save_set(judged()))
    History(store).perform(save_parameters(ParameterSet.of("tuned", preset_params("ada", decay=0.99))))
    local = str(tmp_path / "local.db")
    copy_store(store.location, local)
    with ms.open(local) as s:
        assert read_set(s, "t") == judged() and [p.name for p in saved_parameter_sets(s)] == ["tuned"]
        on_sqlite = JudgedEvaluator(s, read_set(s, "t"), preset_params("dual-memory"), now=1_700_000_000 + 3600 * 30.0)
        want = on_sqlite.metrics(preset_params("dual-memory", alpha=0.2, beta=0.7, gamma=0.1))
    back = pg.dsn(pg.fresh_db())
    copy_store(local, back)
    with ms.open(back) as p:
        assert read_set(p, "t") == judged() and p.parameter_sets() == store.parameter_sets()
    on_pg = JudgedEvaluator(store, read_set(store, "t"), preset_params("dual-memory"), now=1_700_000_000 + 3600 * 30.0)
    got = on_pg.metrics(preset_params("dual-memory", alpha=0.2, beta=0.7, gamma=0.1))
    assert got.to_json() == want.to_json()


def test_a_database_memviz_did_not_make_has_no_sets(pg, pg_db):  # noqa: F811
    with pg.admin(db_name(pg_db)) as c:
        c.execute("CREATE EXTENSION IF NOT EXISTS vector")
        c.execute("CREATE TABLE memories (id integer PRIMARY KEY, content text NOT NULL, "
                  "created_at timestamptz NOT NULL, vec vector(3))")
        c.execute("INSERT INTO memories VALUES (1, 'likes tea', '2024-01-01 00:00:00+00', '[1,0,0]')")
    with ms.open(pg_db) as s:
        assert s.read_only and s.judged_sets() == [] and s.parameter_sets() == [] and s.judged_queries("x") == []
        with pytest.raises(ms.ReadOnlyError, match="kept with the store"):
            s.change_judged("x", (), ["q"])
