"""Where a copy's HNSW build spends its time, variant by variant: `python bench/pg_index.py
[--n 100000] [--dim 256] [--data clustered|random] [--variants concurrent-4,plain-4,plain-1-m16-ef64]
[--ef-search 40,100]`.

The server and data folders are bench/postgres.py's. An SQLite store of N unit vectors is copied
to PostgreSQL once, data only (the copy's data commit); then each variant drops the index and
builds it with `schema.build_vector_index` (memviz's own statement and settings), changed as the
variant says: `concurrent` or `plain` (CREATE INDEX CONCURRENTLY, or in one transaction), then
the parallel maintenance workers (`-4`: four workers beside the leader), optionally `-mem64MB`
(maintenance_work_mem instead of memviz's sizing), `-m12` and `-ef48` (the graph's m and
ef_construction instead of schema.HNSW_OPTIONS'). `before-0` instead makes the index on an
empty table and then inserts the rows into it, as a COPY into an indexed table would (no
recall measured). A second connection samples the server's own
progress (pg_stat_progress_create_index) every 0.1 s: the seconds in each phase, the parallel
workers seen, how long the leader ran without them (before they start, and after: the graph
written out and WAL-logged), and the share of samples in which a build process waited for a
lock another one held (pg_stat_activity's LWLock waits: what too many processes on too few
cores cost beyond their share of the machine). Beside the wall
time, the CPU seconds of the server's processes (the backend, and its parallel workers through
the postmaster's reaped children), whether pgvector said the graph outgrew maintenance_work_mem,
and, at each `--ef-search`, recall@10 of pgvector's HNSW search (memviz's `vec_search`) against
the exact top 10 (numpy over the same vectors) for 200 queries: stored vectors with noise, so
each has close neighbours as a real query would; beside it how often the exact nearest came
first, and the query's wall (median) and server CPU ms. With
`--repeat`, the variants are built in turn (A B C A B C) and the medians shown. One run at a
time per server: the postmaster's reaped children would count another run's workers too.

`clustered` is bench/layout.py's (50 gaussian clusters), closer to what embeddings look like.
`random` (uniform on the sphere) is the build's worst case, ~1.7 times the CPU, and the hardest
search: recall@10 is low whatever the graph (the 2nd to 10th nearest are barely nearer than all
the rest), so "nearest first" (the query's own memory) tells graphs apart there.
"""
from __future__ import annotations

import argparse
import math
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


def parse(variant: str) -> tuple[str, dict[str, str], dict[str, int]]:
    """(mode, server settings, graph options) of `variant`: MODE-WORKERS[-memSIZE][-mM][-efN]."""
    mode, workers, *rest = variant.split("-")
    settings, options = {"max_parallel_maintenance_workers": workers}, {}
    for part in rest:
        if part.startswith("mem"):
            settings["maintenance_work_mem"] = part.removeprefix("mem")
        elif part.startswith("ef"):
            options["ef_construction"] = int(part.removeprefix("ef"))
        elif part.startswith("m"):
            options["m"] = int(part.removeprefix("m"))
        else:
            raise SystemExit(f"unknown part {part!r} of variant {variant!r}")
    return mode, settings, options


def build(dsn: str, dim: int, variant: str) -> dict:
    """One build as `variant` says; the phases the server reported, wall and server CPU seconds."""
    mode, settings, options = parse(variant)
    conn, watch = connect(dsn), connect(dsn, need_vector=False)
    spilled = []  # pgvector's notice when the graph outgrows maintenance_work_mem (then built on disk)
    conn.add_notice_handler(lambda d: "maintenance_work_mem" in (d.message_primary or "") and spilled.append(d.message_primary))
    try:
        rows = schema.vector_rows(conn, dim)
        if mode != "before":
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
        if mode == "before":  # the index made first, the rows then inserted one by one, as a COPY into it would
            col = schema.vec_column(dim)
            with conn.transaction():
                conn.execute(f"CREATE TABLE bench_before ({col} vector({dim}))")
                conn.execute(f"CREATE INDEX ON bench_before {schema.hnsw_method(col, options)}")
                conn.execute(f"INSERT INTO bench_before SELECT {col} FROM memories ORDER BY rowid")
            conn.execute("DROP TABLE bench_before")
        else:
            schema.build_vector_index(conn, dim, concurrently=mode == "concurrent", rows=rows, settings=settings,
                                      options=options)
        wall = time.perf_counter() - t
        done.set()
        sampler.join()
        lead = proc_cpu(pid) - lead0
        cpu = lead + proc_cpu(postmaster, children=True) - (cpu0 - lead0)
        alone = wall - (seen[1] - seen[0]) if workers else wall  # the leader without workers: before and after them
        locks = waits.get("LWLock", 0) / max(1, sum(waits.values()))
        size = 0 if mode == "before" else conn.execute(
            "SELECT pg_relation_size(to_regclass(%s))", (schema.index_name(dim),)).fetchone()[0]
        return {"wall": wall, "cpu": cpu, "lead": lead, "workers": len(workers), "alone": alone, "locks": locks,
                "phases": phases, "spilled": bool(spilled), "size": size / 2**20}
    finally:
        conn.close()
        watch.close()


def recall(dsn: str, vecs: np.ndarray, queries: np.ndarray, ef: int) -> tuple[float, float, float, float]:
    """(recall@10, share of queries whose nearest came first, median ms per query, the server's
    CPU ms per query) of memviz's `vec_search` with schema.EF_SEARCH (its hnsw.ef_search) `ef`."""
    exact = np.argsort(-(queries @ vecs.T), axis=1)[:, :K]
    hits, first, ms_each = 0, 0, []
    memviz_ef, schema.EF_SEARCH = schema.EF_SEARCH, ef
    try:
        with ms.open(dsn, read_only=True) as store:
            store.vec_search(queries[0], K)  # the index's pages read once
            pid = store.conn.info.backend_pid
            cpu = proc_cpu(pid)
            for q, want in zip(queries, exact):
                t = time.perf_counter()
                got = [int(mid[1:]) for mid, _ in store.vec_search(q, K)]
                ms_each.append(1000 * (time.perf_counter() - t))
                hits += len(set(got) & set(want.tolist()))
                first += bool(got) and got[0] == want[0]
            cpu = proc_cpu(pid) - cpu
    finally:
        schema.EF_SEARCH = memviz_ef
    return hits / (K * len(queries)), first / len(queries), statistics.median(ms_each), 1000 * cpu / len(queries)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--data", choices=("clustered", "random"), default="clustered")
    ap.add_argument("--repeat", type=int, default=1, help="builds per variant, interleaved; medians reported")
    ap.add_argument("--variants", default="concurrent-4,plain-4,concurrent-1,plain-1,plain-0",
                    help="comma-separated (concurrent|plain|before)-WORKERS[-memSIZE][-mM][-efN]")
    ap.add_argument("--ef-search", default=f"40,{schema.EF_SEARCH}",
                    help="comma-separated hnsw.ef_search values recall is measured at (pgvector's default, memviz's)")
    args = ap.parse_args()
    ef_search = [int(e) for e in args.ef_search.split(",")]
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
                for ef in ef_search:
                    r[f"recall{ef}"], r[f"first{ef}"], r[f"ms{ef}"], r[f"cpums{ef}"] = (math.nan,) * 4 \
                        if variant.startswith("before") else recall(dsn, vecs, queries, ef)
                runs[variant].append(r)
                print(f"  {variant}: {r['wall']:.1f} s, CPU {r['cpu']:.1f} s, recall "
                      + ", ".join(f"{r[f'recall{ef}']:.3f} (ef_search {ef})" for ef in ef_search)
                      + f", load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
        for variant, got in runs.items():
            def med(key, got=got):
                return statistics.median(g[key] for g in got)
            phases = {p: statistics.median(g["phases"].get(p, 0.0) for g in got) for g in got for p in g["phases"]}
            rows.append({"variant": variant, "wall": med("wall"), "cpu": med("cpu"), "lead": med("lead"), "alone": med("alone"),
                         "locks": med("locks"), "size": med("size"), "spilled": any(g["spilled"] for g in got),
                         "workers": max(g["workers"] for g in got), "phases": phases,
                         "cpus": " ".join(f"{g['cpu']:.0f}" for g in got),
                         **{k: med(k) for ef in ef_search for k in (f"recall{ef}", f"first{ef}", f"ms{ef}", f"cpums{ef}")},
                         "runs": " ".join(f"{g['wall']:.0f}" for g in got)})
    finally:
        try:
            drop(admin, name)
        finally:
            stop()
    phase_names = list(dict.fromkeys(p for r in rows for p in r["phases"]))
    head = ["variant", "build s", "each run", "server CPU s", "each run", "of which leader", "workers",
            "leader alone s", "lock waits", "index MB", "spilled"] \
        + [h for ef in ef_search for h in (f"recall@10 ef_search {ef}", f"nearest first {ef}", f"ms/query {ef}",
                                           f"server CPU ms/query {ef}")] \
        + phase_names
    table = [head] + [[r["variant"], f"{r['wall']:.1f}", r["runs"], f"{r['cpu']:.1f}", r["cpus"], f"{r['lead']:.1f}",
                       str(r["workers"]), f"{r['alone']:.1f}", f"{r['locks'] * 100:.0f} %", f"{r['size']:.0f}",
                       "yes" if r["spilled"] else "no"]
                      + [f"{r[k]:.{2 if 'ms' in k else 3}f}" for ef in ef_search
                         for k in (f"recall{ef}", f"first{ef}", f"ms{ef}", f"cpums{ef}")]
                      + [f"{r['phases'].get(p, 0.0):.1f}" for p in phase_names] for r in rows]
    print(f"\nHNSW build of {args.n:,} x {args.dim} ({args.data}), m {schema.HNSW_OPTIONS['m']}, ef_construction "
          f"{schema.HNSW_OPTIONS['ef_construction']} unless the variant says (-mM, -efN); {os.cpu_count()} cores, "
          f"load average at the end {os.getloadavg()[0]:.1f}; phases: seconds as pg_stat_progress_create_index said")
    print_table(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
