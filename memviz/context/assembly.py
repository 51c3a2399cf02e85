"""HTM's working memory (HTM ADR-002): what goes into the prompt under a token budget.

Exactly as the seed states it:
- budget: 128,000 tokens by default, less a 10% margin for token-count error, so 115,200 usable;
- every memory is a node with `token_count`, `importance`, `added_at` (= created_at) and
  `last_accessed` (never accessed = added_at, as HTM's add sets it);
- eviction, when the working memory holds more than the budget: lowest
  importance / (seconds_since_last_access + 1) first, until enough tokens are freed; evicted
  memories stay in the store (nothing is deleted), they are only out of the prompt;
- assembly strategies: `recent` (created_at newest first), `important` (importance first),
  `balanced` (default: importance × 1 / (1 + age_hours));
- filling: in strategy order until the next memory does not fit, then stop (the seed leaves
  this detail to its code: upstream's assemble_context `break`s there, so the cut is one line).
Where upstream HTM differs (it later dropped importance for access counts) see README.md here.

Added for users of other systems: `query`, the ranking of a retrieval preset filled the same way.
Protected memories are pinned: first in the prompt (in strategy order among themselves) and
never evicted. Ties are broken in store order everywhere, so every result is reproducible.

Cost: a few numpy passes and one sort over the candidates (no SQL, no Python loop per row):
a panel can call `assemble` on every budget or scrubber change (see bench/history.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

DEFAULT_BUDGET = 128_000
MARGIN = 0.10
SEED_STRATEGIES = ("balanced", "recent", "important")
STRATEGIES = SEED_STRATEGIES + ("query",)
SEPARATOR = "\n\n"  # between memories in the assembled text, as HTM's assemble_context joins them
HOUR = 3600.0


@dataclass
class Dropped:
    """A memory left out of the prompt, and why."""

    row: int
    tokens: int
    score: float   # its strategy score (cut) or eviction score (evicted)
    stage: str     # "cut": below the cut line; "evicted": out of working memory before assembly
    reason: str


@dataclass
class Assembly:
    strategy: str
    budget: int                  # nominal (the model's window for memory)
    usable: int                  # budget less the margin: what may be filled
    now: float
    rows: np.ndarray             # included rows, prompt order
    tokens: np.ndarray           # token count of each included row
    cumulative: np.ndarray       # running total after each included row
    pinned: np.ndarray           # bool per included row: protected, pinned in
    score: np.ndarray            # strategy score per included row (NaN for a pinned row the query did not score)
    order: np.ndarray            # every row still in working memory, in strategy order (included first)
    order_score: np.ndarray
    evicted: np.ndarray          # rows evicted from working memory, lowest eviction score first
    eviction_score: np.ndarray
    candidates: int
    below: list[Dropped] = field(default_factory=list)  # just below the cut, then the first evicted
    notes: list[str] = field(default_factory=list)

    @property
    def used(self) -> int:
        return int(self.cumulative[-1]) if len(self.cumulative) else 0

    @property
    def cut(self) -> int:
        """Index in `order` of the first memory left out (= how many went in)."""
        return len(self.rows)

    def text(self, texts) -> str:
        """The assembled context exactly as it would be sent: the memories' texts in prompt
        order, separated by one blank line."""
        return SEPARATOR.join(str(texts[r]) for r in self.rows.tolist())


def _desc_order(rows: np.ndarray, key: np.ndarray) -> np.ndarray:
    """`rows` (ascending) by `key` descending, ties in store order: a stable sort keeps them."""
    return rows[np.argsort(-key, kind="stable")]


def strategy_scores(arrays, rows: np.ndarray, strategy: str, now: float) -> np.ndarray:
    """The seed's sort key of each row (higher = earlier in the prompt)."""
    if strategy == "recent":
        return arrays.created_at[rows].astype(np.float64)
    if strategy == "important":
        return arrays.importance[rows].astype(np.float64)
    if strategy == "balanced":
        age_hours = np.maximum(now - arrays.created_at[rows], 0.0) / HOUR
        return arrays.importance[rows] * (1.0 / (1.0 + age_hours))
    raise ValueError(f"unknown strategy {strategy!r}; choose one of: {', '.join(STRATEGIES)}")


def eviction_scores(arrays, rows: np.ndarray, now: float) -> np.ndarray:
    """importance / (seconds since last access + 1); never accessed counts from created_at."""
    la = arrays.last_accessed[rows]
    la = np.where(np.isnan(la), arrays.created_at[rows], la)
    return arrays.importance[rows] / (np.maximum(now - la, 0.0) + 1.0)


def assemble(arrays, tokens: np.ndarray, *, now: float, strategy: str = "balanced", budget: int = DEFAULT_BUDGET,
             margin: float = MARGIN, candidates: np.ndarray | None = None, ranking=None,
             pin_protected: bool = True, show_below: int = 5) -> Assembly:
    """The prompt under `budget` tokens. `tokens`: per row of `arrays`. `candidates`: bool mask
    of the rows the agent could use (default: the live ones). `ranking` (strategy "query"):
    (rows best first, their scores), e.g. from `query_ranking`."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of: {', '.join(STRATEGIES)}")
    budget = int(budget)
    if budget < 1:
        raise ValueError(f"the budget must be at least 1 token, not {budget}")
    if not 0 <= margin < 1:
        raise ValueError(f"the margin must be in [0, 1), not {margin}")
    usable = int(budget * (1.0 - margin))
    tokens = np.asarray(tokens, dtype=np.int64)
    mask = np.isnan(arrays.valid_until) if candidates is None else np.asarray(candidates, bool)
    protected = arrays.protected & mask if pin_protected else np.zeros(len(mask), bool)
    notes: list[str] = []

    if strategy == "query":
        if ranking is None:
            raise ValueError("the query strategy needs a ranking (a query and a preset)")
        r_rows, r_scores = (np.asarray(x) for x in ranking)
        keep = mask[r_rows] & ~protected[r_rows]
        pin_rows = np.flatnonzero(protected)
        score_of = np.full(len(mask), np.nan)
        score_of[r_rows] = r_scores
        pin_rows = _desc_order(pin_rows, np.nan_to_num(score_of[pin_rows], nan=-np.inf))
        order = np.concatenate([pin_rows, r_rows[keep]]).astype(np.int64)
        order_score = score_of[order]
        evicted, ev_score, n_cands = np.zeros(0, np.int64), np.zeros(0), len(order)
    else:
        cand = np.flatnonzero(mask)
        n_cands = len(cand)
        evicted, ev_score, excess = _evict(arrays, tokens, cand, protected, now, budget)
        if len(evicted):
            notes.append(f"working memory held {excess + budget:,} tokens, {excess:,} over the budget: "
                         f"{len(evicted):,} memories evicted, lowest importance/(seconds since access + 1) first")
            keep = np.ones(len(mask), bool)
            keep[evicted] = False
            cand = cand[keep[cand]]
        s = strategy_scores(arrays, cand, strategy, now)
        pinned_c = protected[cand]
        pin_rows = _desc_order(cand[pinned_c], s[pinned_c])
        rest = _desc_order(cand[~pinned_c], s[~pinned_c])
        order = np.concatenate([pin_rows, rest]).astype(np.int64)
        score_of = np.full(len(mask), np.nan)
        score_of[cand] = s
        order_score = score_of[order]

    t = tokens[order]
    cum = np.cumsum(t)
    n_in = int(np.searchsorted(cum, usable, side="right"))  # stop at the first that does not fit
    rows = order[:n_in]
    pinned = protected[rows]
    n_pinned = int(protected[order].sum())
    if n_in < n_pinned:
        notes.append(f"the protected memories alone need {int(t[:n_pinned].sum()):,} tokens: "
                     f"only {n_in} of {n_pinned} fit in {usable:,}")
    below = _below(order, order_score, t, cum, n_in, usable, strategy, show_below)
    below += [Dropped(int(r), int(tokens[r]), float(e), "evicted",
                      f"evicted from working memory: importance/(seconds since last access + 1) = {e:.3g}, "
                      "among the lowest when it had to make room")
              for r, e in zip(evicted[:show_below].tolist(), ev_score[:show_below].tolist())]
    return Assembly(strategy=strategy, budget=budget, usable=usable, now=float(now), rows=rows, tokens=t[:n_in],
                    cumulative=cum[:n_in], pinned=pinned, score=order_score[:n_in], order=order,
                    order_score=order_score, evicted=evicted, eviction_score=ev_score, candidates=n_cands,
                    below=below, notes=notes)


def _evict(arrays, tokens, cand, protected, now, budget):
    """The seed's eviction over the working memory `cand`: (rows evicted lowest score first,
    their scores, tokens over the budget). Protected memories are never evicted."""
    total = int(tokens[cand].sum())
    excess = total - budget
    if excess <= 0:
        return np.zeros(0, np.int64), np.zeros(0), 0
    free = cand[~protected[cand]]
    e = eviction_scores(arrays, free, now)
    by = np.argsort(e, kind="stable")  # lowest score first, ties in store order (free is ascending)
    free, e = free[by], e[by]
    freed = np.cumsum(tokens[free])
    k = min(int(np.searchsorted(freed, excess, side="left")) + 1, len(free))  # until freed >= excess
    return free[:k], e[:k], excess


def _below(order, order_score, t, cum, n_in, usable, strategy, show) -> list[Dropped]:
    out = []
    left = usable - (int(cum[n_in - 1]) if n_in else 0)
    for j in range(n_in, min(n_in + show, len(order))):
        if j == n_in:
            why = (f"did not fit: needs {int(t[j]):,} tokens, {left:,} left of {usable:,}; "
                   "filling stops at the first memory that does not fit")
        else:
            why = f"below the cut: {strategy} rank {j + 1}"
        out.append(Dropped(int(order[j]), int(t[j]), float(order_score[j]), "cut", why))
    return out


def query_ranking(engine, params) -> tuple[np.ndarray, np.ndarray]:
    """(rows best first, scores) of every memory a retrieval preset scores: its exact top k
    first, then the other candidates by score (ties in store order)."""
    return result_ranking(engine.score(params))


def result_ranking(res) -> tuple[np.ndarray, np.ndarray]:
    """query_ranking of a retrieval Result already made (e.g. the query panel's current one)."""
    s = res.all_scores
    scored = np.flatnonzero(~np.isnan(s))
    head = np.asarray(res.rows, np.int64)
    rest_mask = np.ones(len(s), bool)
    rest_mask[head] = False
    rest = scored[rest_mask[scored]]
    rest = _desc_order(rest, s[rest])
    rows = np.concatenate([head, rest]).astype(np.int64)
    return rows, s[rows]


def report(plan: Assembly, arrays, content, counter, *, as_of=None, query=None, preset=None,
           notes=()) -> dict:
    """The assembly as plain data (JSON export of `memviz context --json` and the prompt view)."""
    from ..store import iso

    def num(v):
        v = float(v)
        return None if np.isnan(v) else v
    text = plan.text(content)
    a = arrays
    return {
        "strategy": plan.strategy, "preset": preset if plan.strategy == "query" else None, "query": query,
        "budget": plan.budget, "margin": round(1 - plan.usable / plan.budget, 6) if plan.budget else None,
        "usable": plan.usable, "used": plan.used,
        "text_tokens": int(counter.count(text)), "tokenizer": counter.name, "exact_tokens": counter.exact,
        "now": iso(plan.now), "as_of": iso(as_of) if as_of is not None else None, "candidates": plan.candidates,
        "included": [{"rank": i + 1, "id": a.ids[r], "kind": a.kind[r], "agent": a.agent[r], "tokens": int(t),
                      "cumulative": int(c), "pinned": bool(p), "score": num(s), "content": content[r]}
                     for i, (r, t, c, p, s) in enumerate(zip(plan.rows.tolist(), plan.tokens, plan.cumulative,
                                                             plan.pinned, plan.score))],
        "below": [{"id": a.ids[d.row], "tokens": d.tokens, "stage": d.stage, "score": num(d.score),
                   "reason": d.reason, "content": content[d.row]} for d in plan.below],
        "evicted": len(plan.evicted), "notes": list(notes) + plan.notes, "text": text,
    }
