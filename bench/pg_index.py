"""Where a copy's HNSW build spends its time, variant by variant: `python bench/pg_index.py
[--n 100000] [--dim 256] [--data clustered|random] [--variants concurrent-4,plain-4,plain-1]`.

The server and data folders are bench/postgres.py's. An SQLite store of N unit vectors is copied
to PostgreSQL once, data only (the copy's data commit); then each variant drops the index and
builds it with `schema.build_vector_index` (memviz's own statement and settings), changed as the
variant says: `concurrent` or `plain` (CREATE INDEX CONCURRENTLY, or in one transaction), then
the parallel maintenance workers (`-4`: four workers beside the leader), optionally `-mem64MB`
(maintenance_work_mem instead of memviz's sizing). A second connection samples the server's own
progress (pg_stat_progress_create_index) every 0.1 s: the seconds in each phase, the parallel
workers seen, how long the leader ran without them (before they start, and after: the graph
written out and WAL-logged), and the share of samples in which a build process waited for a
lock another one held (pg_stat_activity's LWLock waits: what too many processes on too few
cores cost beyond their share of the machine). Beside the wall
time, the CPU seconds of the server's processes (the backend, and its parallel workers through
the postmaster's reaped children), and recall@10 of pgvector's HNSW search (memviz's
`vec_search`, ef_search 40) against the exact top 10 (numpy over the same vectors) for 200
queries: stored vectors with noise, so each has close neighbours as a real query would. With
`--repeat`, the variants are built in turn (A B C A B C) and the medians shown.

`clustered` is bench/layout.py's (50 gaussian clusters): on such data a weak graph loses recall
that random vectors (all about equally far apart) do not show.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from postgres import database, drop, print_table, server  # noqa: E402  (bench/postgres.py, beside this file)

import memviz.store as ms  # noqa: E402
from memviz.store.copy import copy_store  # noqa: E402
from memviz.store.postgres import schema  # noqa: E402
from memviz.store.postgres.connect import connect  # noqa: E402
from memviz.tasks import Cancelled, Task  # noqa: E402

FOLDER = os.path.join(tempfile.gettempdir(), "memviz-bench")
QUERIES = 200
K = 10
NOISE = 0.01  # per coordinate: a query about 0.99 cosine from a stored memory, in its cluster


def vectors(kind: str, n: int, dim: int) -> np.ndarray:
    rng = np.random.default_rng(3)
    if kind == "clustered":  # bench/layout.py's clusters
        centres = rng.normal(size=(50, dim))
        v = centres[rng.integers(0, 50, n)] + 0.5 * rng.normal(size=(n, dim))
    else:
        v = rng.normal(size=(n, dim))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def source(kind: str, n: int, dim: int, vecs: np.ndarray) -> str:
    path = os.path.join(FOLDER, f"pgindex-{kind}-{n}x{dim}.db")
    if not os.path.exists(path):
        store = ms.create(path + ".part")
        for start in range(0, n, 5000):
            store.insert_memories([{"id": f"m{k:07d}", "kind": "episode", "agent": "a", "content": f"memory {k}",
                                    "embedding": vecs[k], "embedding_model": "bench", "event_time": 1_700_000_000 + k}
                                   for k in range(start, min(n, start + 5000))], audit=False)
        store.close()
        os.replace(path + ".part", path)
    return path


def proc_cpu(pid: int, children: bool = False) -> float:
    """CPU seconds of process `pid` (with `children`: also of its reaped children, as the
    postmaster's are the parallel workers that have ended)."""
    with open(f"/proc/{pid}/stat") as f:
        v = f.read().rsplit(")", 1)[1].split()
    ticks = int(v[11]) + int(v[12]) + ((int(v[13]) + int(v[14])) if children else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def build(dsn: str, dim: int, variant: str) -> dict:
    """One build as `variant` says; the phases the server reported, wall and server CPU seconds."""
    mode, workers, *rest = variant.split("-")
    settings = {"max_parallel_maintenance_workers": workers}
    if rest:
        settings["maintenance_work_mem"] = rest[0].removeprefix("mem")
    conn, watch = connect(dsn), connect(dsn, need_vector=False)
    try:
        rows = schema.vector_rows(conn, dim)
        conn.execute(f"DROP INDEX IF EXISTS {schema.index_name(dim)}")
        pid = conn.info.backend_pid
        postmaster = parent(pid)
        phases: dict[str, float] = {}
        workers: set[int] = set()
        waits: dict[str, int] = {}  # the build's processes' wait_event_type, sample by sample
        seen = [None, None]  # when parallel workers were first and last seen running
        done = threading.Event()

        def sample():
            last, at = None, time.perf_counter()
            while not done.wait(0.1):
                row = watch.execute("SELECT phase FROM pg_stat_progress_create_index WHERE pid = %s",
                                    (pid,)).fetchone()
                now = time.perf_counter()
                procs = watch.execute("SELECT pid, wait_event_type FROM pg_stat_activity WHERE pid = %s OR leader_pid = %s",
                                      (pid, pid)).fetchall()
                running = [p for p, _ in procs if p != pid]
                for _, wait in procs:  # NULL: on a core or waiting for one; LWLock: for another process's lock
                    waits[wait or "none"] = waits.get(wait or "none", 0) + 1
                if running:
                    workers.update(running)
                    seen[0] = seen[0] or now - t
                    seen[1] = now - t
                if last is not None:
                    phases[last] = phases.get(last, 0.0) + now - at
                last, at = (row[0] if row else None), now
        lead0 = proc_cpu(pid)
        cpu0 = lead0 + proc_cpu(postmaster, children=True)
        t = time.perf_counter()
        sampler = threading.Thread(target=sample)
        sampler.start()
        schema.build_vector_index(conn, dim, concurrently=mode == "concurrent", rows=rows, settings=settings)
        wall = time.perf_counter() - t
        done.set()
        sampler.join()
        lead = proc_cpu(pid) - lead0
        cpu = lead + proc_cpu(postmaster, children=True) - (cpu0 - lead0)
        alone = wall - (seen[1] - seen[0]) if workers else wall  # the leader without workers: before and after them
        locks = waits.get("LWLock", 0) / max(1, sum(waits.values()))
        return {"wall": wall, "cpu": cpu, "lead": lead, "workers": len(workers), "alone": alone, "locks": locks,
                "phases": phases}
    finally:
        conn.close()
        watch.close()


def recall(dsn: str, vecs: np.ndarray, queries: np.ndarray) -> float:
    exact = np.argsort(-(queries @ vecs.T), axis=1)[:, :K]
    hits = 0
    with ms.open(dsn, read_only=True) as store:
        for q, want in zip(queries, exact):
            got = {int(mid[1:]) for mid, _ in store.vec_search(q, K)}
            hits += len(got & set(want.tolist()))
    return hits / (K * len(queries))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--data", choices=("clustered", "random"), default="clustered")
    ap.add_argument("--repeat", type=int, default=1, help="builds per variant, interleaved; medians reported")
    ap.add_argument("--variants", default="concurrent-4,plain-4,concurrent-1,plain-1,plain-0",
                    help="comma-separated (concurrent|plain)-WORKERS[-memSIZE]")
    args = ap.parse_args()
    os.makedirs(FOLDER, exist_ok=True)
    vecs = vectors(args.data, args.n, args.dim)
    rng = np.random.default_rng(11)
    queries = vecs[rng.integers(0, args.n, QUERIES)] + NOISE * rng.normal(size=(QUERIES, args.dim)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    path = source(args.data, args.n, args.dim, vecs)
    admin, stop = server()
    name = "bench_index_" + uuid.uuid4().hex[:8]
    rows = []
    try:
        dsn = database(admin, name, fresh=True)
        task = Task("copy", lambda _f, text: text.startswith("building the HNSW") and task.cancel())
        t = time.perf_counter()
        try:
            copy_store(path, dsn, task)  # data only: the build is cancelled before it starts
        except Cancelled:
            pass
        print(f"data committed in {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
        variants = [v.strip() for v in args.variants.split(",") if v.strip()]
        runs: dict[str, list[dict]] = {v: [] for v in variants}
        for _ in range(args.repeat):  # interleaved: a change in the machine's load falls on every variant
            for variant in variants:
                r = build(dsn, args.dim, variant)
                r["recall"] = recall(dsn, vecs, queries)
                runs[variant].append(r)
                print(f"  {variant}: {r['wall']:.1f} s, CPU {r['cpu']:.1f} s, recall {r['recall']:.3f}, "
                      f"load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
        for variant, got in runs.items():
            def med(key, got=got):
                return statistics.median(g[key] for g in got)
            phases = {p: statistics.median(g["phases"].get(p, 0.0) for g in got) for g in got for p in g["phases"]}
            rows.append({"variant": variant, "wall": med("wall"), "cpu": med("cpu"), "lead": med("lead"), "alone": med("alone"),
                         "locks": med("locks"),
                         "workers": max(g["workers"] for g in got), "recall": med("recall"), "phases": phases,
                         "runs": " ".join(f"{g['wall']:.0f}" for g in got)})
    finally:
        try:
            drop(admin, name)
        finally:
            stop()
    phase_names = list(dict.fromkeys(p for r in rows for p in r["phases"]))
    head = ["variant", "build s", "each run", "server CPU s", "of which leader", "workers", "leader alone s",
            "lock waits", "recall@10"] + phase_names
    table = [head] + [[r["variant"], f"{r['wall']:.1f}", r["runs"], f"{r['cpu']:.1f}", f"{r['lead']:.1f}",
                       str(r["workers"]), f"{r['alone']:.1f}", f"{r['locks'] * 100:.0f} %", f"{r['recall']:.3f}"]
                      + [f"{r['phases'].get(p, 0.0):.1f}" for p in phase_names] for r in rows]
    print(f"\nHNSW build of {args.n:,} x {args.dim} ({args.data}), m 16, ef_construction 64; {os.cpu_count()} cores, "
          f"load average at the end {os.getloadavg()[0]:.1f}; phases: seconds as pg_stat_progress_create_index said")
    print_table(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
