"""Per-query wins and losses against a baseline, and the top-k entries and exits of a change."""
from __future__ import annotations

import pytest

from memviz.judge import Move, NearMiss, held_back_by, near_misses, top_k_changes, wins_losses


def test_wins_and_losses_against_a_pinned_baseline():
    base = {"a": 0.5, "b": 0.5, "c": 0.2, "d": 1.0}
    now = {"d": 0.25, "c": 0.2 + 1e-13, "b": 0.9, "a": 0.6}
    wl = wins_losses(now, base)
    assert (wl.better, wl.worse, wl.same) == (2, 1, 1)  # c moved by float noise only: the same
    assert [d.query_id for d in wl.deltas] == ["a", "b", "c", "d"]  # the baseline's order
    assert [d.query_id for d in wl.wins()] == ["b", "a"]  # largest gain first
    assert [(d.query_id, d.gain) for d in wl.losses()] == [("d", -0.75)]
    assert wl.mean_delta == pytest.approx((0.1 + 0.4 + 0 - 0.75) / 4)
    assert wl.summary() == "2 better, 1 worse, 1 same (mean change -0.0625)"
    with pytest.raises(ValueError, match="missing: 'd'"):
        wins_losses({"a": 1, "b": 1, "c": 1}, base)
    with pytest.raises(ValueError, match="not in the baseline: 'z'"):
        wins_losses({**now, "z": 1}, base)


def test_top_k_entries_and_exits():
    before = {"q1": ["a", "b", "c", "d", "e"], "q2": ["a", "b", "c"], "q3": ["x", "y"]}
    after = {"q1": ["c", "e", "a", "b", "d"], "q2": ["c", "b", "a"], "q4": ["n"]}
    changes = {c.query_id: c for c in top_k_changes(before, after, 3)}
    assert list(changes) == ["q1", "q3", "q4"]  # q2 only changed its order within the top 3
    assert changes["q1"].entered == (Move("e", 5, 2),)
    assert changes["q1"].left == (Move("b", 2, 4),)
    assert changes["q3"].entered == () and changes["q3"].left == (Move("x", 1, None), Move("y", 2, None))
    assert changes["q4"].entered == (Move("n", None, 1),)
    assert top_k_changes(before, before, 3) == []
    with pytest.raises(ValueError, match="k must be at least 1"):
        top_k_changes(before, after, 0)


def test_near_misses_and_what_held_them_back():
    grades = {"a": 2, "b": 1, "c": 0, "d": 1, "e": 2, "f": 1}
    ranking = ["x", "a", "y", "c", "d", "z", "b"]
    got = near_misses(grades, ranking, 3)
    # a is in the top 3; c is grade 0; d (rank 5) and b (rank 7) are below the cut; e and f are
    # not ranked at all (filtered out or deeper), the higher grade first
    assert got == [NearMiss("d", 1, 5), NearMiss("b", 1, 7), NearMiss("e", 2, None), NearMiss("f", 1, None)]
    assert near_misses({"x": 1}, ranking, 1) == []
    with pytest.raises(ValueError, match="k must be at least 1"):
        near_misses(grades, ranking, 0)
    # weighted contributions of the missed memory and of the k-th: recency falls furthest short
    component, short = held_back_by({"relevance": 0.40, "recency": 0.01, "importance": 0.10},
                                    {"relevance": 0.30, "recency": 0.25, "importance": 0.12})
    assert component == "recency" and short == pytest.approx(0.24)
    with pytest.raises(ValueError, match="components differ"):
        held_back_by({"relevance": 1.0}, {"recency": 1.0})
