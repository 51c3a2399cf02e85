"""Benchmark of opening other systems' memory stores through their mirror (memviz/frameworks):
`python bench/frameworks_letta.py [--n 100000] [--systems letta]`.

For each system (one function per system: bench_<system>(dsn, n) -> rows), a store of n
memories is built with the system's schema on a PostgreSQL server started here (or
MEMVIZ_BENCH_PG=DSN), then timed: the first open (the mirror built from the source), a reopen
with the source unchanged (the mirror reused), and a reopen after the agent changed 1% of the
memories (synced by fingerprints). Each open includes reading the arrays every panel uses;
"source read" is the system's own part alone (every record read from the source, no mirror).
Target: ≤ 3 s for 100k memories.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from urllib.parse import urlsplit, urlunsplit

from postgres import server, timed

import memviz.frameworks as fw

TARGET_S = 3.0


def read_source(dsn: str) -> int:
    """The system's own part: every record read from the source (no mirror)."""
    src = fw.recognise(dsn)
    try:
        return sum(1 for _ in src.records())
    finally:
        src.close()


def open_and_load(dsn: str):
    store = fw.open_source(dsn)
    try:
        arrays = store.arrays()
        return len(arrays.ids)
    finally:
        store.close()


# ----------------------------------------------------------------------------------- Letta
def _letta_schema():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
    from letta_db import EMBEDDING_CONFIG, MAX_EMBEDDING_DIM, SCHEMA
    return EMBEDDING_CONFIG, MAX_EMBEDDING_DIM, SCHEMA


def bench_letta(dsn: str, n: int) -> list[tuple]:
    """n archival passages (256-d vectors padded to 4096, as Letta stores them) over 100 agents,
    5% soft-deleted, each agent with 2 core memory blocks."""
    import psycopg
    cfg, max_dim, schema = _letta_schema()
    dim = cfg["embedding_dim"]
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(schema)
        c.execute("INSERT INTO organizations (id, name) VALUES ('org-1', 'bench')")
        c.execute("""INSERT INTO agents (id, name, embedding_config, organization_id)
                     SELECT 'agent-' || i, 'agent' || i, %s::json, 'org-1' FROM generate_series(0, 99) i""", (json.dumps(cfg),))
        c.execute("""INSERT INTO archives (id, name, organization_id) SELECT 'archive-' || i, 'agent' || i || '''s Archive', 'org-1'
                     FROM generate_series(0, 99) i""")
        c.execute("INSERT INTO archives_agents (agent_id, archive_id, is_owner) SELECT 'agent-' || i, 'archive-' || i, true "
                  "FROM generate_series(0, 99) i")
        c.execute("""INSERT INTO block (id, label, value, "limit", organization_id)
                     SELECT 'block-' || i || '-' || l, l, 'The ' || l || ' block of agent' || i, 5000, 'org-1'
                     FROM generate_series(0, 99) i, unnest(ARRAY['human', 'persona']) l""")
        c.execute("""INSERT INTO blocks_agents (agent_id, block_id, block_label)
                     SELECT 'agent-' || i, 'block-' || i || '-' || l, l
                     FROM generate_series(0, 99) i, unnest(ARRAY['human', 'persona']) l""")
        t = time.perf_counter()
        for start in range(0, n, 10000):
            c.execute(f"""
                INSERT INTO archival_passages (id, text, embedding_config, metadata_, tags, embedding, organization_id, archive_id,
                                               created_at, updated_at, is_deleted)
                SELECT 'passage-' || lpad(i::text, 7, '0'), 'passage ' || i || ' about tea, trains and the sea', %s::json, '{{}}',
                       json_build_array('t' || (i %% 7)),
                       array_cat((SELECT array_agg(random()::real - 0.5) FROM generate_series(1, {dim}) g WHERE i IS NOT NULL),
                                 array_fill(0::real, ARRAY[{max_dim - dim}]))::vector({max_dim}),
                       'org-1', 'archive-' || (i %% 100), to_timestamp(1700000000 + i), to_timestamp(1700000000 + i), i %% 20 = 0
                FROM generate_series(%s::int, %s::int) i""", (json.dumps(cfg), start, min(n, start + 10000) - 1))
        build_s = time.perf_counter() - t
    source_s, _ = timed(lambda: read_source(dsn))
    first, count = timed(lambda: open_and_load(dsn))
    again, _ = timed(lambda: open_and_load(dsn), repeat=3)
    with psycopg.connect(dsn, autocommit=True) as c:  # the agent changes 1%: texts and soft deletes
        c.execute("UPDATE archival_passages SET text = text || ' (revised)', updated_at = now() WHERE substr(id, 9)::int % 100 = 1")
    changed, _ = timed(lambda: open_and_load(dsn))
    return [("letta", n, count, build_s, source_s, first, again, changed)]


SYSTEMS = {"letta": bench_letta}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=list(SYSTEMS))
    args = ap.parse_args(argv)
    os.environ["MEMVIZ_CACHE_DIR"] = tempfile.mkdtemp(prefix="memviz-bench-fw-")
    admin, stop = server()
    import psycopg
    rows = []
    try:
        for system in args.systems:
            for n in args.n:
                name = "bench_" + uuid.uuid4().hex[:8]
                with psycopg.connect(admin, autocommit=True) as c:
                    c.execute(f'CREATE DATABASE "{name}"')
                dsn = urlunsplit(urlsplit(admin)._replace(path="/" + name))  # the same server and role
                try:
                    rows += SYSTEMS[system](dsn, n)
                finally:
                    with psycopg.connect(admin, autocommit=True) as c:
                        c.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    finally:
        stop()
    print(f"{'system':8} {'memories':>9} {'read':>9} {'build db s':>10} {'source read s':>13} {'first open s':>12} "
          f"{'reopen s':>9} {'1% changed s':>12}  target ≤ {TARGET_S:g} s")
    for system, n, count, build_s, source_s, first, again, changed in rows:
        ok = "ok" if max(first, again, changed) <= TARGET_S else "OVER"
        print(f"{system:8} {n:9,} {count:9,} {build_s:10.1f} {source_s:13.2f} {first:12.2f} {again:9.2f} {changed:12.2f}  {ok}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
