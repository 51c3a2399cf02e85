"""Consolidation (GLOSSARY: recency / decay) on stores of growing size: plan (preview; with the arrays the
window already holds, and reading them too), apply (one transaction, every change audited; a
single run, since it changes the store) and its undo. Prints a table of medians, with the CPU
seconds of apply (this process, plus the server's backend on PostgreSQL) beside its wall time.

    PYTHONPATH=. python bench/bench_consolidation.py [sizes...] [--pg]

--pg: the same on PostgreSQL too (a server started as bench/postgres.py starts it, or
MEMVIZ_BENCH_PG=DSN of one whose role may create databases).
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import memviz.store as ms  # noqa: E402
from memviz.reflect.consolidation import apply_consolidation, plan_consolidation, undo_consolidation  # noqa: E402

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


def server_cpu(s) -> float:
    """CPU seconds of a PostgreSQL store's server backend so far (0 for SQLite: it runs in this process)."""
    if s.backend != "postgresql":
        return 0.0
    from postgres import backend_cpu  # bench/postgres.py
    return backend_cpu(s.conn)


def measure(s, n, label):
    arrays = s.arrays()  # what the window already holds
    plan_ms = 1000 * median_time(lambda: plan_consolidation(s, now=NOW, arrays=arrays), 5)
    full_ms = 1000 * median_time(lambda: plan_consolidation(s, now=NOW), 3)
    plan = plan_consolidation(s, now=NOW)
    cpu, srv, t = time.process_time(), server_cpu(s), time.perf_counter()
    res = apply_consolidation(s, plan)
    apply_ms = 1000 * (time.perf_counter() - t)
    apply_cpu = (time.process_time() - cpu) + (server_cpu(s) - srv)
    t = time.perf_counter()
    undo_consolidation(s, res)
    undo_ms = 1000 * (time.perf_counter() - t)
    apply_consolidation(s, plan_consolidation(s, now=NOW))
    # the next night: the plan also reads the audit log of the first application
    replan_ms = 1000 * median_time(lambda: plan_consolidation(s, now=NOW + DAY), 3)
    print(f"{label:<10} {n:>9} {len(res.decayed):>8} {len(res.pruned):>7} {plan_ms:>9.1f} {full_ms:>15.1f} "
          f"{apply_ms:>9.1f} {apply_cpu:>10.2f} {undo_ms:>8.1f} {replan_ms:>10.1f}", flush=True)
    return n, plan_ms, apply_ms


def measure_pg(admin, path, n):
    from postgres import database, drop  # bench/postgres.py

    from memviz.store.copy import copy_store
    name = f"bench_consolidation_{n}"
    try:
        dsn = database(admin, name, fresh=True)
        copy_store(path, dsn)
        with ms.open(dsn) as p:
            measure(p, n, "postgresql")
    finally:
        drop(admin, name)


def main(argv):
    pg = "--pg" in argv
    sizes = [int(x) for x in argv if x != "--pg"] or [1_000, 10_000, 50_000]
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'backend':<10} {'memories':>9} {'decayed':>8} {'pruned':>7} {'plan ms':>9} {'plan+arrays ms':>15} "
          f"{'apply ms':>9} {'apply CPU s':>10} {'undo ms':>8} {'replan ms':>10}")
    rows = []
    admin, stop = None, lambda: None
    if pg:
        from postgres import FOLDER, server  # bench/postgres.py: its server
        os.makedirs(FOLDER, exist_ok=True)
        admin, stop = server()
    try:
        with tempfile.TemporaryDirectory() as d:
            for n in sizes:
                path = os.path.join(d, f"b{n}.db")
                build(path, n).close()
                if pg:  # first: measuring applies consolidation to the file
                    measure_pg(admin, path, n)
                with ms.open(path) as s:
                    rows.append(measure(s, n, "sqlite"))
    finally:
        stop()
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        print(f"sqlite, ratio {b[0] // a[0]}x memories: plan {b[1] / a[1]:.1f}x, apply {b[2] / a[2]:.1f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
