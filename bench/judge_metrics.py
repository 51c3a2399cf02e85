"""The cost of one re-evaluation of judged queries: what the live readout pays per slider move.

    PYTHONPATH=. python bench/judge_metrics.py [--queries 200] [--depth 100] [--repeat 50]

Rankings of `--depth` memory ids for `--queries` judged queries (5 judged memories each, grades
1–2), measured with recall@5, recall@10, ndcg@10, p@10 and mrr. Rows:
  memviz Evaluator, relevant early   the readout's usual case: a relevant memory in each top 10
  memviz Evaluator, relevant late    the worst case for mrr: the first relevant anywhere in the depth
  memviz Evaluator, no mrr           cutoff measures only: always the top 10
  pytrec_eval, whole rankings        the library given every ranking whole (a new run dict per call)
  ir-measures / ranx                 the other candidates, when installed (they are not dependencies)
Prints medians and p95 in ms and the ratio to the first row, side by side in one run.
"""
from __future__ import annotations

import argparse
import random
import statistics
import time

import pytrec_eval

from memviz.judge import Evaluator

MEASURES = ("recall@5", "recall@10", "ndcg@10", "p@10", "mrr")
TREC = {"recall.5", "recall.10", "ndcg_cut.10", "P.10", "recip_rank"}


def judged(queries: int, depth: int, early: bool, seed: int = 1):
    rng = random.Random(seed)
    qrels, rankings = {}, {}
    for q in range(queries):
        relevant = [f"m{rng.randrange(10**6)}-{q}-{i}" for i in range(5)]
        qrels[f"q{q}"] = {m: rng.choice((1, 2)) for m in relevant}
        others = [f"n{q}-{i}" for i in range(depth - 2)]
        ranking = others[:]
        at = [rng.randrange(10) for _ in range(2)] if early else [rng.randrange(depth - 2) for _ in range(2)]
        for pos, m in sorted(zip(at, relevant[:2])):
            ranking.insert(pos, m)
        rankings[f"q{q}"] = ranking[:depth]
    return qrels, rankings


def timed(fn, repeat: int) -> tuple[float, float]:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    times.sort()
    return statistics.median(times) * 1e3, times[int(0.95 * (len(times) - 1))] * 1e3


def as_run(rankings):
    return {q: {m: -float(i) for i, m in enumerate(r, 1)} for q, r in rankings.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=50)
    a = ap.parse_args()
    rows = []
    early_qrels, early = judged(a.queries, a.depth, True)
    late_qrels, late = judged(a.queries, a.depth, False)
    ev_early, ev_late = Evaluator(early_qrels, MEASURES), Evaluator(late_qrels, MEASURES)
    rows.append(("memviz Evaluator, relevant early", *timed(lambda: ev_early.evaluate(early), a.repeat)))
    rows.append(("memviz Evaluator, relevant late", *timed(lambda: ev_late.evaluate(late), a.repeat)))
    no_mrr = Evaluator(late_qrels, MEASURES[:-1])
    rows.append(("memviz Evaluator, no mrr", *timed(lambda: no_mrr.evaluate(late), a.repeat)))
    whole = pytrec_eval.RelevanceEvaluator(late_qrels, TREC)
    rows.append(("pytrec_eval, whole rankings", *timed(lambda: whole.evaluate(as_run(late)), a.repeat)))
    try:
        import ir_measures
        from ir_measures import RR, P, R, nDCG
    except ImportError:
        rows.append(("ir-measures", None, None))
    else:
        irm = ir_measures.evaluator([R @ 5, R @ 10, nDCG @ 10, P @ 10, RR], late_qrels)
        rows.append(("ir-measures, whole rankings", *timed(lambda: list(irm.iter_calc(as_run(late))), a.repeat)))
    try:
        import ranx
    except ImportError:
        rows.append(("ranx", None, None))
    else:
        qrels = ranx.Qrels(late_qrels)
        names = ["recall@5", "recall@10", "ndcg@10", "precision@10", "mrr"]
        rows.append(("ranx, whole rankings (Run per call)",
                     *timed(lambda: ranx.evaluate(qrels, ranx.Run(as_run(late)), names, return_mean=False), a.repeat)))
    base = rows[0][1]
    print(f"{a.queries} judged queries, rankings {a.depth} deep, measures {', '.join(MEASURES)}; {a.repeat} calls each")
    print(f"{'case':<40} {'median ms':>10} {'p95 ms':>9} {'ratio':>7}")
    for name, med, p95 in rows:
        if med is None:
            print(f"{name:<40} {'not installed':>10}")
        else:
            print(f"{name:<40} {med:>10.2f} {p95:>9.2f} {med / base:>7.1f}")


if __name__ == "__main__":
    main()
