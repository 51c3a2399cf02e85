"""Retrieval quality of rankings against graded judgments, as trec_eval defines it.

Measures (names as memviz writes them → trec_eval's):
  ndcg@K   ndcg_cut.K   DCG of the first K / the ideal DCG of the judgments; gain = the grade,
                        discount log2(rank + 1)
  recall@K recall.K     relevant (grade ≥ 1) in the first K / all relevant judged
  p@K      P.K          relevant in the first K / K (K even when fewer were retrieved)
  mrr      recip_rank   1 / the rank of the first relevant; 0 when none is retrieved
A memory that is not judged counts as not relevant; a query with nothing retrieved scores 0 on
every measure, and the means are over every judged query (trec_eval -c).

The trec_eval conventions that matter here: it ranks a run by score (ties by document id), not
by the order it is given, so memviz passes each ranking with strictly decreasing scores and
trec_eval's ranks are the list's; a run maps document ids to scores, so a memory named twice
would silently count once: refused; its relevance level 1 makes grade 0 a judged non-relevant
memory, counted like an unjudged one by these measures; and pytrec_eval answers only for the
queries in the run, so a judged query not ranked gets its zeros here (trec_eval -c). memviz
passes only the part of a ranking the measures read — down to the deepest cutoff, and, with
mrr, down to the first relevant memory — so a re-evaluation costs what the measures look at,
not the ranking's depth; every value is the same as for the whole ranking.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# pytrec_eval-terrier: trec_eval's own C code (its definitions exactly), a small wheel with no
# dependencies, the least time per call of ranx / ir-measures / pytrec_eval (bench/judge_metrics.py)
import pytrec_eval

DEFAULT_MEASURES = ("recall@10", "ndcg@10", "mrr", "p@10")


@dataclass(frozen=True)
class Measure:
    name: str            # as memviz writes it: "ndcg@10"
    trec: str            # as trec_eval is asked for it: "ndcg_cut.10"
    key: str             # as pytrec_eval answers: "ndcg_cut_10"
    cutoff: int | None   # the rank it reads down to; None: down to the first relevant (mrr)


_FAMILIES = {"ndcg": "ndcg_cut", "recall": "recall", "p": "P"}
_NAME = re.compile(r"(ndcg|recall|p)@(\d+)|(mrr)")


def measure(name: str) -> Measure:
    """The Measure of a name: ndcg@K, recall@K, p@K (K ≥ 1) or mrr; ValueError otherwise."""
    m = _NAME.fullmatch(name.strip().lower()) if isinstance(name, str) else None
    if m is None or (m.group(2) is not None and int(m.group(2)) < 1):
        raise ValueError(f"unknown measure {name!r}; use ndcg@K, recall@K, p@K (K ≥ 1) or mrr")
    if m.group(3):
        return Measure("mrr", "recip_rank", "recip_rank", None)
    family, k = m.group(1), int(m.group(2))
    return Measure(f"{family}@{k}", f"{_FAMILIES[family]}.{k}", f"{_FAMILIES[family]}_{k}", k)


@dataclass(frozen=True)
class Evaluation:
    """Each measure's mean over the judged queries and its value for each query."""

    measures: tuple[str, ...]
    query_ids: tuple[str, ...]
    means: Mapping[str, float]
    per_query: Mapping[str, Mapping[str, float]]   # query id → measure → value

    def values(self, measure_name: str) -> dict[str, float]:
        """{query id: value} of one measure, in the judged queries' order."""
        name = measure(measure_name).name
        if name not in self.means:
            raise KeyError(f"{name} was not evaluated (measures: {', '.join(self.measures)})")
        return {q: self.per_query[q][name] for q in self.query_ids}

    def to_json(self) -> dict:
        return {"metrics": dict(self.means), "per_query": {q: dict(v) for q, v in self.per_query.items()}}


def _check_qrels(qrels: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    out = {}
    for qid, judged in qrels.items():
        grades = {}
        for mid, g in judged.items():
            if isinstance(g, bool) or not isinstance(g, int) or not 0 <= g <= 2:
                raise ValueError(f"query {qid!r}: the grade of {mid!r} is {g!r}, not 0, 1 or 2")
            grades[str(mid)] = g
        if not any(grades.values()):
            raise ValueError(f"query {qid!r} judges no memory relevant (grade 1 or 2)")
        out[str(qid)] = grades
    if not out:
        raise ValueError("no judged query to evaluate")
    return out


class Evaluator:
    """The judgments and measures, prepared once; `evaluate(rankings)` per re-ranking (the
    live readout calls it on every slider move)."""

    def __init__(self, qrels: Mapping[str, Mapping[str, int]], measures: Iterable[str] = DEFAULT_MEASURES):
        self.measures = tuple(dict.fromkeys(measure(m) for m in measures))
        if not self.measures:
            raise ValueError("no measure to evaluate")
        self.qrels = _check_qrels(qrels)
        self.query_ids = tuple(self.qrels)
        self._relevant = {q: tuple(m for m, g in j.items() if g) for q, j in self.qrels.items()}
        cutoffs = [m.cutoff for m in self.measures if m.cutoff is not None]
        self._depth = max(cutoffs, default=0)
        self._to_first_relevant = any(m.cutoff is None for m in self.measures)
        self._trec = pytrec_eval.RelevanceEvaluator(self.qrels, {m.trec for m in self.measures})
        self._scores: list[float] = []

    def _part_read(self, qid: str, ranking: Sequence[str]) -> Sequence[str]:
        """The head of `ranking` that the measures read (see the module's docstring)."""
        n = min(len(ranking), self._depth)
        if self._to_first_relevant and len(ranking) > n:
            head = ranking[:n]
            if not any(m in head for m in self._relevant[qid]):
                first = len(ranking)
                for mid in self._relevant[qid]:
                    try:
                        first = min(first, ranking.index(mid, n))
                    except ValueError:
                        pass
                n = first + 1 if first < len(ranking) else n
        return ranking[:n]

    def evaluate(self, rankings: Mapping[str, Sequence[str]]) -> Evaluation:
        """The measures of `rankings` ({query id: memory ids, best first}). A judged query
        missing from `rankings` retrieved nothing; a ranking of a query that is not judged, or
        one that names a memory twice where it is read, is a ValueError."""
        stray = [q for q in rankings if q not in self.qrels]
        if stray:
            raise ValueError(f"rankings of queries that are not judged: {', '.join(map(repr, stray[:5]))}")
        run = {}
        for qid, ranking in rankings.items():
            part = self._part_read(qid, list(ranking) if not isinstance(ranking, (list, tuple)) else ranking)
            if not part:
                continue
            if len(self._scores) < len(part):  # strictly decreasing scores: trec_eval keeps the list's order
                self._scores = [-float(i) for i in range(1, 2 * len(part) + 1)]
            scored = dict(zip(part, self._scores))
            if len(scored) != len(part):
                twice = next(m for i, m in enumerate(part) if m in part[:i])
                raise ValueError(f"the ranking of query {qid!r} names {twice!r} twice")
            run[qid] = scored
        answered = self._trec.evaluate(run) if run else {}
        zero = dict.fromkeys((m.name for m in self.measures), 0.0)
        per_query = {}
        for qid in self.query_ids:
            got = answered.get(qid)
            per_query[qid] = {m.name: float(got[m.key]) for m in self.measures} if got is not None else dict(zero)
        means = {m.name: math.fsum(v[m.name] for v in per_query.values()) / len(per_query) for m in self.measures}
        return Evaluation(tuple(m.name for m in self.measures), self.query_ids, means, per_query)


def evaluate(rankings: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]],
             measures: Iterable[str] = DEFAULT_MEASURES) -> Evaluation:
    """The measures of `rankings` ({query id: memory ids, best first}) against `qrels`
    ({query id: {memory id: grade 0–2}}): overall means and per-query values."""
    return Evaluator(qrels, measures).evaluate(rankings)


__all__ = ["DEFAULT_MEASURES", "Evaluation", "Evaluator", "Measure", "evaluate", "measure"]
