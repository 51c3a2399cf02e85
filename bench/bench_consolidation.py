"""Consolidation (GLOSSARY: recency / decay) on stores of growing size: plan (preview; with the arrays the
window already holds, and reading them too) and apply (one transaction, every change
audited; a single run, since it changes the store). Prints a table of medians.

    PYTHONPATH=. python bench/bench_consolidation.py [sizes...]
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

import numpy as np

import memviz.store as ms
from memviz.reflect import apply_consolidation, plan_consolidation

DAY = 86400.0
NOW = 1_780_000_000.0


def build(path, n, seed=0):
    rng = np.random.default_rng(seed)
    s = ms.create(path)
    kinds = rng.choice(["fact", "preference", "episode", "reflection"], n, p=[.4, .1, .4, .1])
    ages = rng.uniform(0, 900, n)
    recs = [dict(kind=str(k), agent=f"a{i % 5}", content=f"memory {i} about topic {i % 97}",
                 created_at=NOW - a * DAY, confidence=float(rng.uniform(0.02, 1.0)), protected=int(i % 50 == 0))
            for i, (k, a) in enumerate(zip(kinds, ages))]
    for i in range(0, n, 20_000):
        s.insert_memories(recs[i:i + 20_000], audit=False)
    return s


def median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(sizes):
    print(f"{'memories':>9} {'decayed':>8} {'pruned':>7} {'plan ms':>9} {'plan+arrays ms':>15} {'apply ms':>9} "
          f"{'replan ms':>10} {'ms/1k plan':>11}")
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for n in sizes:
            s = build(os.path.join(d, f"b{n}.db"), n)
            arrays = s.arrays()  # what the window already holds
            plan_ms = 1000 * median_time(lambda: plan_consolidation(s, now=NOW, arrays=arrays), 5)
            full_ms = 1000 * median_time(lambda: plan_consolidation(s, now=NOW), 3)
            plan = plan_consolidation(s, now=NOW)
            t = time.perf_counter()
            res = apply_consolidation(s, plan)
            apply_ms = 1000 * (time.perf_counter() - t)
            # the next night: the plan also reads the audit log of the first application
            replan_ms = 1000 * median_time(lambda: plan_consolidation(s, now=NOW + DAY), 3)
            rows.append((n, len(res.decayed), len(res.pruned), plan_ms, apply_ms, replan_ms))
            print(f"{n:>9} {len(res.decayed):>8} {len(res.pruned):>7} {plan_ms:>9.1f} {full_ms:>15.1f} {apply_ms:>9.1f} "
                  f"{replan_ms:>10.1f} {plan_ms / n * 1000:>11.2f}")
            s.close()
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        print(f"ratio {b[0] // a[0]}x memories: plan {b[3] / a[3]:.1f}x, apply {b[4] / a[4]:.1f}x")


if __name__ == "__main__":
    main([int(x) for x in sys.argv[1:]] or [1_000, 10_000, 50_000])
