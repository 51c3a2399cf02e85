#!/usr/bin/env python
"""Store benchmark: create and fill a store, load it into arrays, reopen and load.

    python bench/store.py [--sizes 10000 100000] [--repeats 5] [--keep DIR]

Memories have random 256-d unit vectors (the bench measures the store, not the model) and
text of realistic length (60-400 characters) drawn from the sample vocabularies. Fill is
batched `insert_memories(..., audit=False)` (rows, FTS and vec0 via triggers). Load is
`store.arrays()`; reopen+load adds `memviz.store.open` (header check, quick_check,
schema recognition); "+previews" is open + the window's read (arrays with content previews)
and "snapshot load" the same columns from the snapshot of the unchanged store. Targets from issue 2: fill 100k <= 60 s, load 100k <= 1 s.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import memviz.store as ms  # noqa: E402
from memviz.samples import assistant_text, simulation_text  # noqa: E402
from memviz.store import snapshot  # noqa: E402

DIM = 256
BATCH = 5000
TARGETS = {"fill": 60.0, "load": 1.0}  # seconds, at 100k
PREVIEW = 240  # the window's preview length (memviz.session.state.PREVIEW_CHARS)


def _words() -> list[str]:
    text = repr(vars(simulation_text)) + repr(vars(assistant_text))
    return sorted(set(re.findall(r"[A-Za-z][a-z']{2,}", text)))


def make_records(n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    words = np.array(_words())
    vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    lengths = rng.integers(10, 65, size=n)        # words per memory: ~60-400 characters
    kinds = np.array(["episode"] * 6 + ["fact", "preference", "reflection"])
    agents = np.array(["alice", "bob", "carol", "dave", "erin"])
    t0 = 1_735_689_600  # 2025-01-01
    times = np.sort(t0 + rng.integers(0, 180 * 86400, size=n))
    recs = []
    for i in range(n):
        recs.append({
            "id": f"m{i:07d}", "agent": str(agents[i % 5]), "kind": str(kinds[rng.integers(9)]),
            "content": " ".join(words[rng.integers(len(words), size=lengths[i])]).capitalize() + ".",
            "importance": int(rng.integers(1, 11)), "event_time": int(times[i]), "created_at": int(times[i]),
            "embedding": vecs[i], "embedding_model": "bench/random-256",
            "tags": ["bench"], "attributes": {"i": i},
        })
    return recs


def timed(fn):
    """(wall seconds, result); the CPU seconds of this process go to CPU[-1] (shows contention)."""
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    CPU.append(time.process_time() - c)
    return time.perf_counter() - t, out


CPU: list[float] = []
SIZES: dict[int, float] = {}  # rows -> file MB


def bench(n: int, repeats: int, folder: str) -> list[tuple]:
    recs = make_records(n)
    path = os.path.join(folder, f"bench_{n}.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)

    def fill():
        s = ms.create(path)
        for i in range(0, n, BATCH):
            s.insert_memories(recs[i:i + BATCH], audit=False)
        return s

    fill_s, store = timed(fill)
    fill_cpu = CPU[-1]
    loads = [timed(store.arrays) for _ in range(repeats)]
    load_cpu = statistics.median(CPU[-repeats:])
    arr = loads[-1][1]
    assert len(arr) == n and arr.embedding.shape == (n, DIM) and arr.has_embedding.all()
    store.close()

    def reopen():
        with ms.open(path) as s:
            return len(s.arrays())

    reopens = [timed(reopen) for _ in range(max(1, repeats // 2))]
    reopen_cpu = statistics.median(CPU[-len(reopens):])

    # an unchanged store opened again: its arrays come from the snapshot (memviz/store/snapshot.py)
    os.environ["MEMVIZ_CACHE_DIR"] = os.path.join(folder, "cache")
    snapshot.WRITE_DELAY, snapshot.MIN_ROWS = 0.0, 0  # now, and at every size (the app skips < 20k)
    with ms.open(path) as s:
        s.arrays(preview=PREVIEW, snapshot=True)
        for t in threading.enumerate():
            if t.name == "memviz-snapshot":
                t.join()
    snaps = [timed(lambda: snapshot.load(path, PREVIEW)) for _ in range(repeats)]
    snap_cpu = statistics.median(CPU[-repeats:])
    assert snaps[-1][1] is not None and len(snaps[-1][1]) == n
    scans = [timed(lambda: ms.open(path).arrays(preview=PREVIEW)) for _ in range(max(1, repeats // 2))]
    scan_cpu = statistics.median(CPU[-len(scans):])
    size_mb = os.path.getsize(path) / 1e6
    rows = [
        (n, "create+fill", fill_s, fill_cpu, 1, n / fill_s, TARGETS["fill"] if n == 100_000 else None),
        (n, "load (arrays)", statistics.median(t for t, _ in loads), load_cpu, len(loads), None,
         TARGETS["load"] if n == 100_000 else None),
        (n, "reopen+load", statistics.median(t for t, _ in reopens), reopen_cpu, len(reopens), None, None),
        (n, "+previews", statistics.median(t for t, _ in scans), scan_cpu, len(scans), None, None),
        (n, "snapshot load", statistics.median(t for t, _ in snaps), snap_cpu, len(snaps), None, None),
    ]
    SIZES[n] = size_mb
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="memviz store benchmark")
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    p.add_argument("--repeats", type=int, default=5, help="repeats of the cheap steps (median reported)")
    p.add_argument("--keep", help="folder for the bench stores (default: a temporary folder, removed)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or tmp
        rows = [r for n in args.sizes for r in bench(n, args.repeats, folder)]
    print(f"{'rows':>8}  {'step':<14} {'median s':>9} {'cpu s':>7} {'runs':>4} {'rows/s':>9} {'target s':>8}  ok")
    per_row = {}
    for n, step, sec, cpu, runs, rate, target in rows:
        per_row.setdefault(step, []).append((n, sec))
        ok = "" if target is None else ("yes" if sec <= target else "NO")
        print(f"{n:>8}  {step:<14} {sec:>9.3f} {cpu:>7.3f} {runs:>4} {'' if rate is None else f'{rate:,.0f}':>9} "
              f"{'' if target is None else f'{target:.0f}':>8}  {ok}")
    print(f"(wall-clock medians; 'cpu s' is this process's CPU time, lower than wall when the machine is busy; "
          f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    print("file size: " + ", ".join(f"{n:,} rows {mb:.0f} MB" for n, mb in SIZES.items()))
    if len(args.sizes) > 1:
        print("scaling (time ratio largest/smallest vs size ratio):")
        for step, pts in per_row.items():
            (n0, s0), (n1, s1) = pts[0], pts[-1]
            print(f"  {step:<14} x{s1 / s0:.1f} for x{n1 / n0:.0f} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
