"""The window's judging models without Qt (memviz.session.judging): marks per query and per
store, the judged query they make, and the tuning model's readout, picture and fit jobs run
as the window runs them (here on the test's thread) against a real store and evaluator."""
from __future__ import annotations

import numpy as np
import pytest
from test_app_support import T0, build_store

from memviz.judge import InvalidJudgment, JudgedQuery, JudgedSet
from memviz.judge.evaluator import KNOBS
from memviz.retrieval import Params
from memviz.retrieval.presets import preset_params
from memviz.session.judging import MarkBook, Tuning, judged_query, make_axis, query_of, suggest_id, weight_span
from memviz.session.query import Query
from memviz.tasks import quiet

A, B = Query("text", "peanut allergy"), Query("like", "ep03")


def test_marks_belong_to_a_query_and_unsaved_ones_outlive_a_store_switch():
    book = MarkBook()
    fired = []
    book.changed.connect(lambda: fired.append(1))
    book.open_store("one.db")
    with pytest.raises(ValueError, match="run a query first"):
        book.mark(["m1"], 2)
    book.show(A)
    book.mark(["m1", "m2"], 2)
    book.mark(["m2"], 0)
    book.mark(["m3"], 1)
    book.mark(["m3"], None)
    with pytest.raises(ValueError, match="0, 1 or 2"):
        book.mark(["m1"], 3)
    assert book.marks.grades == {"m1": 2, "m2": 0} and book.marks.dirty and fired
    book.show(B)
    assert book.marks is None and book.grade("m1") is None
    book.mark(["m9"], 0)
    assert not book.marks.savable   # only "not relevant": nothing to find, nothing to save
    book.show(A)
    assert book.grade("m1") == 2 and [m.query for m in book.unsaved()] == [A, B]

    assert book.open_store("two.db") == 2   # kept, not lost
    assert book.marks is None and book.unsaved() == [] and book.unsaved_elsewhere() == 2
    assert book.open_store("one.db") == 0
    book.show(A)
    assert book.grade("m1") == 2
    book.saved_as(book.marks, "set", "q1")
    assert not book.marks.dirty and [m.query for m in book.unsaved()] == [B]
    book.forget_saved("set", lambda qid: False)   # its query left the set (an undo): unsaved again
    assert book.marks.dirty
    book.discard()
    assert book.unsaved() == [] and book.unsaved_elsewhere() == 0


def test_loading_a_judged_query_keeps_newer_unsaved_marks():
    book = MarkBook()
    book.open_store("s.db")
    jq = JudgedQuery("q", {"m1": 2, "m2": 1}, query="peanut allergy")
    book.load(A, jq, "set")
    book.show(A)
    assert book.marks.grades == {"m1": 2, "m2": 1} and not book.marks.dirty and book.marks.query_id == "q"
    book.mark(["m2"], 0)
    book.load(A, jq, "set")   # asked again: the user's change stays
    assert book.grade("m2") == 0


def test_the_judged_query_the_marks_make():
    book = MarkBook()
    book.open_store("s.db")
    book.show(B)
    m = book.mark(["ep04", "fact1"], 2)
    params = Params(agents=("alice",), kinds=("fact",), tags=("x",), as_of=None)
    jq = judged_query(m, "like-ep03", params, T0 + 5, "ann", judged_at=T0 + 9)
    assert (jq.like, jq.query, jq.as_of, jq.agents, jq.kinds, jq.tags) == ("ep03", "", T0 + 5, ("alice",), ("fact",), ("x",))
    assert (jq.judged_by, jq.judged_at, dict(jq.relevant)) == ("ann", T0 + 9, {"ep04": 2, "fact1": 2})
    assert query_of(jq) == B and query_of(JudgedQuery("t", {"a": 1}, query="hi")) == Query("text", "hi")
    m.grades = {"ep04": 0}
    with pytest.raises(InvalidJudgment, match="judges no memory relevant"):
        judged_query(m, "x", params, T0, "ann")
    assert suggest_id(A, ["peanut-allergy"]) == "peanut-allergy-2"
    assert suggest_id(Query("text", "What is Lina's allergy?!"), []) == "what-is-lina-s-allergy"
    assert suggest_id(B, []) == "like-ep03"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = build_store(tmp_path_factory.mktemp("judging") / "mem.db")
    yield s
    s.close()


JUDGED = JudgedSet("t", (
    JudgedQuery("allergy", {"fact0": 2, "ep00": 1}, query="peanut allergy"),
    JudgedQuery("dog", {"fact2b": 2, "ep08": 1}, query="Bob's dog"),
    JudgedQuery("brazil", {"refl1": 2, "ep09": 1}, query="trip to Brazil"),
    JudgedQuery("sister", {"fact1": 2}, query="Alice's sister", agents=("alice",)),
))


def test_readout_picture_and_fit_jobs_over_a_real_evaluator(store):
    t = Tuning()
    t.set_sets([("t", len(JUDGED))])
    t.choose("t")
    params = preset_params("dual-memory", k=3)
    assert t.set_judged(JUDGED) and not t.set_judged(JUDGED)
    assert t.needs_evaluator(params)
    t.prepared(t.prepare_job(store, store.arrays(), params)(quiet()))
    assert not t.needs_evaluator(params.replace(alpha=0.9, tau_hours=5.0))   # weights and τ re-rank
    assert t.needs_evaluator(preset_params("ada"))                            # another preset: a new one

    # the readout: the four measures at k, against the preset's defaults unless pinned
    moved = params.replace(alpha=2.0, beta=0.0)
    r = t.readout_job(moved)(quiet())
    assert t.read_out(r) and r.now.measures == ("recall@3", "ndcg@10", "mrr", "p@3")
    assert r.baseline == t.defaults_of(moved) and r.baseline.k == 3
    exact = t.evaluator.metrics(moved, r.now.measures).means
    assert r.now.means == exact
    assert r.wins.better + r.wins.worse + r.wins.same == len(JUDGED)
    t.pin(params.replace(gamma=1.0))
    assert t.readout_job(moved)(quiet()).baseline == params.replace(gamma=1.0)
    assert t.baseline_text(moved) == "the pinned setting"
    t.pin(None)
    t.query_id = "sister"
    near = t.readout_job(params.replace(k=1))(quiet()).near
    assert all(h.rank is None or h.rank > 1 for h in near)

    # the picture: α × β at the current γ, values from the evaluator; wanted again only when
    # something it does not draw changes (or the setting leaves its axes)
    assert t.axes_for(params) == ("alpha", "beta")
    assert t.grid_wanted(params)
    g = t.grid_job(params, 5)(quiet())
    assert t.drawn(g) and g.values.shape == (5, 5)
    assert g.values[2, 3] == pytest.approx(t.evaluator.metrics(
        params.replace(alpha=g.x.values[3], beta=g.y.values[2]), ("ndcg@10",)).means["ndcg@10"])
    assert not t.grid_wanted(params.replace(alpha=0.3, beta=0.1))
    assert t.grid_wanted(params.replace(gamma=0.5))
    assert t.grid_wanted(params.replace(alpha=4.0))   # off the axes: drawn again, wider
    t.family = "mrr"
    assert t.grid_wanted(params)

    # a fit, and what accepting it would change
    assert t.fit_check(params) is None
    report = t.fit_job(params, "ndcg@10", 2, False)(quiet())
    t.fitted(report, params)
    assert t.fitted_point(params) == report.fitted and t.fitted_point(preset_params("ada")) is None
    ch = t.changes_job(params, params.replace(**report.fitted))(quiet())
    assert ch.recent is None and ch.asked == 0   # memviz's own stores do not record the agent's queries
    assert {c.query_id for c in ch.judged} <= set(JUDGED.ids)
    assert "no weights or knobs" in t.fit_check(preset_params("hybrid"))
    t2 = Tuning()
    t2.set_judged(JudgedSet("one", JUDGED.queries[:1]))
    assert "at least 2" in t2.fit_check(params)


def test_the_picture_axes():
    p = preset_params("dual-memory")
    assert weight_span(p) == 1.0 and weight_span(p.replace(alpha=3.5)) == 5.0
    ax = make_axis("alpha", p, 5)
    assert ax.values == (0.0, 0.25, 0.5, 0.75, 1.0) and ax.knob is None and ax.holds(0.5)
    tau = make_axis("tau_hours", p, 4)
    assert tau.knob is not None and tau.values[0] == pytest.approx(KNOBS["tau_hours"].lo)
    assert np.allclose([tau.position(v) for v in tau.values], np.linspace(0, 1, 4))
    wide = make_axis("tau_hours", p.replace(tau_hours=1e6), 3)   # widened to hold the setting
    assert wide.holds(1e6) and wide.values[-1] == 1e6 and make_axis("decay", p.replace(decay=0.9), 3).holds(0.9)
