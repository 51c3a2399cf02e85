"""The real launch: `memviz DB` as a new process, from exec to the store painted in the window.

`python bench/launch.py [--n 100000] [--repeat 5]`. Runs the installed entry point offscreen
with MEMVIZ_STARTUP_REPORT (memviz/app/main.py prints the time to the first painted store and
quits) and fresh settings in a temporary config folder. For scale it also times a process that
only imports the window's modules, the floor any launch pays. Uses the store bench/app.py
builds (made here if missing). Prints a table of medians.
"""
from __future__ import annotations

import argparse
import os
import re
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    path = os.path.join(tempfile.gettempdir(), "memviz-bench", f"app-{args.n}.db")
    if not os.path.exists(path):
        sys.path.insert(0, HERE)
        import app as app_bench  # noqa: PLC0415 - bench/app.py builds the store
        os.makedirs(os.path.dirname(path), exist_ok=True)
        app_bench.build(path + ".part", args.n)
        os.replace(path + ".part", path)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": tempfile.mkdtemp(),
           "XDG_DATA_HOME": tempfile.mkdtemp()}
    launch = [timed([sys.executable, "-m", "memviz.cli", path], env) for _ in range(args.repeat)]
    detail = timed.detail
    imports = []
    for _ in range(args.repeat):
        t = time.time()
        subprocess.run([sys.executable, "-c", "import memviz.app.window"], env=env, check=True)
        imports.append(time.time() - t)
    rows = [(f"memviz DB → store painted ({detail})", launch), ("python -c 'import memviz.app.window' (floor)", imports)]
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'median ms':>9}  runs (ms)")
    for name, xs in rows:
        print(f"{name:<{width}}  {statistics.median(xs) * 1000:>9.0f}  {' '.join(f'{x * 1000:.0f}' for x in xs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
