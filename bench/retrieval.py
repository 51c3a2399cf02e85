"""Retrieval benchmark: stores of 1k, 10k, 100k memories at 256-d and 1536-d.

    PYTHONPATH=. python bench/retrieval.py [--sizes 1000,10000,100000] [--dims 256,1536]

Stores (random unit vectors, text from a small vocabulary, inserted through the store) are cached
under bench/out/. Prints medians of: a new query (embed + full score; 1536-d has no offline model,
so its query is a vector and "embed" is n/a), a full score from a vector, a recombine after a
weight change (dual-memory and generative-agents), a hybrid query (FTS5 + vector + RRF), and the
plain per-memory Python loop (reference.py) with the speed ratio and whether the top k are identical.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import memviz.store as ms  # noqa: E402
from memviz.embed import LOCAL_MODEL, default_embedder  # noqa: E402
from memviz.retrieval import (  # noqa: E402
    Engine,
    preset_params,
    quantized,
    reference,  # noqa: E402
)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
T0 = 1_767_225_600  # 2026-01-01
WORDS = ("alice bob carol dave restaurant coffee park library meeting project deadline party river bridge "
         "garden market school office train rain sun music painting book letter phone dinner lunch breakfast "
         "friend family doctor teacher store bakery museum concert walk run swim travel plan idea worry "
         "happy tired busy quiet noisy early late").split()
QUERIES = ["what did Alice say about the restaurant?", "Bob's project deadline", "a walk by the river",
           "planning the party with friends", "coffee at the library", "the doctor and the teacher",
           "music in the park", "late train in the rain", "market and bakery", "a letter from family",
           "tired after the meeting"]


def build(path: str, n: int, dim: int) -> None:
    rng = np.random.default_rng(n * 7 + dim)
    model = LOCAL_MODEL if dim == 256 else f"bench/random-{dim}"
    tmp = path + ".part"
    for p in (tmp, tmp + "-wal", tmp + "-shm"):
        if os.path.exists(p):
            os.remove(p)
    store = ms.create(tmp)
    agents = ["isabella", "klaus", "maria", "sam"]
    for start in range(0, n, 5000):
        m = min(5000, n - start)
        V = rng.normal(size=(m, dim)).astype(np.float32)
        V /= np.linalg.norm(V, axis=1, keepdims=True)
        recs = []
        for j in range(m):
            i = start + j
            created = T0 + i * 60
            ga_type = ("event", "thought", "chat")[i % 7 % 3]
            recs.append(dict(
                id=f"m{i:06d}", agent=agents[i % 4], kind="reflection" if ga_type == "thought" else "episode",
                content=" ".join(rng.choice(WORDS, 8)), importance=float(rng.integers(1, 11)),
                embedding=V[j], embedding_model=model, event_time=created, created_at=created,
                last_accessed=created + int(rng.integers(0, 86400 * 5)) if rng.random() < 0.8 else None,
                tags=["dialogue"] if ga_type == "chat" else [],
                attributes={"ga_type": ga_type, "node_count": i + 1, "embedding_key": "idle" if i % 50 == 0 else "k",
                            "cycle": i // 100}))
        store.insert_memories(recs, audit=False)
    store.close()
    os.replace(tmp, path)


def median_ms(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def bench(n: int, dim: int, embedder) -> dict:
    path = os.path.join(OUT, f"retrieval_{n}_{dim}.db")
    if not os.path.exists(path):
        t = time.perf_counter()
        print(f"  building {os.path.basename(path)} ...", file=sys.stderr, flush=True)
        build(path, n, dim)
        print(f"  built in {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    store = ms.open(path, read_only=True)
    t = time.perf_counter()
    arrays = store.arrays()
    load_s = time.perf_counter() - t
    now = float(T0 + n * 60 + 86400)
    quantized.index_for(arrays, wait=True)   # a session has it a few seconds after opening
    engine = Engine(store, arrays, embedder=embedder if dim == 256 else None, now=now)
    reps = 15 if n <= 10_000 else 7
    rng = np.random.default_rng(0)
    qvecs = rng.normal(size=(reps, dim)).astype(np.float32)
    dual, gap = preset_params("dual-memory"), preset_params("generative-agents")
    engine.set_query(vector=qvecs[0])
    engine.score(dual), engine.score(gap)  # warm the query-independent caches (filters, row metadata)
    row = {"n": n, "dim": dim, "load_s": load_s}

    qs = iter(QUERIES * 10)
    if dim == 256:
        embedder.embed_one("warm up")
        row["new_query"] = median_ms(lambda: (engine.set_query(next(qs)), engine.score(dual)), reps)
    vs = iter(list(qvecs) * 10)
    row["full_dual"] = median_ms(lambda: (engine.set_query(vector=next(vs)), engine.score(dual)), reps)
    row["full_ga"] = median_ms(lambda: (engine.set_query(vector=next(vs)), engine.score(gap)), reps)
    engine.set_query(vector=qvecs[1])
    engine.score(dual), engine.score(gap)
    alphas = iter(np.linspace(0.1, 0.9, 101).tolist() * 5)
    row["recombine_dual"] = median_ms(lambda: engine.score(dual.replace(alpha=next(alphas))), 31)
    row["recombine_ga"] = median_ms(lambda: engine.score(gap.replace(alpha=3 * next(alphas))), 31)
    hyb = preset_params("hybrid")
    likes = iter([f"m{i:06d}" for i in rng.integers(0, n, 100)])
    if dim == 256:
        row["hybrid"] = median_ms(lambda: (engine.set_query(next(qs)), engine.score(hyb)), reps)
    else:
        row["hybrid"] = median_ms(lambda: (engine.set_query(like=next(likes)), engine.score(hyb)), reps)

    # the plain loop (GA, the reference style), on the same query vector
    nodes = reference.load_nodes(store, arrays)
    # imported here: bench/rerank.py imports this file with other source trees on the path
    from memviz.retrieval.presets.generative_agents import read_ga_weights
    weights = read_ga_weights(store)
    loop_reps = 3 if n <= 10_000 else 1
    for name, params in (("ga", gap), ("dual", dual)):
        engine.set_query(vector=qvecs[2])
        q = engine.query_vector.tolist()
        ref = []
        t = median_ms(lambda: ref.append(reference.retrieve(nodes, q, params, now=now, ga_weights=weights)), loop_reps)
        got = engine.score(params)
        row[f"loop_{name}"] = t
        row[f"same_{name}"] = got.ids == [i for i, _ in ref[-1]]
    store.close()
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--dims", default="256,1536")
    args = ap.parse_args(argv)
    os.makedirs(OUT, exist_ok=True)
    embedder = default_embedder()
    rows = []
    for dim in [int(d) for d in args.dims.split(",")]:
        for n in [int(s) for s in args.sizes.split(",")]:
            print(f"{n} x {dim}", file=sys.stderr, flush=True)
            rows.append(bench(n, dim, embedder))
    head = ("memories", "dim", "new query", "full score", "full GA", "recombine", "recomb. GA", "hybrid query",
            "loop GA", "GA x", "top-k =", "loop dual", "dual x", "top-k =")
    print("\nmedians in milliseconds (new query = embed + full score, dual-memory preset; full score = vector query "
          "+ score; recombine = score after an alpha change; hybrid = FTS5 + vector + RRF incl. query; "
          "loop = reference.py, plain Python per memory; x = loop / engine full score)")
    print(" | ".join(head))
    print(" | ".join("---" for _ in head))
    for r in rows:
        cells = [f"{r['n']:,}", str(r["dim"]), f"{r['new_query']:.2f}" if "new_query" in r else "n/a (vector)",
                 f"{r['full_dual']:.2f}", f"{r['full_ga']:.2f}", f"{r['recombine_dual']:.3f}",
                 f"{r['recombine_ga']:.3f}", f"{r['hybrid']:.2f}",
                 f"{r['loop_ga']:.0f}", f"{r['loop_ga'] / r['full_ga']:.0f}x", "yes" if r["same_ga"] else "NO",
                 f"{r['loop_dual']:.0f}", f"{r['loop_dual'] / r['full_dual']:.0f}x", "yes" if r["same_dual"] else "NO"]
        print(" | ".join(cells))
    print("\narrays load (s): " + ", ".join(f"{r['n']:,}x{r['dim']}: {r['load_s']:.2f}" for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
