"""What the agent sees, and when. No Qt here.

    counter = TokenCounter()                       # Llama 2 BPE shipped in wordllama, else ≈ chars/4
    content, tags = load_texts(store, arrays)      # once per load
    tokens = counter.count_many(content)           # once per load (off the GUI thread: it is slow on a large store)
    timeline = Timeline(store, arrays)             # once per load: the audit log, indexed
    view = timeline.at(T)                          # per scrubber step: the arrays as they were at T
    plan = assemble(view.arrays, tokens, now=T, strategy="balanced", budget=128_000, candidates=view.live)
    plan.text(content)                             # the exact text sent
    diff_moments(store, timeline, t1, t2)          # Change records with the memory ids involved
"""
from .asof import AsOfView, Timeline
from .assembly import (
    DEFAULT_BUDGET,
    MARGIN,
    SEED_STRATEGIES,
    SEPARATOR,
    STRATEGIES,
    Assembly,
    Dropped,
    assemble,
    eviction_scores,
    query_ranking,
    report,
    result_ranking,
    strategy_scores,
)
from .diff import Change, Diff, diff_agents, diff_moments, diff_stores, heading
from .texts import load_texts
from .tokens import TokenCounter

__all__ = [
    "DEFAULT_BUDGET",
    "MARGIN",
    "SEED_STRATEGIES",
    "SEPARATOR",
    "STRATEGIES",
    "AsOfView",
    "Assembly",
    "Change",
    "Diff",
    "Dropped",
    "Timeline",
    "TokenCounter",
    "assemble",
    "diff_agents",
    "diff_moments",
    "diff_stores",
    "heading",
    "eviction_scores",
    "load_texts",
    "query_ranking",
    "report",
    "result_ranking",
    "strategy_scores",
]
