"""Re-rank benchmark, two source trees side by side in one run: a new query, a slider move and
the hybrid query on bench/retrieval.py's stores, timed in fresh processes that alternate between
the trees (A B B A ...), so both see the same machine load.

    PYTHONPATH=. python bench/rerank.py [--against /work/main] [--sets 100000x256,1000000x256,100000x1536]
                                        [--rounds 2] [--reps 15] [--fleet]

Each process opens the store, waits for its int8 index (a session has it seconds after opening),
and prints the median and minimum of: a new query (vector, dual-memory defaults: the first pass
over every row, the sum, the exact rescoring), the same with the cosine alone (alpha=1), a slider
move (alpha changed, same query) for dual-memory and generative-agents, and at 256-d the hybrid
preset on text queries (embed + BM25 + vector ranks + RRF). It checks that both trees return the
same top k. Busy shared machine: compare the two columns of one run, not runs; the CPU-time
columns (time.process_time: the calling thread and the first pass's helper thread) are what the
work costs, less the memory stalls other processes cause.

`--fleet`: the same vectors shaped like bench/postgres.py's fleet (issue 13: 100 agents, one
memory every 30 s, never accessed, the store's own clock) and queried, as there, by stored
vectors (the query's own row is its top hit).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def fleet_shaped(arrays):
    """`arrays` with bench/postgres.py's fleet columns: 100 agents in turn, a memory every 30 s."""
    import dataclasses

    import numpy as np

    n = len(arrays)
    t = 1_700_000_000 + np.arange(n) * 30.0
    return dataclasses.replace(arrays, agent=np.array([f"agent{i % 100:03d}" for i in range(n)], dtype=object),
                               event_time=t, created_at=t.copy(), last_accessed=np.full(n, np.nan), _index=None)


def probe(n: int, dim: int, reps: int, fleet: bool = False) -> dict:
    """In a fresh process with the tree under test first on sys.path: the timings as a dict."""
    import numpy as np

    sys.path.insert(0, HERE)
    from retrieval import OUT, QUERIES, build, default_embedder

    import memviz.store as ms
    from memviz.retrieval import Engine, preset_params, quantized

    path = os.path.join(OUT, f"retrieval_{n}_{dim}.db")
    if not os.path.exists(path):
        build(path, n, dim)
    store = ms.open(path, read_only=True)
    arrays = store.arrays()
    if fleet:
        arrays = fleet_shaped(arrays)
    quantized.index_for(arrays, wait=True)
    emb = default_embedder() if dim == 256 and not fleet else None
    engine = Engine(store, arrays, embedder=emb, now=None if fleet else float(arrays.created_at.max() + 86400))
    rng = np.random.default_rng(7)
    if fleet:
        Q = arrays.embedding[rng.integers(0, n, reps + 1)]
    else:
        Q = rng.normal(size=(reps + 1, dim)).astype(np.float32)
    dual, ga, ada = preset_params("dual-memory"), preset_params("generative-agents"), preset_params("ada")
    cosine = preset_params("dual-memory", alpha=1.0, beta=0.0, gamma=0.0)
    engine.set_query(vector=Q[-1])
    engine.score(dual), engine.score(ga), engine.score(ada), engine.score(cosine)   # caches, kernels loaded
    out, tops = {}, {}

    def timed(name, fn, count=reps):
        ts, cpu = [], []
        for i in range(count):
            t, c = time.perf_counter(), time.process_time()
            fn(i)
            ts.append((time.perf_counter() - t) * 1e3)
            cpu.append((time.process_time() - c) * 1e3)
        out[name] = (statistics.median(ts), min(ts), statistics.median(cpu))

    def query(params, tag):
        def run(i):
            engine.set_query(vector=Q[i])
            tops.setdefault(tag, []).append(engine.score(params).ids)
        return run
    timed("new query (dual-memory)", query(dual, "dual"))
    timed("new query (cosine only)", query(cosine, "cosine"))
    timed("new query (generative-agents)", query(ga, "ga"))
    timed("new query (ada)", query(ada, "ada"))
    engine.set_query(vector=Q[0])
    engine.score(dual), engine.score(ga)
    alphas = np.linspace(0.1, 0.9, 31).tolist()
    timed("slider (dual-memory)", lambda i: tops.setdefault("slider", []).append(
        engine.score(dual.replace(alpha=alphas[i % 31])).ids), 31)
    timed("slider (generative-agents)", lambda i: engine.score(ga.replace(alpha=3 * alphas[i % 31])), 31)
    if emb is not None:
        hyb = preset_params("hybrid")
        emb.embed_one("warm up")
        engine.set_query(QUERIES[0])
        engine.score(hyb)

        def hybrid(i):
            engine.set_query(QUERIES[i % len(QUERIES)])
            tops.setdefault("hybrid", []).append(engine.score(hyb).ids)
        timed("hybrid query (text)", hybrid)
    store.close()
    return {"times": out, "tops": tops, "load": os.getloadavg()[0]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", default="/work/main", help="the other source tree (the 'before' column)")
    ap.add_argument("--sets", default="100000x256,1000000x256,100000x1536")
    ap.add_argument("--rounds", type=int, default=2, help="A B B A pairs per set")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--fleet", action="store_true", help="issue 13's fleet: 100 agents, stored vectors as queries")
    ap.add_argument("--probe")
    args = ap.parse_args(argv)
    if args.probe:
        n, dim = (int(x) for x in args.probe.split("x"))
        print(json.dumps(probe(n, dim, args.reps, args.fleet)))
        return 0
    trees = {"before": os.path.abspath(args.against), "after": ROOT}
    rows = []
    for spec in args.sets.split(","):
        runs = {"before": [], "after": []}
        order = []
        for r in range(args.rounds):
            order += ["before", "after"] if r % 2 == 0 else ["after", "before"]
        for which in order:
            print(f"{spec}: {which} ({trees[which]})", file=sys.stderr, flush=True)
            env = dict(os.environ, PYTHONPATH=trees[which])
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--probe", spec, "--reps", str(args.reps)]
                               + ["--fleet"] * args.fleet,
                               env=env, capture_output=True, text=True, check=False, cwd=trees[which])
            if p.returncode != 0:
                print(p.stderr, file=sys.stderr)
                return 1
            runs[which].append(json.loads(p.stdout.strip().splitlines()[-1]))
        same = all(b["tops"] == a["tops"] for b, a in zip(runs["before"], runs["after"]))
        loads = [r["load"] for rs in runs.values() for r in rs]
        for name in runs["after"][0]["times"]:
            med = {w: statistics.median(r["times"][name][0] for r in runs[w]) for w in runs}
            low = {w: min(r["times"][name][1] for r in runs[w]) for w in runs}
            cpu = {w: statistics.median(r["times"][name][2] for r in runs[w]) for w in runs}
            rows.append((spec, name, med["before"], low["before"], med["after"], low["after"], cpu["before"],
                         cpu["after"], same, f"{min(loads):.1f}–{max(loads):.1f}"))
    print("\nms: wall time, median of the processes' medians (min of all); cpu: the calling thread's CPU time "
          "(median) of the process: the calling thread and the first pass's helper; the same top k in "
          "both trees; load average (1 min) over the set's processes\n")
    print("| set | measure | before median | before min | after median | after min | before/after (median) "
          "| before cpu | after cpu | same top k | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for spec, name, bm, bl, am, al, bc, ac, same, load in rows:
        print(f"| {spec} | {name} | {bm:.2f} | {bl:.2f} | {am:.2f} | {al:.2f} | {bm / am:.2f}x | {bc:.2f} | {ac:.2f} | "
              f"{'yes' if same else 'NO'} | {load} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
