"""Comparing two settings query by query: wins and losses against a pinned baseline, and what
a change of parameters would change in each query's top k (entries and exits). Qt-free; the
window's readout, the fit's report and the CLI read these."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: per-query differences within this are "same" (float noise of equal rankings is far below it)
SAME_WITHIN = 1e-9


@dataclass(frozen=True)
class QueryDelta:
    query_id: str
    baseline: float
    value: float

    @property
    def delta(self) -> float:
        return self.value - self.baseline


@dataclass(frozen=True)
class WinsLosses:
    """A setting against a baseline, query by query: the differences (in the queries' order)
    and how many got better, worse or stayed the same."""

    deltas: tuple[QueryDelta, ...]
    better: int
    worse: int
    same: int

    @property
    def mean_delta(self) -> float:
        return math.fsum(d.delta for d in self.deltas) / len(self.deltas) if self.deltas else 0.0

    def wins(self) -> list[QueryDelta]:
        """The queries that got better, largest gain first (ties in the queries' order)."""
        return sorted((d for d in self.deltas if d.delta > SAME_WITHIN), key=lambda d: -d.delta)

    def losses(self) -> list[QueryDelta]:
        """The queries that got worse, largest loss first."""
        return sorted((d for d in self.deltas if d.delta < -SAME_WITHIN), key=lambda d: d.delta)

    def summary(self) -> str:
        return f"{self.better} better, {self.worse} worse, {self.same} same (mean change {self.mean_delta:+.4f})"


def wins_losses(values: Mapping[str, float], baseline: Mapping[str, float], *,
                same_within: float = SAME_WITHIN) -> WinsLosses:
    """Per-query metric values of a setting against the baseline's (the same queries, in the
    baseline's order); a difference within `same_within` is the same."""
    missing = [q for q in baseline if q not in values]
    extra = [q for q in values if q not in baseline]
    if missing or extra:
        raise ValueError("the setting and the baseline must have the same queries"
                         + (f"; missing: {', '.join(map(repr, missing[:5]))}" if missing else "")
                         + (f"; not in the baseline: {', '.join(map(repr, extra[:5]))}" if extra else ""))
    deltas = tuple(QueryDelta(q, float(baseline[q]), float(values[q])) for q in baseline)
    better = sum(d.delta > same_within for d in deltas)
    worse = sum(d.delta < -same_within for d in deltas)
    return WinsLosses(deltas, better, worse, len(deltas) - better - worse)


@dataclass(frozen=True)
class Move:
    """A memory entering or leaving a query's top k: its 1-based rank before and after (None
    where it is not in that ranking at all)."""

    memory_id: str
    rank_before: int | None
    rank_after: int | None


@dataclass(frozen=True)
class TopKChange:
    """One query whose top k changes: the memories that enter (in their new order) and leave
    (in their old order)."""

    query_id: str
    entered: tuple[Move, ...]
    left: tuple[Move, ...]


def _ranks(ranking: Sequence[str]) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for i, m in enumerate(ranking, 1):
        ranks.setdefault(m, i)
    return ranks


def top_k_changes(before: Mapping[str, Sequence[str]], after: Mapping[str, Sequence[str]], k: int) -> list[TopKChange]:
    """The queries whose top k differs between two rankings of each ({query id: memory ids,
    best first}), in `before`'s order; a query missing from one side ranked nothing there.
    A change of order within the top k is not an entry or exit."""
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    changes = []
    for qid in list(before) + [q for q in after if q not in before]:
        old, new = list(before.get(qid, ())), list(after.get(qid, ()))
        old_top, new_top = set(old[:k]), set(new[:k])
        if old_top == new_top:
            continue
        r_old, r_new = _ranks(old), _ranks(new)
        entered = tuple(Move(m, r_old.get(m), r_new[m]) for m in new[:k] if m not in old_top)
        left = tuple(Move(m, r_old[m], r_new.get(m)) for m in old[:k] if m not in new_top)
        changes.append(TopKChange(qid, entered, left))
    return changes


__all__ = ["Move", "QueryDelta", "SAME_WITHIN", "TopKChange", "WinsLosses", "top_k_changes", "wins_losses"]
