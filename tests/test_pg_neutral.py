"""What once ran SQLite's own SQL outside memviz/store, on a PostgreSQL store (issue 13): consolidation
(plan, apply, undo, redo, a row changed meanwhile), reflection's duplicate check, context (texts, the
store as of a moment, diffs), the edits' consistency check, and every CLI command that takes a DB
— each through the store interface, against the real server, with the SQLite store's answers."""
from __future__ import annotations

import io
import math
import sys

import numpy as np
import pytest
from fake_openai import reply_json
from pg_server import pg, pg_db  # noqa: F401 - fixtures
from test_consolidation import DAY, NOW, seed
from test_reflect_flow import build_store

import memviz.store as ms
from memviz.cli import main
from memviz.context import Timeline, diff_stores, load_texts
from memviz.edits.verify import problems
from memviz.reflect.consolidation import apply_consolidation, plan_consolidation, redo_consolidation, undo_consolidation
from memviz.reflect.validate import find_duplicate
from memviz.store.copy import copy_store


@pytest.fixture
def pgs(pg_db):  # noqa: F811
    s = ms.create(pg_db)
    yield s
    s.close()


def _plan_view(plan):
    return ({d.id: (round(d.after, 12), d.decayed_from) for d in plan.decay},
            {p.id: (round(p.confidence, 12), p.content) for p in plan.prune}, plan.protected_skipped)


def test_consolidation_plans_applies_undoes_and_redoes_as_on_sqlite(pgs, store):
    seed(pgs)
    seed(store)
    plan = plan_consolidation(pgs, now=NOW)
    assert _plan_view(plan) == _plan_view(plan_consolidation(store, now=NOW))
    assert {p.id for p in plan.prune} == {"old", "weak", "shaky-episode", "bob-old"}
    assert next(p for p in plan.prune if p.id == "old").content == "Ann lived in Oslo."
    plan.untick("weak")
    res = apply_consolidation(pgs, plan)
    assert sorted(res.pruned) == ["bob-old", "old", "shaky-episode"] and res.skipped == []
    assert pgs.get("old")["valid_until"] is not None and pgs.get("weak")["valid_until"] is None
    assert pgs.get("old")["confidence"] == pytest.approx(math.exp(-0.1 * 400 ** 0.8))
    assert [h["action"] for h in pgs.history("old")] == ["insert", "decay", "prune"]
    assert pgs.history("old")[1]["actor"] == "memviz consolidate"
    assert pgs.decay_references()["old"] == NOW

    assert undo_consolidation(pgs, res) == []
    assert pgs.get("old")["confidence"] == 1.0 and pgs.get("old")["valid_until"] is None
    assert pgs.get("weak")["confidence"] == 0.06
    assert "old" not in pgs.decay_references()  # the undone decay is no longer in force
    assert _plan_view(plan_consolidation(pgs, now=NOW))[0] == _plan_view(plan)[0]

    assert redo_consolidation(pgs, res) == []
    assert pgs.get("old")["valid_until"] is not None and pgs.decay_references()["old"] == NOW
    assert [h["action"] for h in pgs.history("old")][-2:] == ["redo decay", "redo prune"]
    assert problems(pgs) == []  # every row agrees with its last audit entry


def test_consolidation_skips_rows_changed_since_the_preview(pgs, pg_db):  # noqa: F811
    seed(pgs)
    plan = plan_consolidation(pgs, now=NOW)
    with ms.open(pg_db) as agent:  # another writer, between the preview and the apply
        agent.update_fields("old", {"protected": True})
        agent.update_fields("young", {"confidence": 0.5})
        agent.set_valid_until("bob-old", NOW)
        agent.update_fields("shaky-episode", {"confidence": 0.9})
    res = apply_consolidation(pgs, plan)
    why = dict(res.skipped)
    assert why["old"] == "it is protected" and why["young"] == "its confidence changed since the preview"
    assert why["bob-old"] == "it was retired meanwhile" and why["shaky-episode"].startswith("its confidence is 0.900")
    assert res.pruned == ["weak"] and pgs.get("young")["confidence"] == 0.5
    with ms.open(pg_db) as agent:  # changed again before the undo: left alone, said so
        agent.update_fields("weak", {"valid_until": None})
    skipped = undo_consolidation(pgs, res)
    assert ("weak", "it was changed since") in skipped
    assert pgs.get("weak")["valid_until"] is None


def test_decay_never_compounds_on_postgresql(pgs):
    pgs.insert_memories([dict(id="f", kind="fact", content="x", created_at=NOW - 10 * DAY),
                         dict(id="pre", kind="fact", content="y", created_at=NOW - 10 * DAY,
                              attributes={"decayed_as_of": NOW - 5 * DAY})])
    for day in range(1, 4):
        apply_consolidation(pgs, plan_consolidation(pgs, now=NOW + day * DAY))
    assert pgs.get("f")["confidence"] == pytest.approx(1.0 * math.exp(-0.1 * 13 ** 0.8))
    assert plan_consolidation(pgs, now=NOW + 3 * DAY).decay == []


def test_duplicate_check_asks_the_store(pgs):
    pgs.insert_memories([
        dict(id="a1", kind="fact", agent="ann", content="Ann  grows TOMATOES in 100% organic soil_beds."),
        dict(id="a2", kind="fact", agent="ann", content="Ann grows tomatoes.", valid_until=NOW),
        dict(id="b1", kind="fact", agent="bob", content="Bob grows tomatoes."),
        dict(id="e1", kind="fact", agent="ann", content="Émile said hello.")])
    assert find_duplicate(pgs, "ann", "ann grows tomatoes in 100% organic soil_beds.", None, []) == \
        "memory a1 (identical text)"
    assert find_duplicate(pgs, "ann", "Ann grows tomatoes.", None, []) is None  # retired: not a duplicate
    assert find_duplicate(pgs, "ann", "Bob grows tomatoes.", None, []) is None  # another agent's
    assert find_duplicate(pgs, "ann", "Ann grows tomatoes in 100x organic soilxbeds.", None, []) is None  # escaped
    assert find_duplicate(pgs, "ann", "émile SAID hello.", None, []) == "memory e1 (identical text)"


@pytest.fixture(scope="module")
def flow_file(tmp_path_factory):
    """The reflection flow's store (two agents, embedded with the local model), one entity and a
    memory naming it and one that does not exist."""
    path = tmp_path_factory.mktemp("flow") / "flow.db"
    s = build_store(path)
    with s.transaction() as c:
        c.execute("INSERT INTO entities(id, canonical_name, type) VALUES ('e1', 'Ann', 'person')")
    s.update_fields("ann-00", {"entity_ids": ["e1", "e-gone"]})
    s.close()
    return str(path)


@pytest.fixture
def both(flow_file, pg_db, tmp_path):  # noqa: F811
    """The same store as a SQLite file and a PostgreSQL database."""
    copy_store(flow_file, pg_db)
    local = str(tmp_path / "local.db")
    copy_store(flow_file, local)
    return local, pg_db


def test_context_reads_the_same_on_both_backends(both):
    local, dsn = both
    with ms.open(local) as s, ms.open(dsn) as p:
        for st in (s, p):
            st.update_fields("ann-01", {"content": "Ann corrected this.", "tags": ["x"]})
        sa, pa = s.arrays(), p.arrays()
        (sc, stags), (pc, ptags) = load_texts(s, sa), load_texts(p, pa)
        assert list(pa.ids) == list(sa.ids) and list(pc) == list(sc) and ptags == stags
        assert pc[pa.index_of("ann-01")] == "Ann corrected this." and ptags[pa.index_of("ann-01")] == ["x"]
        t = float(p.history("ann-01")[-1]["at"]) - 1e-3  # just before the edit
        past = Timeline(p, pa).at(t)
        assert past.content[pa.index_of("ann-01")] != "Ann corrected this."
        assert past.content == Timeline(s, sa).at(float(s.history("ann-01")[-1]["at"]) - 1e-3).content
        p.update_fields("ann-02", {"tags": ["y"]})
        d = diff_stores(s, p)
        assert [(c.kind, c.ids) for c in d.changes] == [("tags", ["ann-02"])]
        assert p.missing_entities(["e1", "e-gone", "e-also-gone"]) == ["e-gone", "e-also-gone"]
        assert s.missing_entities(["e1", "e-gone"]) == ["e-gone"]
        assert problems(p) == []


def test_every_command_that_takes_a_db_works_on_postgresql(both, fake_openai, capsys, monkeypatch):
    local, dsn = both

    def run(*argv, code=0):
        got = main(list(argv))
        out, err = capsys.readouterr()
        assert got == code, (argv, out, err)
        assert "Traceback" not in err and "psycopg" not in err, err
        return out + err

    out = run("stats", dsn)
    assert "(schema v4)" in out and "memories: 14  live 14" in out and "integrity: ok" in out
    out = run("check", dsn, code=1)  # the entity that does not exist
    assert "ann-00 -> e-gone" in out and "skipped: SQLite integrity, full-text and vector index checks" in out
    out = run("check", dsn, "--repair", "--yes", code=1)
    assert "nothing here can be repaired by memviz" in out
    assert "Ann harvested the first ripe tomatoes" in run("query", dsn, "tomatoes", "--preset", "hybrid", "-k", "3")
    assert "of 13 candidates" in run("query", dsn, "--like", "ann-01")
    assert "Deleted 1 memory" in run("edit", dsn, "delete", "ann-02", "--note", "stale")
    assert "ann-02" in run("edit", dsn, "retired")
    assert "Restored 1 memory" in run("edit", dsn, "restore", "ann-02")
    assert "Corrected ann-03" in run("edit", dsn, "correct", "ann-03", "Ann planted roses.")
    assert "soft_delete" in run("edit", dsn, "history", "ann-02")
    out = run("consolidate", dsn, "--kinds", "episode", "--now", "2031-01-01", "--keep", "bob-13", "--dry-run")
    assert "[ ] prune bob-13" in out and "dry run: nothing written" in out
    out = run("consolidate", dsn, "--kinds", "episode", "--now", "2031-01-01", "--keep", "bob-13", "--yes")
    assert "decayed 14, soft-deleted 13, skipped 0" in out  # the correction's new row too
    with ms.open(dsn, read_only=True) as p:
        assert p.counts()["live"] == 1 and p.history("ann-05")[-1]["action"] == "prune"
    run("edit", dsn, "restore", "ann-05", "ann-06")
    monkeypatch.setenv("MEMVIZ_LLM_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("MEMVIZ_LLM_MODEL", "fake-chat")
    monkeypatch.setenv("MEMVIZ_LLM_API_KEY", "k")
    fake_openai.push(reply_json({"questions": ["What does Ann grow?"]}),
                     reply_json({"insights": [{"insight": "Ann grows tomatoes and herbs.", "evidence": [1]}]}))
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    assert "wrote 1 reflection: " in run("reflect", dsn, "--agent", "ann", "--questions", "1")
    fake_openai.push(reply_json({"questions": ["What does Ann grow?"]}),
                     reply_json({"insights": [{"insight": "ann grows  tomatoes and herbs.", "evidence": [1]}]}))
    out = run("reflect", dsn, "--agent", "ann", "--questions", "1", "--dry-run")
    assert "identical text" in out  # the duplicate check found the reflection just written
    assert "importance 0 of threshold" in run("reflect", dsn, "--agent", "ann", "--status")
    out = run("context", dsn, "--estimate", "--budget", "2000", "--text")
    assert "Ann grows tomatoes and herbs." in out and "Ann planted basil" in out and "Bob bought" in out
    assert "reflection" in run("diff", local, dsn)
    assert "added" in run("diff", dsn, "--from", "2020-01-01")
    assert "simulated" in run("clock", dsn, "--set", "2030-01-01")
    assert "none was missing" in run("index", dsn)
    with ms.open(dsn, read_only=True) as p:
        assert problems(p) == [] and p.schema_version() == 4
        back = np.array(p.arrays().ids)
    home = local + ".home.db"
    assert "copied" in run("copy", dsn, home)
    with ms.open(home, read_only=True) as h:
        assert list(h.arrays().ids) == list(back) and problems(h) == []


def test_import_into_an_empty_database_and_never_over_a_store(pg_db, tmp_path, capsys):  # noqa: F811
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "j1", "content": "Ann likes green tea.", "kind": "fact", "agent": "ann"}\n'
                   '{"id": "j2", "content": "Bob runs.", "kind": "fact", "agent": "bob"}\n')
    assert main(["import", "jsonl", str(src), "-o", pg_db]) == 0
    assert "imported 2 of 2 memories" in capsys.readouterr().out
    with ms.open(pg_db, read_only=True) as p:
        assert [r["content"] for r in p.get_many(["j1", "j2"])] == ["Ann likes green tea.", "Bob runs."]
        assert p.embedding_models()[0][2] == 2 and p.meta("import")["format"] == "jsonl"
    for extra in ([], ["--force"]):
        assert main(["import", "jsonl", str(src), "-o", pg_db, *extra]) == 2
        err = capsys.readouterr().err
        assert ("already has a `memories` table" if not extra else "drops no tables") in err and "Traceback" not in err
    with ms.open(pg_db, read_only=True) as p:
        assert p.counts()["total"] == 2


def test_rewrite_rows_writes_in_order_with_one_audit_entry_each(pgs, store):
    from memviz.store.common import RowWrite
    for s in (pgs, store):
        s.insert_memories([dict(id="x", kind="fact", content="x"), dict(id="y", kind="fact", content="y")])
        seen = {}

        def decide(cur, seen=seen):
            seen.update(cur)
            return [RowWrite("x", {"confidence": 0.5}, "a", {"confidence": 1.0}, {"confidence": 0.5}),
                    RowWrite("y", {"confidence": 0.25}, "b", None, {"confidence": 0.25}, "why"),
                    RowWrite("x", {"confidence": 0.125}, "c", {"confidence": 0.5}, {"confidence": 0.125}),
                    RowWrite("x", {"valid_until": 1_800_000_000, "tags": '["t"]'}, "d", None, None)]
        s.rewrite_rows(["x", "y", "gone"], ("confidence", "protected"), decide, actor="tester")
        assert seen == {"x": {"confidence": 1.0, "protected": 0}, "y": {"confidence": 1.0, "protected": 0}}
        x = s.get("x")
        assert (x["confidence"], x["valid_until"], x["tags"]) == (0.125, 1_800_000_000, ["t"])
        assert s.get("y")["confidence"] == 0.25
        assert [(h["action"], h["actor"]) for h in s.history("x")] == [("insert", "memviz"), ("a", "tester"),
                                                                       ("c", "tester"), ("d", "tester")]
        assert s.history("y")[-1]["note"] == "why"
        with pytest.raises(ms.ValidationError):
            s.rewrite_rows(["x"], ("embedding",), lambda cur: [])
