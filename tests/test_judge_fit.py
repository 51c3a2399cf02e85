"""The cross-validated fit and its folds, on objectives whose answer is known, and on a toy
ranking function made of numpy arrays (not the engine) over synthetic relevance."""
from __future__ import annotations

import math

import numpy as np
import pytest

from memviz.judge import LOG_COMPLEMENT, Evaluator, Knob, Space, fit, kfold

W = ("alpha", "beta", "gamma")
TAU = Knob("tau_hours", 0.1, 1000.0)
IDS = [f"q{i}" for i in range(20)]


def proportions(p):
    total = sum(p[n] for n in W)
    return [p[n] / total for n in W]


# ------------------------------------------------------------------ folds
def test_kfold_partitions_the_queries():
    folds = kfold(IDS, 3, seed=1)
    tests = [set(f.test) for f in folds]
    assert sorted(q for t in tests for q in t) == sorted(IDS)  # each query held out once
    assert sorted(len(t) for t in tests) == [6, 7, 7]
    for f in folds:
        assert set(f.train) == set(IDS) - set(f.test) and list(f.train) == sorted(f.train)
    assert kfold(list(reversed(IDS)), 3, seed=1) == folds  # the ids' order does not matter
    assert kfold(IDS, 3, seed=2) != folds


def test_kfold_by_group_keeps_each_group_in_one_fold():
    groups = {q: f"conv-{int(q[1:]) % 7}" for q in IDS}
    folds = kfold(IDS, 3, seed=0, groups=groups)
    for f in folds:
        held = {groups[q] for q in f.test}
        assert not held & {groups[q] for q in f.train}
    assert sorted(q for f in folds for q in f.test) == sorted(IDS)
    sizes = sorted(len(f.test) for f in folds)
    assert sizes[-1] - sizes[0] <= 3  # the greedy balance: at most one group's size apart


def test_kfold_refuses_what_cannot_be_split():
    with pytest.raises(ValueError, match="k must be from 2"):
        kfold(IDS[:3], 4)
    with pytest.raises(ValueError, match="k must be from 2"):
        kfold(IDS, 1)
    with pytest.raises(ValueError, match="5 folds of 2 groups"):
        kfold(IDS, 5, groups={q: q[-1] in "02468" for q in IDS})
    with pytest.raises(ValueError, match="no group for the queries 'q19'"):
        kfold(IDS, 2, groups={q: 0 for q in IDS[:-1]})
    with pytest.raises(ValueError, match="'q1' is given twice"):
        kfold(IDS + ["q1"], 2)


# ------------------------------------------------------------------ knobs and spaces
def test_knob_scales():
    assert TAU.value(TAU.unit(24.0)) == pytest.approx(24.0)
    assert TAU.value(0.5) == pytest.approx(10.0)  # halfway on a log scale of 0.1 … 1000
    decay = Knob("decay", 0.9, 0.9999, LOG_COMPLEMENT)
    assert decay.value(0.5) == pytest.approx(1 - math.sqrt(0.1 * 0.0001))
    assert decay.value(decay.unit(0.995)) == pytest.approx(0.995)
    for bad in (("t", 0.0, 1.0), ("t", 2.0, 1.0), ("t", 1.0, math.inf)):
        with pytest.raises(ValueError):
            Knob(*bad)
    with pytest.raises(ValueError, match="hi < 1"):
        Knob("d", 0.5, 1.0, LOG_COMPLEMENT)
    with pytest.raises(ValueError, match="named twice"):
        Space(weights=("tau_hours",), knobs=(TAU,))


# ------------------------------------------------------------------ objectives with a known answer
def smooth(params, ids):
    """Best at proportions 0.2 / 0.5 / 0.3 and τ = 24 h, the same shape for every query."""
    w = proportions(params)
    miss = sum((a - b) ** 2 for a, b in zip(w, (0.2, 0.5, 0.3))) + 0.05 * math.log10(params["tau_hours"] / 24) ** 2
    return {q: 1.0 - miss + 0.01 * int(q[1:]) for q in ids}


START = {"alpha": 1.0, "beta": 1.0, "gamma": 1.0, "tau_hours": 1.0, "k": 10}


def test_it_finds_a_known_best_and_recommends_it():
    report = fit(smooth, Space(knobs=(TAU,)), START, IDS, folds=4, seed=3, metric="toy")
    got = report.fitted
    assert proportions(got) == pytest.approx([0.2, 0.5, 0.3], abs=0.02)
    assert got["tau_hours"] == pytest.approx(24.0, rel=0.2)
    assert sum(got[n] for n in W) == pytest.approx(3.0)  # at the start's total
    assert got["k"] == 10  # not searched: passed through
    assert report.recommended and report.params == got
    assert report.after > report.before
    assert all(f.gain > 0 for f in report.folds) and len(report.folds) == 4
    assert report.per_query.better == len(IDS)
    assert "above the fold spread" in report.reason
    text = "\n".join(report.summary())
    assert "held-out toy over 4 folds" in text and "recommended: " in text


def test_a_box_of_weights():
    def box(params, ids):
        miss = (params["alpha"] - 0.5) ** 2 + (params["beta"] - 1.5) ** 2 + params["gamma"] ** 2
        return {q: -miss for q in ids}
    report = fit(box, Space(simplex=False, weight_max=2.0), {"alpha": 1, "beta": 1, "gamma": 1}, IDS, folds=2)
    assert [report.fitted[n] for n in W] == pytest.approx([0.5, 1.5, 0.0], abs=0.02)
    assert report.recommended


def test_a_flat_objective_keeps_the_start():
    calls = []

    def flat(params, ids):
        calls.append(params)
        return dict.fromkeys(ids, 0.4)
    report = fit(flat, Space(knobs=(TAU,)), START, IDS, folds=5)
    assert report.fitted == START and report.params == START
    assert not report.recommended and "nothing better" in report.reason
    assert report.gain == 0 and report.gain_sd == 0
    assert (report.per_query.better, report.per_query.worse) == (0, 0)
    assert calls[0] == START  # the start is measured as given
    # each point asked once: the start, the grid (15 weight × 5 τ points), and in each of the 4
    # rounds of refinement the start's neighbours (6 moves between two weights, 2 of τ)
    assert report.evaluations == len(calls) == 1 + 15 * 5 + 4 * (6 + 2)


def test_a_gain_on_the_training_folds_that_does_not_hold_out_is_not_recommended():
    # two kinds of query want opposite weights; grouped folds hold out one group at a time, so
    # each fit follows the majority of the other groups and loses on the group held out
    groups = {q: int(q[1:]) // 5 for q in IDS}  # 4 groups of 5

    def opposed(params, ids):
        a, b, _ = proportions(params)
        return {q: a if groups[q] < 2 else b for q in ids}
    start = {"alpha": 1.0, "beta": 1.0, "gamma": 1.0}
    report = fit(opposed, Space(), start, IDS, folds=4, groups=groups)
    assert all(f.gain < 0 for f in report.folds)
    assert report.fitted != start  # on all queries something scores better than the start …
    assert not report.recommended and report.params == start  # … but not on held-out queries
    assert "not above the fold spread" in report.reason
    assert report.per_query.worse == len(IDS)


def test_the_same_seed_gives_the_same_report():
    def bumpy(params, ids):
        a, b, g = proportions(params)
        return {q: math.sin(7 * a * (1 + int(q[1:]) % 3)) + math.cos(5 * b) * g + math.log(params["tau_hours"]) % 1
                for q in ids}
    one = fit(bumpy, Space(knobs=(TAU,)), START, IDS, folds=5, seed=11)
    two = fit(bumpy, Space(knobs=(TAU,)), START, IDS, folds=5, seed=11)
    assert one.to_json() == two.to_json()
    assert one.to_json()["folds"] != fit(bumpy, Space(knobs=(TAU,)), START, IDS, folds=5, seed=12).to_json()["folds"]


def test_the_start_outside_the_knob_range_is_still_the_start():
    def flat(params, ids):
        return dict.fromkeys(ids, 1.0)
    start = {**START, "tau_hours": 5000.0}
    report = fit(flat, Space(knobs=(TAU,)), start, IDS, folds=2)
    assert report.fitted == start and not report.recommended


def test_bad_arguments():
    with pytest.raises(ValueError, match="no value for gamma"):
        fit(smooth, Space(knobs=(TAU,)), {"alpha": 1, "beta": 1, "tau_hours": 1}, IDS)
    with pytest.raises(ValueError, match="weight beta is -1"):
        fit(smooth, Space(knobs=(TAU,)), {**START, "beta": -1}, IDS)
    with pytest.raises(ValueError, match="tau_hours is 0"):
        fit(smooth, Space(knobs=(TAU,)), {**START, "tau_hours": 0}, IDS)
    with pytest.raises(ValueError, match="gave None for query 'q0'"):
        fit(lambda p, ids: {}, Space(), START, IDS)
    with pytest.raises(ValueError, match="gave nan"):
        fit(lambda p, ids: dict.fromkeys(ids, math.nan), Space(), START, IDS)


# ------------------------------------------------------------------ a toy ranking function
def test_a_toy_ranking_over_synthetic_relevance():
    """Memories with a per-query relevance, an age and an importance; the judged memories of
    each query are the top 6 of a hidden weighting (α .5, β .4, γ .1, τ 30 h). Starting from
    relevance alone, the fit should recover a weighting close to the hidden one and gain on
    held-out queries."""
    rng = np.random.default_rng(7)
    n, nq = 400, 60
    age = rng.uniform(0, 400, n)
    importance = rng.integers(1, 11, n) / 10
    relevance = rng.uniform(0, 1, (nq, n))
    names = np.array([f"m{i}" for i in range(n)])
    qids = [f"t{i}" for i in range(nq)]

    def scores(p, i):
        return p["alpha"] * relevance[i] + p["beta"] * np.exp(-age / p["tau_hours"]) + p["gamma"] * importance

    hidden = {"alpha": 0.5, "beta": 0.4, "gamma": 0.1, "tau_hours": 30.0}
    qrels = {}
    for i, q in enumerate(qids):
        top = np.argsort(-scores(hidden, i), kind="stable")[:6]
        qrels[q] = {names[j]: (2 if r < 2 else 1) for r, j in enumerate(top)}
    evaluator = Evaluator(qrels, ("ndcg@10",))

    def metric_of(params, ids):
        rankings = {q: names[np.argsort(-scores(params, qids.index(q)), kind="stable")[:20]].tolist() for q in ids}
        return evaluator.evaluate(rankings).values("ndcg@10")

    start = {"alpha": 1.0, "beta": 0.0, "gamma": 0.0, "tau_hours": 1.0}
    report = fit(metric_of, Space(knobs=(Knob("tau_hours", 0.5, 2000.0),)), start, qids, folds=5, seed=0, metric="ndcg@10")
    assert report.recommended
    assert report.before < 0.5 and report.after > 0.9
    assert proportions(report.fitted) == pytest.approx([0.5, 0.4, 0.1], abs=0.1)
    assert report.fitted["tau_hours"] == pytest.approx(30.0, rel=0.5)
    assert report.per_query.better > 0.8 * nq and report.per_query.worse == 0
    assert metric_of(report.fitted, qids) == pytest.approx(metric_of(hidden, qids), abs=0.1)


def test_progress_per_fold_and_cancel_before_the_next_ranking():
    from memviz.tasks import Cancelled, Task
    heard = []
    report = fit(smooth, Space(knobs=(TAU,)), START, IDS, folds=3, task=Task(on_progress=lambda f, t: heard.append((f, t))))
    assert heard == [(0.0, "Fitting: fold 1 of 3"), (0.25, "Fitting: fold 2 of 3"), (0.5, "Fitting: fold 3 of 3"),
                     (0.75, "Fitting: every query"), (1.0, "Fitted")]
    assert report.recommended

    task, calls = Task(), []

    def cancelling(params, ids):
        calls.append(params)
        if len(calls) == 10:
            task.cancel()
        return smooth(params, ids)
    with pytest.raises(Cancelled):
        fit(cancelling, Space(knobs=(TAU,)), START, IDS, folds=3, task=task)
    assert len(calls) == 10  # no ranking after the cancel


def test_a_gain_within_the_fold_spread_is_not_recommended_though_above_its_standard_error():
    # three groups gain from relevance alone, the fourth loses half as much: held-out fold gains
    # +.67, +.67, +.67, -.33: mean .42, above the standard error (.25) but not the spread (sd .5)
    groups = {q: int(q[1:]) // 5 for q in IDS}
    slope = {0: 1.0, 1: 1.0, 2: 1.0, 3: -0.5}

    def mixed(params, ids):
        a, _, _ = proportions(params)
        return {q: slope[groups[q]] * a for q in ids}
    start = {"alpha": 1.0, "beta": 1.0, "gamma": 1.0}
    report = fit(mixed, Space(), start, IDS, folds=4, groups=groups)
    gains = sorted(f.gain for f in report.folds)
    assert gains == pytest.approx([-1 / 3, 2 / 3, 2 / 3, 2 / 3])
    assert report.gain == pytest.approx(5 / 12) and report.gain_sd == pytest.approx(0.5)
    assert report.gain > report.gain_sd / 2   # above the standard error (sd / √4) …
    assert not report.recommended and report.params == start   # … but within the spread
    assert "not above the fold spread" in report.reason and "0.5000" in report.reason
