"""Comparing two settings query by query: wins and losses against a pinned baseline, and what
a change of parameters would change in each query's top k (entries and exits); and a query's
near misses (relevant memories below the cut, and which component held each back). Qt-free;
the window's readout, the fit's report and the CLI read these."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: per-query differences within this are "same" (float noise of equal rankings is far below it)
SAME_WITHIN = 1e-9


class Change:
    """A measure before and after a change (the `before` and `after` fields of a dataclass) and
    its gain (negative: a loss)."""

    before: float
    after: float

    @property
    def gain(self) -> float:
        return self.after - self.before


@dataclass(frozen=True)
class QueryDelta(Change):
    """One query's measure under the baseline (before) and under the setting (after)."""

    query_id: str
    before: float
    after: float


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
        return math.fsum(d.gain for d in self.deltas) / len(self.deltas) if self.deltas else 0.0

    def wins(self) -> list[QueryDelta]:
        """The queries that got better, largest gain first (ties in the queries' order)."""
        return sorted((d for d in self.deltas if d.gain > SAME_WITHIN), key=lambda d: -d.gain)

    def losses(self) -> list[QueryDelta]:
        """The queries that got worse, largest loss first."""
        return sorted((d for d in self.deltas if d.gain < -SAME_WITHIN), key=lambda d: d.gain)

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
    better = sum(d.gain > same_within for d in deltas)
    worse = sum(d.gain < -same_within for d in deltas)
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


@dataclass(frozen=True)
class NearMiss:
    """A relevant memory below the cut: its grade and 1-based rank in the ranking (None when the
    ranking does not hold it at all: filtered out, or deeper than the ranking went)."""

    memory_id: str
    grade: int
    rank: int | None


def near_misses(grades: Mapping[str, int], ranking: Sequence[str], k: int) -> list[NearMiss]:
    """The relevant memories (grade ≥ 1 in `grades`, e.g. JudgedQuery.relevant) that are not in
    the ranking's top k: nearest the cut first, those it does not hold last (higher grade first)."""
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    ranks = _ranks(ranking)
    missed = [NearMiss(m, g, ranks.get(m)) for m, g in grades.items() if g >= 1 and not ranks.get(m, k + 1) <= k]
    return sorted(missed, key=lambda n: (n.rank is None, n.rank or 0, -n.grade))


def held_back_by(missed: Mapping[str, float], cutoff: Mapping[str, float]) -> tuple[str, float]:
    """The component that held a memory below the cut: given each component's weighted
    contribution (they add up to the score) for the missed memory and for the last memory in
    the top k, the one where it falls furthest short, and by how much."""
    if set(missed) != set(cutoff) or not missed:
        raise ValueError(f"the two memories' components differ: {sorted(missed)} and {sorted(cutoff)}")
    return max(((c, float(cutoff[c]) - float(missed[c])) for c in missed), key=lambda cd: cd[1])


__all__ = ["Change", "Move", "NearMiss", "QueryDelta", "SAME_WITHIN", "TopKChange", "WinsLosses", "held_back_by", "near_misses",
           "top_k_changes", "wins_losses"]
