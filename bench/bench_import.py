"""Import speed: the real Generative Agents persona and synthetic JSONL / ADA streams.

    PYTHONPATH=. python bench/bench_import.py [--repeat 3] [--sizes 1000,10000]

Prints one row per case: records, distinct texts embedded locally, median seconds,
records per second, and the time ratio to the smallest case of the same kind.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

from memviz.embed import default_embedder
from memviz.importers import import_source

REAL = os.environ.get("MEMVIZ_REALDATA", "/work/shared/realdata") + "/generative_agents/Isabella_Rodriguez"
WORDS = ("cafe party bread music garden meeting plan decision review paper memory agent issue test deploy "
         "coffee walk library friend message bug release sprint design research").split()


def synthetic_text(rng, i):
    return f"cycle {i}: " + " ".join(rng.choice(WORDS, size=12))


def write_jsonl(path, n, vectors: bool):
    rng = np.random.default_rng(0)
    with open(path, "w") as f:
        for i in range(n):
            rec = {"id": f"r{i}", "content": synthetic_text(rng, i), "metadata": {"agent": f"a{i % 5}", "type": "episodic",
                                                                                  "turn": str(i)}}
            if vectors:
                rec["embedding"] = rng.normal(size=256).round(5).tolist()
            f.write(json.dumps(rec) + "\n")


def write_ada(path, n):
    rng = np.random.default_rng(1)
    types = ["action", "observation", "reflection", "decision"]
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"e{i}", "cycle": i, "timestamp": f"2026-02-08T{i % 24:02d}:00:00Z",
                                "role": ["research", "growth", "ops"][i % 3], "action": f"step {i}",
                                "importance": int(rng.integers(1, 11)), "type": types[i % 4], "tags": ["x"],
                                "issueRefs": [i % 90], "prRefs": [], "content": synthetic_text(rng, i)}) + "\n")


def timed(fmt, src, repeat, **opts):
    times, report = [], None
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as d:
            t = time.perf_counter()
            report = import_source(fmt, src, os.path.join(d, "o.db"), **opts)
            times.append(time.perf_counter() - t)
    return statistics.median(times), report


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default="1000,10000")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    default_embedder().embed(["warm up"])  # model load is a one-off, not import time
    rows = []
    with tempfile.TemporaryDirectory() as work:
        if os.path.isdir(REAL):
            med, rep = timed("generative-agents", REAL, args.repeat)
            rows.append(("generative-agents (real persona)", "ga", rep.imported, rep.embedding["texts_embedded"], med))
        for n in sizes:
            p = os.path.join(work, f"v{n}.jsonl")
            write_jsonl(p, n, vectors=True)
            med, rep = timed("jsonl", p, args.repeat, embedding_model="bench-256")
            rows.append(("jsonl, given 256-d vectors", "jsonl-vec", rep.imported, 0, med))
        for n in sizes:
            p = os.path.join(work, f"t{n}.jsonl")
            write_jsonl(p, n, vectors=False)
            med, rep = timed("jsonl", p, args.repeat)
            rows.append(("jsonl, embedded locally", "jsonl-local", rep.imported, rep.embedding["texts_embedded"], med))
        for n in sizes:
            p = os.path.join(work, f"a{n}.jsonl")
            write_ada(p, n)
            med, rep = timed("ada-stream", p, args.repeat)
            rows.append(("ada-stream, embedded locally", "ada", rep.imported, rep.embedding["texts_embedded"], med))
    base = {}
    print(f"{'case':<34} {'records':>8} {'embedded':>9} {'median s':>9} {'records/s':>10} {'ratio':>6}")
    for name, group, n, emb, med in rows:
        base.setdefault(group, med)
        print(f"{name:<34} {n:>8} {emb:>9} {med:>9.3f} {n / med:>10.0f} {med / base[group]:>6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
