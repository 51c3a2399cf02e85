"""The real launch: `memviz DB` as a new process, from exec to the store painted in the window.

`python bench/launch.py [--n 100000] [--repeat 5] [--db PATH]`. Runs the installed entry point offscreen
with MEMVIZ_STARTUP_REPORT (memviz/app/main.py prints the time to the first painted store and
quits) and fresh settings in a temporary config folder: the first open of a store (an empty
cache folder, so no array snapshot) and opens of it unchanged since (its snapshot), with the
map from a cached UMAP and from PCA. For scale it also times a process that only imports the
window's modules, the floor any launch pays. Uses the stores bench/app.py builds (the main
one is made here if missing), or the store at --db (e.g. bench/scale.py's 1M x 256 one,
bench/out/retrieval_1000000_256.db). Prints a table of medians.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(cmd: list[str], env: dict) -> float:
    began = time.time()
    out = subprocess.run(cmd, env={**env, "MEMVIZ_STARTUP_REPORT": repr(began)}, capture_output=True, text=True,
                         timeout=300)
    m = re.search(r"interactive after ([\d.]+) s \((\d+) memories, map: (.*)\)\s*$", out.stdout)
    if out.returncode != 0 or m is None:
        raise SystemExit(f"launch failed ({out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    timed.detail = f"{int(m.group(2)):,} memories, map {m.group(3)}"
    return float(m.group(1))


def make_snapshot(db: str, cache_dir: str) -> None:
    code = ("import threading, memviz.store as ms; from memviz.store import snapshot; "
            "from memviz.session.state import PREVIEW_CHARS; snapshot.WRITE_DELAY = 0; "
            f"s = ms.open({db!r}); s.arrays(preview=PREVIEW_CHARS, snapshot=True); "
            "[t.join() for t in threading.enumerate() if t.name == 'memviz-snapshot']")
    subprocess.run([sys.executable, "-c", code], env={**os.environ, "MEMVIZ_CACHE_DIR": cache_dir}, check=True)
    if not any(f.endswith(".snap") for f in os.listdir(os.path.join(cache_dir, "snapshots"))):
        raise SystemExit("no snapshot was written")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--db", help="time this store instead of bench/app.py's")
    args = ap.parse_args(argv)
    path = os.path.abspath(args.db) if args.db else os.path.join(tempfile.gettempdir(), "memviz-bench", f"app-{args.n}.db")
    if not os.path.exists(path):
        sys.path.insert(0, HERE)
        import app as app_bench  # bench/app.py builds the store
        os.makedirs(os.path.dirname(path), exist_ok=True)
        app_bench.build(path + ".part", args.n)
        os.replace(path + ".part", path)
    # as a user's Python runs: bytecode cached (this machine's environment turns that off)
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    scratch = tempfile.mkdtemp(prefix="memviz-launch-")   # settings and cache folders (a 1M snapshot is 1 GB): removed at the end
    base.update(QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=tempfile.mkdtemp(dir=scratch),
                XDG_DATA_HOME=tempfile.mkdtemp(dir=scratch))
    subprocess.run([sys.executable, "-c", "import memviz.app.window, memviz.cli"], env=base, check=True)
    rows = []
    pca_path = path.replace(".db", "-nolayout.db")  # bench/app.py makes it: the same store, no cached layout
    stores = [("its map", path)] if args.db else [("cached UMAP map", path), ("PCA map", pca_path)]
    for label, db in stores:
        if not os.path.exists(db):
            continue
        # first open: an empty cache folder each time (no snapshot of the arrays yet)
        first = [timed([sys.executable, "-m", "memviz.cli", db], {**base, "MEMVIZ_CACHE_DIR": tempfile.mkdtemp(dir=scratch)})
                 for _ in range(args.repeat)]
        kept = {**base, "MEMVIZ_CACHE_DIR": tempfile.mkdtemp(dir=scratch)}
        make_snapshot(db, kept["MEMVIZ_CACHE_DIR"])  # as the app leaves it a few seconds after an open
        again = [timed([sys.executable, "-m", "memviz.cli", db], kept) for _ in range(args.repeat)]
        rows.append((f"memviz DB → store painted, first open, {label} ({timed.detail})", first))
        rows.append((f"memviz DB → store painted, unchanged since (snapshot), {label}", again))
    imports = []
    for _ in range(args.repeat):
        t = time.time()
        subprocess.run([sys.executable, "-c", "import memviz.app.window"], env=base, check=True)
        imports.append(time.time() - t)
    rows.append(("python -c 'import memviz.app.window' (the floor)", imports))
    shutil.rmtree(scratch, ignore_errors=True)
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'median ms':>9}  runs (ms)")
    for name, xs in rows:
        print(f"{name:<{width}}  {statistics.median(xs) * 1000:>9.0f}  {' '.join(f'{x * 1000:.0f}' for x in xs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
