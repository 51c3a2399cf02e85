"""Judged sets and parameter sets kept with a store: written and read back, audited, refused
when they name no memory or the store is read-only, undone and redone like edits, carried by
`memviz copy`, and kept beside a framework store's mirror so that a rebuild of the mirror never
loses them. (PostgreSQL: tests/test_judge_pg.py.)"""
from __future__ import annotations

import json

import apsw
import numpy as np
import pytest
from conftest import unit_vectors

import memviz.store as ms
from memviz.edits import History, consistency_problems
from memviz.edits.judged import DeleteJudged, DeleteJudgedSet, DeleteParameterSet, SaveJudged, SaveParameterSet
from memviz.judge import JudgedQuery, JudgedSet
from memviz.judge.stored import (
    delete_parameters,
    delete_set,
    from_row,
    parameter_choices,
    read_set,
    save_parameters,
    save_query,
    save_set,
    saved_parameter_sets,
    to_row,
)
from memviz.retrieval import preset_params
from memviz.retrieval.presets import ParameterSet
from memviz.store.copy import copy_store
from memviz.store.judged import UNCHECKED, JudgedRow, SavedParameters, about_records


def _records(n=8):
    v = unit_vectors(n, 8, 3)
    return [{"id": f"m{i}", "kind": "fact", "agent": "ann", "content": f"ann fact {i}", "embedding": v[i],
             "embedding_model": "m", "event_time": 1_700_000_000 + 60 * i} for i in range(n)]


@pytest.fixture
def filled(tmp_path):
    s = ms.create(str(tmp_path / "s.db"))
    s.insert_memories(_records())
    yield s
    s.close()


def judged(name="trip", n=3, offset=0):
    return JudgedSet(name, tuple(
        JudgedQuery(f"q{i + offset}", {f"m{i}": 2, f"m{i + 1}": 1, f"m{i + 4}": 0}, query=f"what about fact {i}?",
                    as_of=1_700_000_500.0, agents=("ann",), judged_by="ann", judged_at=1_700_000_900.0)
        for i in range(n)))


def audit_count(store) -> int:
    return len(store.audit_entries())


def test_a_set_is_kept_in_order_and_read_back_as_it_was(filled):
    h = History(filled)
    out = h.perform(save_set(judged()))
    assert out.text == "Saved 3 judged queries in 'trip' (3 new, 0 replaced)" and out.ids == []
    assert filled.judged_sets() == [("trip", 3)]
    back = read_set(filled, "trip")
    assert back == judged()   # every field: grades, as_of, agents, who judged and when
    rows = filled.judged_queries("trip")
    assert [r.position for r in rows] == [0, 1, 2] and rows[0].judged_by == "ann" and rows[0].judged_at == 1_700_000_900.0
    # a second set, and a query replaced in place (its place kept)
    h.perform(save_set(judged("other", 1)))
    new_q1 = JudgedQuery("q1", {"m7": 1}, query="replaced")
    h.perform(save_query("trip", new_q1, shown=rows[1].query))
    assert [r.query_id for r in filled.judged_queries("trip")] == ["q0", "q1", "q2"]
    assert read_set(filled, "trip").by_id()["q1"] == new_q1
    assert filled.judged_sets() == [("other", 1), ("trip", 3)]
    with pytest.raises(KeyError, match="keeps no judged set 'nope'; it keeps: 'other', 'trip'"):
        read_set(filled, "nope")


def test_every_change_is_audited_and_the_memory_checks_skip_it(filled):
    before = audit_count(filled)
    History(filled).perform(save_set(judged()))
    entries = filled.audit_entries()[before:]
    assert [(e[2], e[3]) for e in entries] == [("judged:save", f"judged trip/q{i}") for i in range(3)]
    after = json.loads(entries[0][5])
    assert after["query"]["relevant"] == {"m0": 2, "m1": 1, "m4": 0} and after["position"] == 0
    assert all(about_records(e[2]) for e in entries) and about_records("undo:judged:save")
    assert not about_records("update")
    assert consistency_problems(filled) == []   # the audit replay follows memories only


def test_a_query_naming_no_memory_is_refused_with_nothing_written(filled):
    History(filled).perform(save_set(judged()))
    size, audits = filled.judged_queries("trip"), audit_count(filled)
    bad = JudgedSet("trip", (JudgedQuery("q9", {"m1": 1}, query="fine"),
                             JudgedQuery("q8", {"ghost": 1, "m2": 1}, query="x"),
                             JudgedQuery("q7", {"m3": 1}, like="nobody")))
    with pytest.raises(ms.ValidationError) as e:
        History(filled).perform(save_set(bad))
    msg = str(e.value)
    assert "2 queries name memories that are not in" in msg and "query 'q8' names 'ghost'" in msg
    assert "query 'q7' names 'nobody'" in msg and "nothing was saved" in msg
    assert filled.judged_queries("trip") == size and audit_count(filled) == audits


def test_a_change_made_elsewhere_is_a_conflict_not_overwritten(filled):
    h = History(filled)
    h.perform(save_set(judged()))
    shown = filled.judged_queries("trip")[0].query
    # another window replaces q0 meanwhile
    filled.change_judged("trip", [to_row(JudgedQuery("q0", {"m5": 1}, query="theirs"))])
    with pytest.raises(ms.ConflictError, match="'q0' of set 'trip' was changed elsewhere"):
        h.perform(save_query("trip", JudgedQuery("q0", {"m6": 1}, query="mine"), shown=shown))
    assert from_row(filled.judged_queries("trip")[0]).query == "theirs"
    # undoing the first save now finds q0 changed: refused, nothing written
    audits = audit_count(filled)
    with pytest.raises(ms.ConflictError):
        h.undo()
    assert audit_count(filled) == audits and from_row(filled.judged_queries("trip")[0]).query == "theirs"


def test_undo_and_redo_of_every_judged_set_step(filled):
    h = History(filled)
    h.perform(save_set(judged()))
    first = filled.judged_queries("trip")
    # replace one, add one
    h.perform(SaveJudged("trip", [to_row(JudgedQuery("q1", {"m7": 2}, query="new text")),
                                  to_row(JudgedQuery("q9", {"m6": 1}, query="added"))]))
    assert [r.query_id for r in filled.judged_queries("trip")] == ["q0", "q1", "q2", "q9"]
    assert h.undo_text == "Save 2 judged queries in trip"
    h.undo()
    assert filled.judged_queries("trip") == first   # q1 as it was, in its place; q9 gone
    h.redo()
    assert [from_row(r).query for r in filled.judged_queries("trip")] == [
        "what about fact 0?", "new text", "what about fact 2?", "added"]
    # delete one query; undo puts it back in its place
    h.perform(DeleteJudged("trip", ["q1"]))
    assert [r.query_id for r in filled.judged_queries("trip")] == ["q0", "q2", "q9"]
    h.undo()
    assert [r.query_id for r in filled.judged_queries("trip")] == ["q0", "q1", "q2", "q9"]
    h.redo()
    assert "q1" not in [r.query_id for r in filled.judged_queries("trip")]
    # delete the whole set
    whole = filled.judged_queries("trip")
    out = h.perform(delete_set("trip"))
    assert out.text == "Deleted judged set 'trip' (3 judged queries)" and filled.judged_sets() == []
    assert isinstance(h.done[-1], DeleteJudgedSet) and h.undo_text == "Delete judged set trip"
    h.undo()
    assert filled.judged_queries("trip") == whole
    h.redo()
    assert filled.judged_sets() == []
    with pytest.raises(ms.ValidationError, match="no judged set 'trip'"):
        h.perform(delete_set("trip"))
    for _ in range(3):   # the set deleted, the query deleted, the two saved
        h.undo()
    assert filled.judged_queries("trip") == first
    h.undo()   # the first save: the set is gone
    assert filled.judged_sets() == [] and not h.can_undo
    assert consistency_problems(filled) == []


def test_undo_and_redo_of_parameter_sets(filled):
    h = History(filled)
    tuned = ParameterSet.of("tuned", preset_params("dual-memory", alpha=0.8, beta=0.1, gamma=0.1, tau_hours=90.0),
                            "fitted for ndcg@10")
    out = h.perform(save_parameters(tuned))
    assert out.text == "Saved parameter set 'tuned' (dual-memory)"
    assert saved_parameter_sets(filled) == [tuned]
    assert saved_parameter_sets(filled)[0].params().tau_hours == 90.0
    assert [p.name for p in parameter_choices(filled)][-1] == "tuned"   # selectable beside the presets
    other = ParameterSet.of("tuned", preset_params("ada", decay=0.99))
    h.perform(save_parameters(other))
    assert saved_parameter_sets(filled) == [other]
    h.undo()
    assert saved_parameter_sets(filled) == [tuned]
    h.redo()
    assert saved_parameter_sets(filled) == [other]
    h.perform(delete_parameters("tuned"))
    assert filled.parameter_sets() == []
    h.undo()
    assert saved_parameter_sets(filled) == [other]
    h.redo()
    h.undo()
    h.undo()
    h.undo()
    assert filled.parameter_sets() == []
    with pytest.raises(ValueError, match="unknown preset"):
        save_parameters(ParameterSet("x", "no-such-preset"))
    # conflict: what was shown is not what is there
    filled.change_parameter_set("p", SavedParameters("p", "ada", '{"decay": 0.9}'))
    with pytest.raises(ms.ConflictError, match="'p' was changed elsewhere"):
        h.perform(SaveParameterSet(SavedParameters("p", "ada", '{"decay": 0.5}'), shown=None))
    with pytest.raises(ms.ConflictError, match="no parameter set 'gone'"):
        h.perform(DeleteParameterSet("gone"))
    assert [e[2] for e in filled.audit_entries() if e[3] == "parameters tuned"] == [
        "parameters:save", "parameters:save", "undo:parameters:save", "redo:parameters:save", "parameters:delete",
        "undo:parameters:delete", "redo:parameters:delete", "undo:parameters:delete", "undo:parameters:save",
        "undo:parameters:save"]


def test_a_read_only_store_refuses_with_what_to_do(filled, tmp_path):
    History(filled).perform(save_set(judged()))
    path = filled.path
    filled.close()
    with ms.open(path, read_only=True) as ro:
        assert ro.judged_sets() == [("trip", 3)]   # reading is fine
        with pytest.raises(ms.ReadOnlyError, match=r"open read-only \(opened with --read-only\): judged queries and "
                                                  r"parameter sets are kept with the store.*memviz judge eval DB FILE"):
            ro.change_judged("trip", [to_row(JudgedQuery("q5", {"m1": 1}, query="x"))])
        with pytest.raises(ms.ReadOnlyError):
            ro.change_parameter_set("p", SavedParameters("p", "ada"))


def test_a_store_from_before_the_migration_opened_read_only_has_none(tmp_path):
    path = str(tmp_path / "old.db")
    with ms.create(path) as s:
        s.insert_memories(_records(2))
    c = apsw.Connection(path)
    c.execute("DROP TABLE memviz_judged; DROP TABLE memviz_parameter_sets; DROP INDEX memviz_read_columns; "
              "DELETE FROM memviz_migrations WHERE version >= 3")   # migration 2's store
    c.close()
    with ms.open(path, read_only=True) as ro:
        assert ro.report.version == 2 and ro.judged_sets() == [] and ro.parameter_sets() == []
        assert ro.judged_queries("x") == []
    with ms.open(path) as rw:   # a writable open migrates it
        assert rw.report.version >= 3
        rw.change_judged("s", [to_row(JudgedQuery("q", {"m1": 1}, query="x"))])
        assert rw.judged_sets() == [("s", 1)]


def test_bad_rows_are_refused_before_any_write(filled):
    with pytest.raises(ms.ValidationError, match="JSON object"):
        filled.change_judged("s", [JudgedRow("q", "[1, 2]")])
    with pytest.raises(ms.ValidationError, match="written \\(or removed\\) twice"):
        filled.change_judged("s", [to_row(JudgedQuery("q", {"m1": 1}, query="x"))] * 2)
    with pytest.raises(ms.ValidationError, match="name must be non-empty"):
        filled.change_judged(" ", [to_row(JudgedQuery("q", {"m1": 1}, query="x"))])
    with pytest.raises(ms.ConflictError, match="has no query 'q'"):
        filled.change_judged("s", (), ["q"])
    with pytest.raises(ms.ValidationError, match="values must be a JSON object"):
        filled.change_parameter_set("p", SavedParameters("p", "ada", "nope"))
    assert filled.judged_sets() == [] and filled.parameter_sets() == [] and filled.change_judged("s") == {}
    assert UNCHECKED is not None and repr(UNCHECKED) == "UNCHECKED"


def test_copy_carries_judged_sets_and_parameter_sets(filled, tmp_path):
    h = History(filled)
    h.perform(save_set(judged()))
    h.perform(save_set(judged("other", 2, offset=5)))
    h.perform(save_parameters(ParameterSet.of("tuned", preset_params("ada", decay=0.99))))
    dst = str(tmp_path / "copy.db")
    copy_store(filled.path, dst)
    with ms.open(dst) as c:
        assert c.judged_sets() == filled.judged_sets()
        assert read_set(c, "trip") == read_set(filled, "trip") and read_set(c, "other") == read_set(filled, "other")
        assert c.parameter_sets() == filled.parameter_sets()
        assert consistency_problems(c) == []


# ------------------------------------------------------------------ a framework store: beside its mirror
@pytest.fixture
def langgraph_file(tmp_path, monkeypatch):
    from langgraph_stores import sqlite_facts
    monkeypatch.setenv("MEMVIZ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMVIZ_DATA_DIR", str(tmp_path / "data"))
    return sqlite_facts(tmp_path / "langgraph.db", [np.full(8, k + 1) for k in range(6)])


def test_a_framework_store_keeps_its_sets_beside_the_mirror_through_a_rebuild(langgraph_file, tmp_path, monkeypatch):
    import memviz.frameworks as fw
    from memviz.frameworks import mirror

    q = JudgedQuery("q1", {"item-1@memories.ann": 2, "item-2@memories.ann": 1}, query="fact one")
    with fw.open_source(langgraph_file) as s:
        assert s.judged_sets() == [] and not (tmp_path / "data" / "judged").exists()   # made on the first write
        h = History(s)
        h.perform(save_set(JudgedSet("lg", (q,))))
        h.perform(save_parameters(ParameterSet.of("tuned", preset_params("dual-memory", alpha=0.9))))
        with pytest.raises(ms.ValidationError, match="'item-9@memories.ann'"):   # checked against the mirror
            h.perform(save_query("lg", JudgedQuery("q2", {"item-9@memories.ann": 1}, query="x")))
        records = mirror.records_path(s.source)
        mirrored = mirror.mirror_path(s.source)
        assert records.startswith(str(tmp_path / "data")) and mirrored.startswith(str(tmp_path / "cache"))
    monkeypatch.setattr(mirror, "MIRROR_VERSION", mirror.MIRROR_VERSION + 1)   # every mirror is rebuilt
    with fw.open_source(langgraph_file) as s:
        assert s.mirror.meta("mirror.version") == mirror.MIRROR_VERSION   # rebuilt …
        assert read_set(s, "lg") == JudgedSet("lg", (q,))                # … and the set is there
        assert [p.name for p in saved_parameter_sets(s)] == ["tuned"]
        h = History(s)
        h.perform(delete_set("lg"))
        assert s.judged_sets() == []
        h.undo()
        assert read_set(s, "lg").ids == ("q1",)
        # memviz copy carries them out of the framework store
        dst = str(tmp_path / "native.db")
        copy_store(langgraph_file, dst, opener=fw.open_source)
    with ms.open(dst) as c:
        assert read_set(c, "lg") == JudgedSet("lg", (q,)) and [p.name for p in saved_parameter_sets(c)] == ["tuned"]
    with fw.open_source(langgraph_file, read_only=True) as ro:
        assert read_set(ro, "lg").ids == ("q1",)
        with pytest.raises(ms.ReadOnlyError, match=r"open read-only \(opened with --read-only\); nothing was changed"):
            History(ro).perform(save_set(JudgedSet("x", (q,))))
        with pytest.raises(ms.ReadOnlyError, match="opened with --read-only.*kept with the store"):
            ro.change_parameter_set("tuned", None)
        with pytest.raises(ms.ReadOnlyError, match="opened with --read-only.*kept with the store"):
            ro.change_judged("lg", (), ["q1"])
