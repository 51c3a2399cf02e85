"""HTM's prompt assembly on hand-worked examples: strategies, cut line, eviction, pinning,
the query strategy and the token counter."""
import numpy as np
import pytest

from memviz.context import TokenCounter, assemble, load_texts, query_ranking
from memviz.retrieval import Engine, preset_params

NOW = 1_800_000_000.0
H = 3600.0
# name: (importance, hours old, seconds since last access or None, tokens)
NODES = {
    "A": (8, 10, 99, 40),
    "B": (2, 0, None, 10),
    "C": (9, 2, 899, 50),
    "D": (5, 1, 4, 20),
}


@pytest.fixture
def small(store):
    recs = []
    for name, (imp, hours, since, _) in NODES.items():
        created = NOW - hours * H
        recs.append({"id": name, "kind": "fact", "agent": "a", "content": f"memory {name}", "importance": imp,
                     "created_at": created, "event_time": created,
                     "last_accessed": None if since is None else NOW - since})
    store.insert_memories(recs)
    arrays = store.arrays()
    tokens = np.array([NODES[i][3] for i in arrays.ids], np.int64)
    return store, arrays, tokens


def names(arrays, rows):
    return [arrays.ids[r] for r in rows]


def test_balanced_by_hand(small):
    _, arrays, tokens = small
    # importance / (1 + age hours): A 8/11 = .727, B 2/1 = 2, C 9/3 = 3, D 5/2 = 2.5
    plan = assemble(arrays, tokens, now=NOW, strategy="balanced", budget=120)
    assert plan.usable == 108  # 120 less 10 %
    assert names(arrays, plan.order) == ["C", "D", "B", "A"]
    assert names(arrays, plan.rows) == ["C", "D", "B"]          # 50, 70, 80; A would make 120
    assert plan.cumulative.tolist() == [50, 70, 80]
    assert plan.score.tolist() == pytest.approx([3.0, 2.5, 2.0])
    assert len(plan.evicted) == 0  # 120 tokens in working memory: not over the budget
    first = plan.below[0]
    assert arrays.ids[first.row] == "A" and first.stage == "cut"
    assert "needs 40 tokens, 28 left of 108" in first.reason


def test_recent_and_important_by_hand(small):
    _, arrays, tokens = small
    recent = assemble(arrays, tokens, now=NOW, strategy="recent", budget=120)
    assert names(arrays, recent.order) == ["B", "D", "C", "A"]   # 0 h, 1 h, 2 h, 10 h old
    assert names(arrays, recent.rows) == ["B", "D", "C"]
    important = assemble(arrays, tokens, now=NOW, strategy="important", budget=120)
    assert names(arrays, important.order) == ["C", "A", "D", "B"]
    # C 50, A 90, D would make 110 > 108: filling stops there, so B (10, which would fit) stays out too
    assert names(arrays, important.rows) == ["C", "A"]
    assert [arrays.ids[d.row] for d in important.below] == ["D", "B"]
    assert "needs 20 tokens, 18 left" in important.below[0].reason


def test_eviction_lowest_score_first_never_deletes(small):
    store, arrays, tokens = small
    # budget 100 < 120 in working memory: 20 tokens must go. importance / (seconds since access + 1):
    # A 8/100 = .08, B 2/(0+1) = 2 (never accessed: counted from creation, now), C 9/900 = .01, D 5/5 = 1
    plan = assemble(arrays, tokens, now=NOW, strategy="balanced", budget=100)
    assert names(arrays, plan.evicted) == ["C"]            # 50 tokens freed >= 20: stop
    assert plan.eviction_score.tolist() == pytest.approx([0.01])
    assert names(arrays, plan.rows) == ["D", "B", "A"]      # 20, 30, 70 <= 90
    assert any(d.stage == "evicted" and arrays.ids[d.row] == "C" for d in plan.below)
    assert store.counts()["live"] == 4  # nothing deleted


def test_protected_pinned_and_never_evicted(small):
    _, arrays, tokens = small
    arrays.protected[arrays.index_of("C")] = True
    arrays.protected[arrays.index_of("B")] = True
    plan = assemble(arrays, tokens, now=NOW, strategy="important", budget=100)
    # C is protected: the lowest unprotected score is A (.08, 40 tokens >= 20)
    assert names(arrays, plan.evicted) == ["A"]
    # pinned first in strategy order among themselves (C 9 before B 2), then D
    assert names(arrays, plan.rows) == ["C", "B", "D"]
    assert plan.pinned.tolist() == [True, True, False]


def test_assembled_text_is_the_contents_in_prompt_order(small):
    store, arrays, tokens = small
    content, _ = load_texts(store, arrays)
    plan = assemble(arrays, tokens, now=NOW, strategy="recent", budget=120)
    assert plan.text(content) == "memory B\n\nmemory D\n\nmemory C"


def test_query_strategy_fills_a_presets_ranking(small):
    store, arrays, tokens = small
    engine = Engine(store, arrays, now=NOW)
    params = preset_params("working-memory", k=2)  # importance × 1/(1 + age hours): C, D, B, A
    rows, scores = query_ranking(engine, params)
    assert names(arrays, rows) == ["C", "D", "B", "A"]
    assert names(arrays, rows[:2]) == engine.score(params).ids
    plan = assemble(arrays, tokens, now=NOW, strategy="query", budget=80, ranking=(rows, scores))
    assert names(arrays, plan.rows) == ["C", "D"]  # usable 72: C 50, D 70; B would make 80
    assert plan.score.tolist() == pytest.approx([3.0, 2.5])


def test_retired_memories_are_not_candidates(small):
    store, arrays, tokens = small
    store.set_valid_until("C", NOW - 10)
    arrays = store.arrays()
    plan = assemble(arrays, tokens, now=NOW, strategy="balanced", budget=1000)
    assert names(arrays, plan.rows) == ["D", "B", "A"]


def test_bad_settings_are_refused_with_a_message(small):
    _, arrays, tokens = small
    with pytest.raises(ValueError, match="unknown strategy"):
        assemble(arrays, tokens, now=NOW, strategy="fifo")
    with pytest.raises(ValueError, match="at least 1 token"):
        assemble(arrays, tokens, now=NOW, budget=0)
    with pytest.raises(ValueError, match="needs a ranking"):
        assemble(arrays, tokens, now=NOW, strategy="query")


def test_token_counter_is_a_real_tokenizer_with_a_labelled_fallback():
    counter = TokenCounter()
    assert counter.exact and "Llama 2" in counter.name
    # SentencePiece pieces: "▁Hello", "▁world" (no BOS: what the text adds to a prompt)
    assert counter.count("Hello world") == 2
    assert counter.count_many(["Hello world", "", "restaurant"]).tolist() == [2, 0, 1]
    rough = TokenCounter(use_tokenizer=False)
    assert not rough.exact and rough.name.startswith("estimate")
    assert rough.count_many(["Hello world", ""]).tolist() == [3, 0]  # ceil(11 / 4)
