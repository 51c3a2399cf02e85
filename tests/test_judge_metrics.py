"""memviz.judge.metrics against trec_eval's definitions: hand-worked cases (expected values
computed here from the definitions) and random rankings against a plain computation."""
from __future__ import annotations

import math
from math import log2

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memviz.judge import Evaluator, evaluate, measure

ALL = ("ndcg@10", "ndcg@3", "recall@1", "recall@5", "recall@10", "p@1", "p@5", "p@10", "mrr")

# A 5-memory ranking: grades 2, 0, 1 at ranks 1, 2, 4 (ranks 3 and 5 not judged), and a relevant
# memory (m6, grade 1) that is not retrieved.
RANKING = ["m1", "m2", "m3", "m4", "m5"]
QRELS = {"q": {"m1": 2, "m2": 0, "m4": 1, "m6": 1}}


def test_a_hand_worked_ranking():
    got = evaluate({"q": RANKING}, QRELS, ALL).per_query["q"]
    dcg10 = 2 / log2(2) + 1 / log2(5)                      # gain = grade, discount log2(rank + 1)
    ideal10 = 2 / log2(2) + 1 / log2(3) + 1 / log2(4)      # the judgments sorted: 2, 1, 1
    assert got["ndcg@10"] == pytest.approx(dcg10 / ideal10, abs=1e-12)
    dcg3, ideal3 = 2 / log2(2), 2 / log2(2) + 1 / log2(3) + 1 / log2(4)
    assert got["ndcg@3"] == pytest.approx(dcg3 / ideal3, abs=1e-12)
    # three relevant (grade ≥ 1): m1, m4, m6; grade 0 (m2) is not relevant
    assert got["recall@1"] == pytest.approx(1 / 3, abs=1e-12)
    assert got["recall@5"] == pytest.approx(2 / 3, abs=1e-12)
    assert got["recall@10"] == pytest.approx(2 / 3, abs=1e-12)
    assert got["p@1"] == 1.0
    assert got["p@5"] == pytest.approx(2 / 5, abs=1e-12)
    assert got["p@10"] == pytest.approx(2 / 10, abs=1e-12)  # depth 5 < 10: P@10 still divides by 10
    assert got["mrr"] == 1.0


def test_the_list_order_is_the_rank_whatever_the_ids():
    # trec_eval sorts a run by score and breaks ties by document id; memviz passes strictly
    # decreasing scores, so "z" (not relevant) stays above "a" (relevant) and "b" (grade 2)
    got = evaluate({"q": ["z", "a", "b"]}, {"q": {"a": 1, "b": 2}}, ALL).per_query["q"]
    assert got["mrr"] == 0.5
    assert got["ndcg@10"] == pytest.approx((1 / log2(3) + 2 / log2(4)) / (2 / log2(2) + 1 / log2(3)), abs=1e-12)
    assert got["p@1"] == 0.0


def test_ties_in_the_ideal_ranking_and_between_equal_grades():
    # four grade-1 memories: any order of them in the top 4 is ideal
    qrels = {"q": dict.fromkeys(["a", "b", "c", "d"], 1)}
    for order in (["a", "b", "c", "d"], ["d", "c", "b", "a"], ["c", "a", "d", "b"]):
        got = evaluate({"q": order}, qrels, ALL).per_query["q"]
        assert got["ndcg@10"] == pytest.approx(1.0, abs=1e-12)
        assert got["recall@5"] == 1.0


def test_a_query_with_nothing_relevant_retrieved_and_a_query_not_ranked():
    qrels = {"hit": {"a": 1}, "miss": {"a": 1, "b": 2}, "absent": {"c": 1}}
    ev = evaluate({"hit": ["a"], "miss": ["x", "y", "z"]}, qrels, ALL)
    assert ev.per_query["miss"] == dict.fromkeys(ALL, 0.0)
    assert ev.per_query["absent"] == dict.fromkeys(ALL, 0.0)  # not ranked: retrieved nothing
    assert ev.query_ids == ("hit", "miss", "absent")
    # the means are over every judged query (trec_eval -c)
    assert ev.means["mrr"] == pytest.approx(1 / 3, abs=1e-12)
    assert ev.means["p@1"] == pytest.approx(1 / 3, abs=1e-12)
    assert ev.values("recall@5") == {"hit": 1.0, "miss": 0.0, "absent": 0.0}


def test_grade_zero_judgments_count_as_not_relevant():
    got = evaluate({"q": ["zero", "one"]}, {"q": {"zero": 0, "one": 1}}, ALL).per_query["q"]
    assert got["mrr"] == 0.5
    assert got["p@1"] == 0.0
    assert got["ndcg@10"] == pytest.approx((1 / log2(3)) / 1.0, abs=1e-12)


def test_mrr_reads_past_the_deepest_cutoff():
    # only the part of a ranking the measures read is passed to trec_eval: down to rank 10 for
    # ndcg@10, and on to the first relevant for mrr; the values are those of the whole ranking
    ranking = [f"n{i}" for i in range(36)] + ["rel"] + [f"m{i}" for i in range(60)] + ["rel2"]
    qrels = {"q": {"rel": 1, "rel2": 2}}
    got = evaluate({"q": ranking}, qrels, ("ndcg@10", "mrr", "recall@5")).per_query["q"]
    assert got == {"ndcg@10": 0.0, "mrr": 1 / 37, "recall@5": 0.0}
    deep = evaluate({"q": ranking}, qrels, ("recall@100", "mrr")).per_query["q"]
    assert deep == {"recall@100": 1.0, "mrr": 1 / 37}


def test_an_evaluator_is_reused_across_rankings():
    ev = Evaluator(QRELS, ("mrr", "p@1"))
    assert ev.evaluate({"q": ["m4", "m1"]}).per_query["q"] == {"mrr": 1.0, "p@1": 1.0}
    assert ev.evaluate({"q": ["m2", "m1"]}).per_query["q"] == {"mrr": 0.5, "p@1": 0.0}
    assert ev.evaluate({"q": ("m5", "m3", "m6")}).per_query["q"] == {"mrr": pytest.approx(1 / 3), "p@1": 0.0}


def test_measure_names():
    assert measure("nDCG@10").trec == "ndcg_cut.10"
    assert measure("P@5").name == "p@5"
    assert measure("recall@7").key == "recall_7"
    assert measure("MRR").trec == "recip_rank"
    for bad in ("ndcg", "map", "recall@0", "p@x", "", 3):
        with pytest.raises(ValueError, match="unknown measure"):
            measure(bad)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="names 'm1' twice"):
        evaluate({"q": ["m1", "m2", "m1"]}, QRELS, ("p@5",))
    with pytest.raises(ValueError, match="not judged: 'other'"):
        evaluate({"q": RANKING, "other": ["m1"]}, QRELS)
    with pytest.raises(ValueError, match="judges no memory relevant"):
        evaluate({}, {"q": {"a": 0}})
    with pytest.raises(ValueError, match="grade of 'a' is 3"):
        evaluate({}, {"q": {"a": 3}})
    with pytest.raises(ValueError, match="no judged query"):
        evaluate({}, {})
    with pytest.raises(KeyError, match="p@3 was not evaluated"):
        evaluate({"q": RANKING}, QRELS, ("p@1",)).values("p@3")


def test_to_json_has_metrics_and_per_query():
    out = evaluate({"q": RANKING}, QRELS, ("mrr", "p@5")).to_json()
    assert out == {"metrics": {"mrr": 1.0, "p@5": 0.4}, "per_query": {"q": {"mrr": 1.0, "p@5": 0.4}}}


# ------------------------------------------------------------------ against a plain computation
def plain(ranking: list[str], grades: dict[str, int], name: str) -> float:
    """trec_eval's definitions written out, one measure at a time."""
    relevant = {m for m, g in grades.items() if g >= 1}
    if name == "mrr":
        return next((1 / r for r, m in enumerate(ranking, 1) if m in relevant), 0.0)
    family, k = name.split("@")
    k = int(k)
    top = ranking[:k]
    if family == "recall":
        return sum(m in relevant for m in top) / len(relevant)
    if family == "p":
        return sum(m in relevant for m in top) / k
    dcg = sum(grades.get(m, 0) / log2(r + 1) for r, m in enumerate(top, 1))
    ideal = sum(g / log2(r + 1) for r, g in enumerate(sorted(grades.values(), reverse=True)[:k], 1))
    return dcg / ideal


@st.composite
def judged_runs(draw):
    pool = [f"m{i}" for i in range(40)]
    qrels, rankings = {}, {}
    for q in range(draw(st.integers(1, 6))):
        judged = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=12, unique=True))
        grades = {m: draw(st.integers(0, 2)) for m in judged}
        if not any(grades.values()):
            grades[judged[0]] = draw(st.integers(1, 2))
        qrels[f"q{q}"] = grades
        if draw(st.booleans()) or q == 0:
            rankings[f"q{q}"] = draw(st.permutations(pool))[:draw(st.integers(0, 40))]
    measures = draw(st.lists(st.sampled_from(ALL + ("ndcg@1", "recall@20", "p@3", "ndcg@40")), min_size=1,
                             max_size=5, unique=True))
    return qrels, rankings, measures


@settings(max_examples=300, deadline=None)
@given(judged_runs())
def test_equal_to_a_plain_computation_on_random_rankings(case):
    qrels, rankings, measures = case
    ev = evaluate(rankings, qrels, measures)
    for qid, grades in qrels.items():
        for name in measures:
            assert abs(ev.per_query[qid][name] - plain(list(rankings.get(qid, [])), grades, name)) <= 1e-9
    for name in measures:
        expected = math.fsum(plain(list(rankings.get(q, [])), g, name) for q, g in qrels.items()) / len(qrels)
        assert abs(ev.means[name] - expected) <= 1e-9
