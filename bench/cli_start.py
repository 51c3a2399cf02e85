"""What a plugin scan costs memviz's start: `memviz --help`, `memviz --version` and `memviz query
--help` as new processes, this tree against another one (e.g. a `git archive` of main), run
alternately so that both see the same load.

`python bench/cli_start.py --other /tmp/memviz-main [--repeat 15] [--plugins DIR]`. Each tree is
put first on PYTHONPATH (its `memviz` is the one imported); `--plugins DIR` adds a folder of
installed plugins (`pip install --target DIR …`) to both, to time the scan with plugins found.
Prints a table of medians (ms) and the ratio this / other, of wall time and of the process's
CPU time (user + system), which a busy machine disturbs less.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
COMMANDS = (("memviz --help", ["--help"]), ("memviz --version", ["--version"]),
            ("memviz query --help", ["query", "--help"]))


def timed(tree: str, args: list[str], env: dict) -> tuple[float, float]:
    """(wall, CPU) seconds of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "memviz", *args], env={**env, "PYTHONPATH": tree + env["PYTHONPATH"]},
                   cwd=tree, check=True, capture_output=True, timeout=120)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--other", required=True, help="the tree to compare with (a folder holding memviz/)")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--plugins", help="a folder of installed plugins, put on both trees' path")
    args = ap.parse_args(argv)
    this, other = os.path.dirname(HERE), os.path.abspath(args.other)
    # as a user's Python runs: bytecode cached (this machine's environment turns that off)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    env["PYTHONPATH"] = os.pathsep + os.path.abspath(args.plugins) if args.plugins else ""
    rows = []
    for label, cmd in COMMANDS:
        for tree in (this, other):  # warm: bytecode written, files in the page cache
            timed(tree, cmd, env)
        mine, theirs = [], []
        for _ in range(args.repeat):
            mine.append(timed(this, cmd, env))
            theirs.append(timed(other, cmd, env))
        rows.append((label, *(statistics.median(x[i] for x in runs) for i in (0, 1) for runs in (mine, theirs))))
    width = max(len(r[0]) for r in rows)
    print(f"median of {args.repeat}; this={this}, other={other}{', plugins=' + args.plugins if args.plugins else ''}")
    print(f"{'command':<{width}}  {'wall this':>9}  {'other':>6}  {'ratio':>5}  {'CPU this':>9}  {'other':>6}  {'ratio':>5}  (ms)")
    for label, wa, wb, ca, cb in rows:
        print(f"{label:<{width}}  {wa * 1e3:>9.0f}  {wb * 1e3:>6.0f}  {wa / wb:>5.2f}  {ca * 1e3:>9.0f}  {cb * 1e3:>6.0f}  {ca / cb:>5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
