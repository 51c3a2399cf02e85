"""Layout benchmark: PCA, cached-layout reopen, placement of new memories, reflection-graph
layout and lineage queries, and what UMAP costs in a cold process, a warm worker and a new
process that finds numba's cache. Real stores (apsw + sqlite-vec) of clustered unit vectors.

    PYTHONPATH=. python bench/layout.py [--sizes 1000 10000 100000] [--umap-n 10000] [--no-umap]
                                        [--umap-sizes 30000 100000]

Prints tables of medians (seconds unless marked ms). Runs in about 5 minutes on 2 cores.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

import memviz.store as ms
from memviz.layout import LayoutCache, UmapJob, UmapWorker, graph_layout, pca_2d

DIM = 256


def clustered(n, dim=DIM, clusters=50, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    v = centres[rng.integers(0, clusters, n)] + 0.5 * rng.normal(size=(n, dim))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def timed(fn, repeat=3):
    out, times = None, []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def records(vecs, start):
    return [dict(id=f"m{start + i}", kind="episode", content=f"memory {start + i}", embedding=v,
                 embedding_model="bench-256", event_time=1_700_000_000 + start + i) for i, v in enumerate(vecs)]


def map_rows(folder, sizes):
    rows = []
    for n in sizes:
        path = os.path.join(folder, f"map{n}.db")
        vecs = clustered(n, seed=n)
        old_n = n - max(1, n // 100)
        with ms.create(path) as s:
            for i in range(0, old_n, 20_000):
                s.insert_memories(records(vecs[i:min(old_n, i + 20_000)], i), audit=False)
            old = s.arrays()
            s.insert_memories(records(vecs[old_n:], old_n), audit=False)
        t_open, (s, a) = timed(lambda: (lambda st: (st, st.arrays()))(ms.open(path)), repeat=1)
        t_pca, coords = timed(lambda: pca_2d(a.embedding))
        LayoutCache(s).put("bench", a, {}, coords)
        t_load, hit = timed(lambda: LayoutCache(s).lookup("bench", a, {}))
        assert hit.placed == 0
        old_coords = coords[:old_n]

        def place():
            c = LayoutCache(s)
            c.put("bench", old, {}, old_coords)      # the layout as it was before the 1% arrived
            t = time.perf_counter()
            h = c.lookup("bench", a, {})
            assert h.placed == n - old_n
            return time.perf_counter() - t
        t_place = statistics.median(place() for _ in range(3))
        s.close()
        rows.append((n, t_open, t_pca, t_load, n - old_n, t_place))
    print(f"\nMap layouts ({DIM}-d, clustered): open+arrays, PCA, cached layout reopen, placing 1% new memories")
    print(f"{'n':>8} {'open+arrays s':>14} {'PCA ms':>9} {'cache load ms':>14} {'new':>6} {'place+write ms':>15}")
    for n, to, tp, tl, k, tpl in rows:
        print(f"{n:>8} {to:>14.2f} {tp * 1e3:>9.1f} {tl * 1e3:>14.1f} {k:>6} {tpl * 1e3:>15.1f}")


def graph_rows(folder, sizes):
    rows = []
    for n_evidence in sizes:
        rng = np.random.default_rng(1)
        recs = [dict(id=f"e{i}", kind="episode", content="e", event_time=i) for i in range(n_evidence)]
        level_ids = [[f"e{i}" for i in range(n_evidence)]]
        for lv in range(1, 5):  # four levels of reflection, each a quarter of the one below
            ids = []
            for j in range(max(1, len(level_ids[-1]) // 4)):
                below = level_ids[-1]
                src = [below[k] for k in rng.integers(0, len(below), 3)] + [f"e{k}" for k in rng.integers(0, n_evidence, 2)]
                ids.append(f"r{lv}_{j}")
                recs.append(dict(id=ids[-1], kind="reflection", content="r", source_ids=src, event_time=n_evidence + j))
            level_ids.append(ids)
        path = os.path.join(folder, f"graph{n_evidence}.db")
        with ms.create(path) as s:
            s.insert_memories(recs, audit=False)
            a = s.arrays()
            t_layout, g = timed(lambda: graph_layout(s, a))
            t_sweep0, _ = timed(lambda: graph_layout(s, a, sweeps=0))
            picks = rng.choice(g.rows, 200)
            t_anc = statistics.median(timed(lambda r=r: g.ancestors(r), 1)[0] for r in picks)
            t_desc = statistics.median(timed(lambda r=r: g.descendants(r), 1)[0] for r in picks)
            t_nb = statistics.median(timed(lambda r=r: g.neighbourhood(r, 2), 1)[0] for r in picks)
        rows.append((int(g.in_graph.sum()), len(g.edges), t_layout, t_sweep0, t_anc, t_desc, t_nb))
    print("\nReflection graph: layout (provenance read + levels + 4 barycentre sweeps) and lineage queries")
    print(f"{'nodes':>7} {'edges':>7} {'layout ms':>10} {'(no sweeps)':>12} {'ancestors ms':>13} {'descend. ms':>12} {'2-hop ms':>9}")
    for nodes, m, tl, t0, ta, td, tn in rows:
        print(f"{nodes:>7} {m:>7} {tl * 1e3:>10.1f} {t0 * 1e3:>12.1f} {ta * 1e3:>13.3f} {td * 1e3:>12.3f} {tn * 1e3:>9.3f}")


def umap_sizes(sizes):
    """One UMAP per size in a worker warmed for it (NN-descent compiled when the size needs it)."""
    from memviz.layout.umap_worker import EXACT_KNN_MAX
    print(f"\nUMAP in a warmed worker (numba cache filled); above {EXACT_KNN_MAX} points NN-descent builds the graph")
    print(f"{'n':>8} {'warm_up s':>10} {'UMAP s':>8}")
    for n in sizes:
        w = UmapWorker()
        t = time.perf_counter()
        w.start(warm=True, large=n > EXACT_KNN_MAX)
        w.warm.wait()
        t_warm = time.perf_counter() - t
        job = UmapJob(clustered(n, seed=4), worker=w).start()
        job.wait()
        assert job.state == "done", job.error
        print(f"{n:>8} {t_warm:>10.1f} {job.elapsed:>8.1f}")
        w.close()


def umap_rows(n):
    x = clustered(n, seed=3)
    numba_dir = tempfile.mkdtemp(prefix="memviz-numba-")  # empty: a machine's first UMAP

    def run(worker):
        t = time.perf_counter()
        job = UmapJob(x, worker=worker)
        t0 = time.perf_counter()
        job.start()
        gui = time.perf_counter() - t0
        job.wait()
        assert job.state == "done", job.error
        return time.perf_counter() - t, gui, job.result()

    rows = []
    cold = UmapWorker(numba_dir=numba_dir)
    cold.start(warm=False)
    total, gui, first = run(cold)
    rows.append(("new process, empty numba cache (first UMAP ever)", total, gui))
    total, gui, second = run(cold)
    rows.append(("same warm worker, second UMAP", total, gui))
    assert np.array_equal(first, second)  # deterministic for a seed
    cold.close()

    cached = UmapWorker(numba_dir=numba_dir)
    cached.start(warm=False)
    total, gui, _ = run(cached)
    rows.append(("new process, numba cache filled (a later app run)", total, gui))
    cached.close()

    warm = UmapWorker(numba_dir=numba_dir)
    t = time.perf_counter()
    warm.start(warm=True)
    warm.warm.wait()
    rows.append(("  warm_up() of a new process, numba cache filled", time.perf_counter() - t, 0.0))
    total, gui, _ = run(warm)
    rows.append(("  then UMAP in that warmed worker", total, gui))
    warm.close()

    nocache = UmapWorker(numba_dir=tempfile.mkdtemp(prefix="memviz-numba-"), cache_all_kernels=False)
    t = time.perf_counter()
    nocache.start(warm=True)
    nocache.warm.wait()
    rows.append(("  warm_up() with only umap's own cache=True kernels cached", time.perf_counter() - t, 0.0))
    nocache.close()
    print(f"\nUMAP of {n} x {DIM} (cosine, 15 neighbours, seed 42, exact kNN graph): wall time to result")
    print(f"{'case':<62} {'total s':>8} {'caller ms':>10}")
    for name, total, gui in rows:
        print(f"{name:<62} {total:>8.1f} {gui * 1e3:>10.2f}")
    print("caller ms = time UmapJob.start() holds the calling (GUI) thread")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    p.add_argument("--graph", type=int, nargs="+", default=[2000, 20_000], help="evidence memories per graph")
    p.add_argument("--umap-n", type=int, default=10_000)
    p.add_argument("--no-umap", action="store_true")
    p.add_argument("--umap-sizes", type=int, nargs="*", default=[],
                   help="also time UMAP at these sizes in a warmed worker (100000 takes minutes)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        map_rows(folder, args.sizes)
        graph_rows(folder, args.graph)
    if not args.no_umap:
        umap_rows(args.umap_n)
    if args.umap_sizes:
        umap_sizes(args.umap_sizes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
