"""Resident memory of the window on a large store, and what SQLite's memory map trades for it:
`python bench/resident.py [--n 1000000] [--mmap current,256M,1G] [--repeat 1] [--census] [--no-umap]
[--compare-with ROOT]`.

Each probe is a fresh process that opens the real window (offscreen, 1500×950) on bench/scale.py's
store of n × 256 (built once under $TMPDIR/memviz-bench/), read-only, with SQLite's `mmap_size` set
to one of `--mmap` (memviz.store.connection.MMAP_BYTES; "current" is memviz's own, no map; 1G
what memviz kept before), and waits until every background job the open starts has finished (the
map's UMAP included, unless --no-umap), then 2 s more. It prints, per setting and open (a first open, which scans the store and writes
its snapshot, then an unchanged reopen from that snapshot):
  open           open_path → the store shown (the window's `opened`)
  settled        until every job is done (graph, labels, table orders, int8 index, UMAP)
  RSS            the window's resident memory as the OS counts it (VmRSS), of which its own memory
                 (RssAnon) and pages of mapped files (RssFile: SQLite's map of the store, the snapshot's
                 matrix, libraries); the peak (VmHWM); the UMAP worker process's RSS beside it
  queries        medians of what the window asks SQLite after the open: a memory's row (get_many of
                 50), a full-text search (fts_hits), sqlite-vec's KNN (vec_search, every vector read),
                 the provenance links of 1,000 rows (links_of)
`--census` (one extra probe): tracemalloc's live allocations at rest by the line that made them, the
largest first (numpy's buffers included): what holds the window's own memory.
`--compare-with ROOT`: the same probes of another checkout's memviz, alternating with this one's.
The target: at most 3 GB resident at 1M with the window settled.
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

HERE = os.path.dirname(os.path.abspath(__file__))
if "--probe" not in sys.argv:   # a probe runs the memviz its PYTHONPATH names (--compare-with)
    sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

TARGET_GB = 3.0


def mmap_bytes(text: str) -> int | None:
    """'0', '256M', '1G', '1073741824' -> bytes; 'current' -> None (memviz's own setting)."""
    text = text.strip()
    if text == "current":
        return None
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def status() -> dict:
    """This process's memory lines of /proc/self/status, in GB."""
    with open("/proc/self/status") as fh:
        rows = dict(line.split(":", 1) for line in fh if ":" in line)
    return {k: int(rows[k].split()[0]) / 1e6 for k in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "VmHWM")}


def children_rss_gb() -> float:
    """Resident memory of this process's children (the UMAP worker), GB."""
    total = 0
    me = str(os.getpid())
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/status") as fh:
                rows = dict(line.split(":", 1) for line in fh if ":" in line)
        except OSError:
            continue
        if rows.get("PPid", "").strip() == me:
            total += int(rows.get("VmRSS", "0 kB").split()[0])
    return total / 1e6


def where(filename: str) -> str:
    """A traceback's file, short: memviz's from its package, anything else by its name."""
    head, sep, tail = filename.rpartition("/memviz/")
    return "memviz/" + tail if sep and "site-packages" not in head else os.path.basename(filename)


def median_ms(fn, repeat: int = 5) -> float:
    times = []
    for i in range(repeat):
        t = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def probe(path: str, mmap: str, umap: bool, census: bool) -> None:
    """One window open on `path` with SQLite's map at `mmap`; JSON of the figures on stdout."""
    import numpy as np

    if census:
        import tracemalloc
        tracemalloc.start(4)
    from memviz.store import connection
    if mmap_bytes(mmap) is not None:
        connection.MMAP_BYTES = mmap_bytes(mmap)
    from memviz.app.main import make_app, open_and_wait, process_until, scratch_window

    app = make_app()  # noqa: F841 - keeps the QApplication alive
    win = scratch_window(umap=umap)
    t = time.perf_counter()
    open_and_wait(win, path, 1800, read_only=True)
    open_s = time.perf_counter() - t
    process_until(lambda: False, 3)            # the jobs that start once the store is shown
    process_until(win.workers.idle, 3600)     # graph, labels, table orders, UMAP
    settled_s = time.perf_counter() - t
    process_until(lambda: False, 2)
    import threading
    for th in threading.enumerate():
        if th.name == "memviz-snapshot":
            th.join()                          # written for the next probe (the unchanged reopen)
    import gc
    gc.collect()
    mem = status()
    worker = children_rss_gb()
    try:   # how much of the window's own memory is freed heap the C library has kept (Linux, glibc)
        import ctypes
        ctypes.CDLL(None).malloc_trim(0)
        trimmed = mem["RssAnon"] - status()["RssAnon"]
    except (OSError, AttributeError):
        trimmed = float("nan")
    store = win.state.data.store
    a = win.state.data.arrays
    rng = np.random.default_rng(0)
    ids = a.ids[rng.integers(0, len(a), 50)].tolist()
    rows = np.sort(rng.integers(0, len(a), 1000))
    q = a.embedding[len(a) // 2].copy()
    queries = {
        "get_many(50)": median_ms(lambda i: store.get_many(ids)),
        "fts_hits": median_ms(lambda i: store.fts_hits(("coffee river", "late train", "market bakery",
                                                        "music park", "doctor teacher")[i % 5])),
        "vec_search(k=10)": median_ms(lambda i: store.vec_search(q, 10), 3),
        "links_of(1000)": median_ms(lambda i: store.links_of(a.rowid[rows])),
    }
    out = {"open_s": open_s, "settled_s": settled_s, **mem, "worker_gb": worker, "trimmable_gb": trimmed, "queries": queries,
           "map": win.map.method}
    if census:
        snap = tracemalloc.take_snapshot()
        stats = snap.statistics("traceback")
        out["census"] = [(round(s.size / 1e6, 1), s.count, " < ".join(f"{where(f.filename)}:{f.lineno}" for f in s.traceback))
                         for s in stats[:30]]
        out["traced_gb"] = sum(s.size for s in stats) / 1e9
    print(json.dumps(out))
    win.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--mmap", default="current,256M,1G")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--census", action="store_true")
    ap.add_argument("--no-umap", action="store_true")
    ap.add_argument("--compare-with", metavar="ROOT")
    ap.add_argument("--probe", nargs=2, metavar=("PATH", "MMAP"))
    args = ap.parse_args(argv)
    if args.probe:
        probe(args.probe[0], args.probe[1], not args.no_umap, args.census)
        return 0
    import scale  # bench/scale.py builds and names the stores
    path = scale.store_path(args.n, 256)
    codes = [("", os.path.dirname(HERE))] + ([(" [compared]", os.path.abspath(args.compare_with))]
                                              if args.compare_with else [])
    runs: dict = {}

    def run(root, cache, mmap, census=False):
        env = dict(os.environ, MEMVIZ_CACHE_DIR=cache, PYTHONPATH=root)
        cmd = [sys.executable, os.path.abspath(__file__), "--probe", path, mmap] + \
            (["--no-umap"] if args.no_umap else []) + (["--census"] if census else [])
        got = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if got.returncode:
            return (got.stderr.strip().splitlines() or ["no output"])[-1]
        return json.loads(got.stdout.strip().splitlines()[-1])

    for _ in range(args.repeat):
        for mmap in args.mmap.split(","):
            for tag, root in codes:
                with tempfile.TemporaryDirectory(dir=scale.OUT) as cache:
                    for label in ("first open", "unchanged (snapshot)"):
                        runs.setdefault((mmap, label, tag), []).append(run(root, cache, mmap))
    print(f"\n{args.n:,} × 256, the window settled{'' if not args.no_umap else ' (no UMAP)'}; "
          f"target ≤ {TARGET_GB:g} GB resident; {scale.uptime()}\n")
    head = ("mmap_size", "open", "code", "open s", "settled s", "RSS GB", "own (anon)", "of it freed, kept by malloc",
            "mapped files", "peak", "UMAP worker", "get_many(50) ms", "fts_hits ms", "vec_search ms", "links_of(1000) ms",
            "map")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for (mmap, label, tag), got in runs.items():
        ok = [r for r in got if isinstance(r, dict)]
        if not ok:
            print(f"| {mmap} | {label} | {tag.strip() or 'this'} | failed: {got[-1]} |")
            continue
        med = {k: statistics.median(r[k] for r in ok) for k in ("open_s", "settled_s", "VmRSS", "RssAnon", "RssFile",
                                                                 "VmHWM", "worker_gb", "trimmable_gb")}
        qs = {k: statistics.median(r["queries"][k] for r in ok) for k in ok[0]["queries"]}
        verdict = "✓" if med["VmRSS"] <= TARGET_GB else "✗"
        print(f"| {mmap} | {label} | {tag.strip() or 'this'} | {med['open_s']:.1f} | {med['settled_s']:.0f} | "
              f"{med['VmRSS']:.2f} {verdict} | {med['RssAnon']:.2f} | {med['trimmable_gb']:.2f} | {med['RssFile']:.2f} | "
              f"{med['VmHWM']:.2f} | "
              f"{med['worker_gb']:.2f} | " + " | ".join(f"{v:.1f}" for v in qs.values()) + f" | {ok[0]['map']} |")
    if args.census:
        with tempfile.TemporaryDirectory(dir=scale.OUT) as cache:
            got = run(codes[0][1], cache, args.mmap.split(",")[-1], census=True)
        if isinstance(got, dict):
            print(f"\nlive allocations at rest (tracemalloc, {got['traced_gb']:.2f} GB traced; RSS with tracing "
                  f"{got['VmRSS']:.2f} GB): MB, blocks, where (innermost first)\n")
            for size, count, where in got["census"]:
                print(f"  {size:8.1f} {count:9d}  {where}")
        else:
            print(f"census failed: {got}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
