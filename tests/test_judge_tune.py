"""The fit over the engine: on a small store whose judged memories are the top of a hidden
weighting, fit_preset recovers it and recommends it; a preset with nothing to fit says so; a
fitted set is saved with the store and selectable like a preset."""
from __future__ import annotations

import numpy as np
import pytest

import memviz.store as ms
from memviz.edits import History
from memviz.judge import JudgedQuery, JudgedSet
from memviz.judge.evaluator import JudgedEvaluator, query_params
from memviz.judge.stored import parameter_choices, save_parameters
from memviz.judge.tune import NothingToFit, fit_preset, fit_space, fitted_params, fitted_set
from memviz.retrieval import Engine, preset_params
from memviz.retrieval.presets import preset

NOW = 1_700_000_000 + 3600 * 200.0
HIDDEN = dict(alpha=0.25, beta=0.75, gamma=0.0, tau_hours=40.0)


@pytest.fixture(scope="module")
def hidden_store(tmp_path_factory):
    """80 memories (random vectors, times over 200 hours, importance 1–10); 30 queries by example,
    each judging relevant the top 4 of dual-memory under HIDDEN weights (grade 2 for the first)."""
    rng = np.random.default_rng(11)
    n = 80
    v = rng.normal(size=(n, 16)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    path = str(tmp_path_factory.mktemp("fit") / "s.db")
    s = ms.create(path)
    s.insert_memories([{"id": f"m{i}", "kind": "fact", "agent": f"a{i % 3}", "content": f"memory {i}", "embedding": v[i],
                        "embedding_model": "m", "importance": float(rng.integers(1, 11)),
                        "event_time": 1_700_000_000 + int(rng.integers(0, 200 * 3600))} for i in range(n)])
    engine = Engine(s, now=NOW)
    hidden = preset_params("dual-memory", **HIDDEN)
    queries = []
    for i in range(30):
        q = JudgedQuery(f"q{i}", {"m0": 1}, like=f"m{i}")
        engine.set_query(like=q.like)
        top = engine.score(query_params(hidden, q).replace(k=4)).ids
        queries.append(JudgedQuery(q.id, {m: 2 if r == 0 else 1 for r, m in enumerate(top)}, like=q.like))
    yield s, JudgedSet("hidden", tuple(queries))
    s.close()


def test_the_fit_recovers_a_known_weighting_and_recommends_it(hidden_store):
    s, judged = hidden_store
    start = preset_params("dual-memory")   # 0.5, 0.3, 0.2, τ 24 h
    ev = JudgedEvaluator(s, judged, start, now=NOW)
    report = fit_preset(ev, "dual-memory", folds=5, seed=0)
    assert report.recommended, report.reason
    assert report.after > report.before + 0.1 and report.after > 0.9
    got = report.fitted
    total = got["alpha"] + got["beta"] + got["gamma"]
    assert total == pytest.approx(1.0)   # the start's total
    assert [got["alpha"] / total, got["beta"] / total, got["gamma"] / total] == pytest.approx([0.25, 0.75, 0.0], abs=0.15)
    assert got["tau_hours"] == pytest.approx(40.0, rel=0.6)
    # what the report's parameters measure on every query: near the hidden weighting's 1.0
    fitted = fitted_params(report, start)
    assert ev.metrics(fitted, ("ndcg@10",)).means["ndcg@10"] > 0.95
    assert fit_preset(ev, "dual-memory", folds=5, seed=0).to_json() == report.to_json()   # deterministic
    # saved with the store, selectable beside the presets
    ps = fitted_set(report, "hidden-fit", start)
    History(s).perform(save_parameters(ps))
    chosen = {p.name: p for p in parameter_choices(s)}["hidden-fit"]
    assert chosen.params().alpha == pytest.approx(got["alpha"]) and "fitted for ndcg@10" in chosen.description


def test_what_a_fit_moves_and_what_has_nothing_to_fit():
    assert fit_space("dual-memory").weights == ("alpha", "beta", "gamma")
    assert [k.name for k in fit_space("dual-memory").knobs] == ["tau_hours"]
    assert [k.name for k in fit_space("generative-agents").knobs] == ["decay"]   # not agent_weights
    assert [k.name for k in fit_space("ada").knobs] == ["decay"]
    for name in ("hybrid", "working-memory"):
        with pytest.raises(NothingToFit, match=f"the {name} preset has no weights or knobs to fit"):
            fit_space(name)
    assert not preset("hybrid").weights


def test_a_fit_on_the_engine_of_generative_agents_keeps_its_total(hidden_store):
    s, judged = hidden_store
    start = preset_params("generative-agents")
    ev = JudgedEvaluator(s, judged, start, now=NOW)
    report = fit_preset(ev, coarse=2, knob_points=3, rounds=1, folds=3)
    assert sum(report.fitted[w] for w in ("alpha", "beta", "gamma")) == pytest.approx(5.5)
    assert report.after >= report.before or not report.recommended
    if not report.recommended:
        assert report.params == report.start
    with pytest.raises(ValueError, match="prepared for the generative-agents preset, not ada"):
        fit_preset(ev, "ada")
