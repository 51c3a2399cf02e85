"""The window's UMAP job on a large store: time and layout quality, this tree against a git revision.

    PYTHONPATH=. python bench/umap_job.py [--n 100000] [--data manifold|clustered|random] [--against REV] [--rounds 1]
                                          [--try SAMPLE:EPOCHS ...]

Each measurement runs in a fresh process, as the window's first UMAP of a session does: the shared
worker is started with `warm_up(n)` (numba's disk cache already filled by an earlier run: the
one-time compile of a new install is bench/layout.py's), the job is submitted at once (it waits
behind the warm-up, as in the window) and the time runs until the coordinates of every row are
back. `--against REV` exports that revision (git archive) and measures it the same way, the two
alternating, so both see the same machine. `--try 30000:200 20000:100` also runs this tree with
other values of layout.sampled.SAMPLE and EPOCHS (how sampled.py's were chosen). Columns:
  total s     warm_up(n) + job, wall clock: what the user waits for
  job s       total minus the warm-up (import umap, compile or load kernels)
  worker cpu  CPU seconds of the worker process over the whole run (one BLAS thread)
  caller cpu  CPU seconds of the calling process (distinct rows, sending, placing the rest)
  kNN@10      mean share of each of 2,000 random memories' 10 nearest (cosine, among all n) that
              are among its 10 nearest on the map: how well the map keeps neighbourhoods
  trust@10    sklearn's trustworthiness of the map of those 2,000 (1 = no false neighbours)
CPU seconds move far less with the machine's load than wall seconds: compare those when busy.
Data: `manifold` (the default): 50 clusters, each a 4-d gaussian spread along its own directions of
the 256-d space, so a memory's nearest neighbours mean something (kNN@10 can tell maps apart);
`clustered` is bench/layout.py's (50 isotropic gaussian clusters: inside a cluster the neighbours
are noise, kNN@10 is ~0 for any map); `random` is unit vectors without structure, as
bench/scale.py's stores (the worst case for UMAP's spectral initialisation).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def vectors(n: int, kind: str, dim: int = 256) -> np.ndarray:
    if kind == "manifold":
        rng = np.random.default_rng(4)
        centres, bases = rng.normal(size=(50, dim)), 0.5 * rng.normal(size=(50, 4, dim))
        label = rng.integers(0, 50, n)
        z, v = rng.normal(size=(n, 4)), centres[label]
        for c in range(50):  # (one cluster at a time: bases[label] would be n x 4 x 256 doubles)
            v[label == c] += z[label == c] @ bases[c]
        v += 0.05 * rng.normal(size=(n, dim))
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    if kind == "clustered":
        sys.path.insert(0, HERE)
        from layout import clustered  # bench/layout.py's data (it puts the tree it sits in on sys.path: undo)
        sys.path[:] = [p for p in sys.path if p not in (HERE, ROOT)]
        return clustered(n, dim=dim, seed=4)
    v = np.random.default_rng(4).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def quality(X: np.ndarray, Y: np.ndarray, m: int = 2000, k: int = 10) -> tuple[float, float]:
    """(kNN@k, trustworthiness@k) of the map Y of X, on m random rows (exact neighbours, numpy)."""
    from sklearn.manifold import trustworthiness

    q = np.random.default_rng(0).choice(len(X), m, replace=False)
    overlap = []
    for s in range(0, m, 100):
        rows = q[s:s + 100]
        hi = np.argpartition(-(X[rows] @ X.T), k, axis=1)[:, :k + 1]
        lo = np.argpartition(((Y[rows, None, :] - Y[None]) ** 2).sum(-1), k, axis=1)[:, :k + 1]
        overlap += [len((set(h) & set(lo_)) - {r}) / k for r, h, lo_ in zip(rows, hi, lo)]
    return float(np.mean(overlap)), float(trustworthiness(X[q], Y[q], n_neighbors=k, metric="cosine"))


def probe(n: int, kind: str, sample_epochs: str | None = None) -> dict:
    """One window-like first UMAP of a session, in this process, with the memviz on PYTHONPATH."""
    import psutil

    import memviz
    from memviz.layout import UmapJob, UmapWorker
    from memviz.layout import umap_worker as uw

    if sample_epochs:
        from memviz.layout import sampled
        sampled.SAMPLE, sampled.EPOCHS = (int(v) for v in sample_epochs.split(":"))

    X = vectors(n, kind)
    w = UmapWorker()
    uw._shared = w  # warm_up() starts this worker, as the window's shared one
    t0, c0 = time.perf_counter(), time.process_time()
    uw.warm_up(n)
    job = UmapJob(X, worker=w).start()
    w.warm.wait()
    warm = time.perf_counter() - t0
    job.wait()
    total = time.perf_counter() - t0
    caller = time.process_time() - c0
    assert job.state == "done", job.error
    cpu = psutil.Process(w.pid).cpu_times()
    coords = job.result()
    w.close()
    knn, trust = quality(X, coords)
    return dict(tree=os.path.dirname(os.path.dirname(memviz.__file__)), total=total, job=total - warm,
                worker_cpu=cpu.user + cpu.system, caller_cpu=caller, knn=knn, trust=trust,
                method=getattr(job, "method_text", ""), load=os.getloadavg()[0])


def run_probe(tree: str, n: int, kind: str, sample_epochs: str | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=tree)
    extra = ["--try", sample_epochs] if sample_epochs else []
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--probe", "--n", str(n), "--data", kind] + extra,
                         env=env, cwd=tree, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"probe in {tree} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def export(rev: str, folder: str) -> str:
    tree = os.path.join(folder, rev.replace("/", "_"))
    os.makedirs(tree)
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
    return tree


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--data", choices=("manifold", "clustered", "random"), default="manifold")
    p.add_argument("--against", help="a git revision to measure the same way, alternating with this tree")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--try", dest="tries", nargs="*", default=[], metavar="SAMPLE:EPOCHS")
    p.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.probe:
        print(json.dumps(probe(args.n, args.data, args.tries[0] if args.tries else None)))
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        trees = [("this tree", ROOT, None)] + ([(args.against, export(args.against, folder), None)] if args.against else [])
        trees += [(f"tree {t}", ROOT, t) for t in args.tries]
        for _ in range(args.rounds):
            for name, tree, sample_epochs in trees:
                print(f"  {name} ...", file=sys.stderr, flush=True)
                rows.append(dict(run_probe(tree, args.n, args.data, sample_epochs), name=name))
                r = rows[-1]
                print(f"    total {r['total']:.1f} s, worker cpu {r['worker_cpu']:.1f} s, caller cpu {r['caller_cpu']:.1f} s, "
                      f"kNN@10 {r['knn']:.3f}, load {r['load']:.1f}", file=sys.stderr, flush=True)
    print(f"\nThe window's first UMAP of a session, {args.n:,} x 256 ({args.data}); load = 1-min load average at the end")
    print(f"{'code':<17} {'total s':>8} {'job s':>7} {'worker cpu s':>13} {'caller cpu s':>13} {'kNN@10':>7} "
          f"{'trust@10':>9} {'load':>5}  method")
    for r in rows:
        print(f"{r['name'][:17]:<17} {r['total']:>8.1f} {r['job']:>7.1f} {r['worker_cpu']:>13.1f} {r['caller_cpu']:>13.1f} "
              f"{r['knn']:>7.3f} {r['trust']:>9.4f} {r['load']:>5.1f}  {r['method']}")
    if args.against:
        new = [r for r in rows if r["name"] == "this tree"]
        old = [r for r in rows if r["name"] == args.against]
        for key in ("total", "job", "worker_cpu", "caller_cpu"):
            ratio = np.median([o[key] for o in old]) / max(np.median([x[key] for x in new]), 1e-9)
            print(f"  {key}: {args.against} / this tree = {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
