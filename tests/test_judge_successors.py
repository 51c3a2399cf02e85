"""A judged memory corrected since it was judged: its grade goes to the memory that replaced it
when the old one is no longer a candidate (retired at the query's moment), stays on the old one
when it still is (a query asked before the correction, or the correction undone), and a grade
the user gave the replacement is kept."""
from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np
import pytest

import memviz.store as ms
from memviz.edits import Correct, History
from memviz.embed import default_embedder
from memviz.judge import JudgedQuery, JudgedSet
from memviz.judge.evaluator import JudgedEvaluator
from memviz.judge.successors import Successors
from memviz.retrieval import preset_params

SAMPLE = Path(__file__).resolve().parents[1] / "sample_dbs" / "assistant.db"


def test_grades_follow_chains_and_merges_to_the_first_candidates():
    # a -> b -> c (corrected twice); d and e merged into f; g -> h -> g (a cycle)
    s = Successors([("b", "a"), ("c", "b"), ("f", "d"), ("f", "e"), ("h", "g"), ("g", "h")])
    live = {"c", "f", "x"}.__contains__
    assert s.heirs("a", live) == ["c"] and s.heirs("g", live) == [] and s.heirs("x", live) == []
    assert "a" in s and "c" not in s and s.heirs("d", live) == s.heirs("e", live) == ["f"]
    q = JudgedQuery("q", {"a": 2, "d": 1, "e": 2, "x": 1}, query="t")
    assert dict(s.follow(q, live).relevant) == {"x": 1, "c": 2, "f": 2}
    # the old memory still a candidate (asked before the correction): it keeps its grade
    assert s.follow(q, {"a", "c", "d", "e", "f", "x"}.__contains__) is q
    # the user graded the replacement: that grade stands, the old one's is not added to it
    q2 = JudgedQuery("q2", {"a": 2, "c": 1}, query="t")
    assert dict(s.follow(q2, live).relevant) == {"c": 1}
    # ... and a replacement graded 0 leaves the query as the user judged it (nothing else to find)
    q3 = JudgedQuery("q3", {"a": 2, "c": 0}, query="t")
    assert s.follow(q3, live) is q3
    # a cycle with no candidate moves nothing
    q4 = JudgedQuery("q4", {"g": 1}, query="t")
    assert s.follow(q4, live) is q4


@pytest.fixture
def corrected(tmp_path):
    """A copy of the sample where one memory, judged highly relevant to a query made of its own
    words, is corrected (a new memory supersedes it)."""
    path = tmp_path / "assistant.db"
    shutil.copyfile(SAMPLE, path)
    store = ms.open(path)
    a = store.arrays()
    old = next(str(m) for i, m in enumerate(a.ids) if a.kind[i] == "fact" and np.isnan(a.valid_until[i]))
    text = store.get(old)["content"]
    asked_before = time.time() - 1
    history = History(store)
    action = Correct(old, text + " (checked again, still true)", embedder=default_embedder())
    history.perform(action)
    query = " ".join(text.split()[:10])
    judged = JudgedSet("s", (JudgedQuery("now", {old: 2}, query=query),
                             JudgedQuery("before", {old: 2}, query=query, as_of=asked_before)))
    yield store, history, old, action.new_id, judged
    store.close()


def test_the_measure_follows_a_correction(corrected):
    store, history, old, new, judged = corrected
    params = preset_params("dual-memory").replace(alpha=1.0, beta=0.0, gamma=0.0)
    ev = JudgedEvaluator(store, judged, params, now=time.time() + 60)
    by_id = ev.measured.by_id()
    assert dict(by_id["now"].relevant) == {new: 2}          # the old memory is retired now
    assert dict(by_id["before"].relevant) == {old: 2}       # asked before the correction: it was the one
    top = ev.rankings(params, 10)
    assert new in top["now"] and old not in top["now"]
    assert ev.metrics(params).per_query["now"]["recall@10"] == 1.0
    history.undo()                                            # the old memory is current again
    ev = JudgedEvaluator(store, judged, params, now=time.time() + 60)
    assert dict(ev.measured.by_id()["now"].relevant) == {old: 2}
    assert old in ev.rankings(params, 10)["now"]
