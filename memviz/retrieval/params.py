"""What a query asks for (Params) and what it returns (Result). No Qt here."""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

import numpy as np

_TUPLE_FIELDS = ("agents", "kinds", "tags")


@dataclass(frozen=True)
class Params:
    """Everything `Engine.score` needs besides the query. Frozen and hashable, so a change of
    one field is `params.replace(alpha=0.7)` and the engine can cache by field values.

    alpha/beta/gamma weigh relevance/recency/importance in every preset that adds them
    (the dual-memory design's naming, GLOSSARY). A preset ignores the fields it does not use (`preset(name).uses`).
    """

    preset: str = "dual-memory"
    alpha: float = 0.5            # relevance weight
    beta: float = 0.3             # recency weight
    gamma: float = 0.2            # importance weight
    tau_hours: float = 24.0       # dual-memory: recency = exp(-age_hours / tau_hours)
    decay: float = 0.995          # generative-agents: recency_decay; ada: lambda
    k: int = 10
    as_of: float | None = None    # epoch seconds: replay the store as it was then
    agents: tuple[str, ...] | None = None
    kinds: tuple[str, ...] | None = None
    tags: tuple[str, ...] | None = None          # a memory matches if it has any of these tags
    time_range: tuple[float | None, float | None] | None = None  # on event_time, inclusive; None = open end
    include_retired: bool = False  # also superseded / soft-deleted memories
    protected_only: bool = False
    confidence_decay: bool = False  # multiply by the assistant memory's (ADR 005) confidence x exp(-decay_rate x days^0.8)
    rrf_k: int = 60                 # hybrid: reciprocal rank fusion constant
    agent_weights: bool = True      # generative-agents: per-agent weights/decay from memviz_meta "ga_weights"

    def __post_init__(self):
        # lists from callers become tuples so Params stays hashable
        for name in _TUPLE_FIELDS:
            v = getattr(self, name)
            if v is not None and not isinstance(v, tuple):
                object.__setattr__(self, name, (v,) if isinstance(v, str) else tuple(v))
        if self.time_range is not None and not isinstance(self.time_range, tuple):
            object.__setattr__(self, "time_range", tuple(self.time_range))
        if int(self.k) < 1:
            raise ValueError(f"k must be at least 1, not {self.k}")
        if self.tau_hours <= 0:
            raise ValueError(f"the recency time constant must be positive, not {self.tau_hours} hours")
        if not 0 < self.decay <= 1:
            raise ValueError(f"the recency decay must be in (0, 1], not {self.decay}")

    def replace(self, **changes) -> Params:
        return replace(self, **changes)

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class Result:
    """A ranking with its explanation: every result carries its components."""

    rows: np.ndarray                  # int indices into engine.arrays, best first, length <= k
    ids: list[str]
    score: np.ndarray                 # (len(rows),) float64
    raw: dict[str, np.ndarray]        # per component raw values for `rows` (plus informative extras)
    weighted: dict[str, np.ndarray]   # weighted contributions; they sum to `score`
    all_scores: np.ndarray            # (len(arrays),) score of every row, NaN where not a candidate
    candidates: int                   # how many rows were scored
    params: Params | None = None
    notes: list[str] = field(default_factory=list)  # things the user should know (e.g. rows without vectors)

    def __len__(self) -> int:
        return len(self.rows)

    def rank_of(self, memory_id: str) -> int | None:
        """1-based rank of a memory in this result, None when it is not in the top k."""
        try:
            return self.ids.index(memory_id) + 1
        except ValueError:
            return None

    def explain(self, i: int) -> dict:
        """One result as a plain dict: id, rank, score, each raw and weighted component."""
        out = {"id": self.ids[i], "rank": i + 1, "score": float(self.score[i])}
        for name, vals in self.raw.items():
            out[name] = _plain(vals[i])
        for name, vals in self.weighted.items():
            out[name + "_weighted"] = _plain(vals[i])
        return out


def _plain(v):
    v = v.item() if hasattr(v, "item") else v
    if isinstance(v, float) and v != v:
        return None
    return v


def rank_changes(before: Result, after: Result) -> dict[str, tuple[int | None, int | None]]:
    """id -> (rank before, rank after) for every memory in either top k (None = not in it),
    e.g. to show how moving a weight reorders the results."""
    ids = list(dict.fromkeys(list(before.ids) + list(after.ids)))
    return {m: (before.rank_of(m), after.rank_of(m)) for m in ids}
