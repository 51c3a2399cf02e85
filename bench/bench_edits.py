"""Latency of edits (each one audited BEGIN IMMEDIATE transaction), their undo, change polling and
the retired view, by store size; and edit latency while an agent process inserts at ~50/s.

    PYTHONPATH=$PWD python bench/bench_edits.py [--sizes 1000 10000] [--repeat 30]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import memviz.store as ms  # noqa: E402
from memviz.edits import Correct, History, SetImportance, SoftDelete, retired  # noqa: E402
from memviz.edits.verify import problems  # noqa: E402
from memviz.embed import LOCAL_MODEL, default_embedder  # noqa: E402
from memviz.store.changes import ChangeWatcher  # noqa: E402


def make_store(path, n, dim=256):
    s = ms.create(path)
    rng = np.random.default_rng(0)
    for start in range(0, n, 5000):
        k = min(5000, n - start)
        v = rng.normal(size=(k, dim)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        s.insert_memories([{"id": f"b{start + i}", "kind": "fact", "content": f"benchmark memory {start + i} text",
                            "embedding": v[i], "embedding_model": LOCAL_MODEL,
                            "valid_until": 1 if (start + i) % 10 == 0 else None} for i in range(k)], audit=False)
    return s


def timed(fn, repeat):
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def row(table, size, what, ms_list):
    table.append((size, what, statistics.median(ms_list), float(np.percentile(ms_list, 95)), len(ms_list)))


def bench_size(n, repeat, table):
    with tempfile.TemporaryDirectory() as d:
        s = make_store(os.path.join(d, "b.db"), n)
        h = History(s)
        emb = default_embedder()
        emb.embed_one("warm")
        live = [f"b{i}" for i in range(n) if i % 10][: repeat * 3]
        it = iter(live)
        row(table, n, "set importance", timed(lambda: h.perform(SetImportance(next(it), 7)), repeat))
        row(table, n, "undo (set importance)", timed(h.undo, repeat))
        row(table, n, "redo (set importance)", timed(h.redo, repeat))
        row(table, n, "soft-delete", timed(lambda: h.perform(SoftDelete(next(it))), repeat))
        row(table, n, "correct (embed + supersede)",
            timed(lambda: h.perform(Correct(next(it), "a corrected benchmark memory", embedder=emb)), repeat))
        row(table, n, "undo (correct)", timed(h.undo, repeat))
        w = ChangeWatcher(s)
        row(table, n, "watch poll, no change", timed(w.poll, repeat))
        other = ms.open(s.path)

        def poll_after_outside_write():
            other.set_meta("bench", time.time())
            w.poll()
        row(table, n, "watch poll after outside write", timed(poll_after_outside_write, repeat))
        other.close()
        row(table, n, "retired view (10% retired)", timed(lambda: retired(s), 3))
        row(table, n, "verify (integrity+vec+audit)", timed(lambda: problems(s), 1))
        s.close()


def bench_with_agent(repeat, table, n=2000):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "a.db")
        s = make_store(path, n)
        h = History(s)
        agent = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "agent_writer.py"), "agent", path,
                                  "--rate", "50", "--seconds", "4"], stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        ids = iter(f"b{i}" for i in range(1, n) if i % 10)
        lat = []
        while agent.poll() is None and len(lat) < repeat * 4:
            t = time.perf_counter()
            h.perform(SetImportance(next(ids), 3))
            lat.append((time.perf_counter() - t) * 1000)
            time.sleep(0.03)
        agent.communicate()
        row(table, n, "set importance, agent inserting 50/s", lat)
        s.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000, 50000])
    p.add_argument("--repeat", type=int, default=30)
    args = p.parse_args()
    table = []
    for n in args.sizes:
        bench_size(n, args.repeat, table)
    bench_with_agent(args.repeat, table)
    print(f"{'memories':>9}  {'operation':<38} {'median ms':>10} {'p95 ms':>8} {'runs':>5}")
    for size, what, med, p95, k in table:
        print(f"{size:>9}  {what:<38} {med:>10.2f} {p95:>8.2f} {k:>5}")
    base = {w: m for s_, w, m, _, _ in table if s_ == args.sizes[0]}
    if len(args.sizes) > 1:
        print(f"\nratio {args.sizes[-1]} / {args.sizes[0]} memories (median):")
        for s_, w, m, _, _ in table:
            if s_ == args.sizes[-1] and base.get(w):
                print(f"  {w:<38} {m / base[w]:>6.2f}x")


if __name__ == "__main__":
    main()
