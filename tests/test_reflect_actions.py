"""Reflection and consolidation as steps of the shared undo History (memviz.edits)."""
import pytest
from fake_openai import reply_json
from test_consolidation import NOW, conf, decayed, seed
from test_reflect_flow import mem, reflector  # noqa: F401

from memviz.edits import History
from memviz.reflect import plan_consolidation
from memviz.reflect.undoable import AcceptReflections, Consolidate
from memviz.store.errors import ValidationError


def test_accepted_reflections_undo_and_redo(mem, fake_openai):  # noqa: F811
    fake_openai.push(reply_json({"questions": ["How is Bob?", "What does Ann grow?"]}),
                     reply_json({"insights": [{"insight": "Bob is stressed.", "evidence": [1]}]}),
                     reply_json({"insights": [{"insight": "Ann grows tomatoes.", "evidence": [1]}]}))
    r = reflector(mem, fake_openai)
    run = r.propose()
    with pytest.raises(ValidationError, match="no reflection was accepted"):
        AcceptReflections(r, run)
    run.proposals[0].accept()
    run.proposals[1].reject()
    h = History(mem)
    action = AcceptReflections(r, run)
    assert action.ids == [run.proposals[0].id]
    out = h.perform(action)
    assert out.ids == [run.proposals[0].id] and out.text == "Wrote 1 reflection"
    row = mem.get(run.proposals[0].id)
    assert row["content"] == "Bob is stressed." and row["valid_until"] is None
    assert mem.get(run.proposals[1].id) is None  # rejected: absent
    assert h.undo_text == "Reflect (1 reflection)"
    h.undo()
    assert mem.get(run.proposals[0].id)["valid_until"] is not None
    h.redo()
    assert mem.get(run.proposals[0].id)["valid_until"] is None
    assert [e["action"] for e in mem.history(run.proposals[0].id)] == ["insert", "undo:reflect", "redo:reflect"]


def test_consolidation_undo_and_redo(store):
    seed(store)
    plan = plan_consolidation(store, now=NOW)
    plan.untick("weak")
    h = History(store)
    out = h.perform(Consolidate(plan))
    assert out.text == "Consolidated: 5 decayed, 3 soft-deleted" and out.warning is None
    decayed_old = conf(store, "old")
    h.undo()
    assert conf(store, "old") == 1.0 and store.get("old")["valid_until"] is None
    assert plan_consolidation(store, now=NOW).decay[0].decayed_from is None  # undone: as if never decayed
    h.redo()
    assert conf(store, "old") == decayed_old and store.get("old")["valid_until"] is not None
    # redone: the next night decays only the one extra day
    nxt = {d.id: d for d in plan_consolidation(store, now=NOW + 86400).decay}
    assert nxt["young"].after == pytest.approx(decayed(1.0, 0.1, 3))
    assert nxt["young"].decayed_from == NOW
