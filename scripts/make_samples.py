#!/usr/bin/env python
"""Regenerate the sample stores: `python scripts/make_samples.py [--out sample_dbs] [--scale 1.0]`.

Deterministic: fixed seeds and base dates, embedded with the local WordLlama model, so
running it twice gives the same memories. Existing files of the same name are replaced.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from memviz.samples import NAMES, generate  # noqa: E402
from memviz.store import open_store  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="sample_dbs", help="folder to write into (default: sample_dbs)")
    p.add_argument("--scale", type=float, default=1.0, help="fraction of the full conversation volume (default 1.0)")
    p.add_argument("--only", choices=NAMES, action="append", help="make only this sample (repeatable)")
    args = p.parse_args(argv)
    if args.scale <= 0:
        p.error("--scale must be positive")
    t = time.perf_counter()
    for path in generate(args.out, args.scale, names=tuple(args.only or NAMES)):
        with open_store(path, read_only=True) as s:
            c = s.counts()
        print(f"{path}: {c['total']} memories ({c['live']} live), {os.path.getsize(path) / 1e6:.1f} MB")
    print(f"done in {time.perf_counter() - t:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
