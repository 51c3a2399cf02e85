"""A map of a store too large to lay out whole: UMAP fitted on a random sample, every other
memory placed from its nearest sampled neighbours (place.py), and the method said in words.

UMAP's cost grows faster than the number of points and, past knn.py's exact neighbour graph
(EXACT_KNN_MAX points), it needs NN-descent's compile in every new worker; a sample of
SAMPLE points keeps the fit on the exact graph. Placing the rest compares each memory with
ANCHORS of the sampled points (a float32 product per block, knn.py) and puts it at the
similarity-weighted mean of its K nearest: it lands in the cluster it belongs to; the fine
structure inside a cluster is the sample's. The fit itself is passed in (`fit(X) -> coords`),
so this module runs no worker of its own: the caller gives it
`lambda X, task: UmapJob(X, params, task=task).run()`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..tasks import Task, quiet
from .place import place_by_neighbours

# stores up to this many distinct vectors are laid out whole: it is umap_worker.EXACT_KNN_MAX, past
# which UMAP needs NN-descent (its compile in every new worker, and a slower graph); the sampled
# layout takes a fraction of the whole one's time (bench/scale.py, the manual's performance page)
SAMPLE_ABOVE = 30_000
# The fitted sample (knn.nearest_self's exact graph, no NN-descent) and its optimisation epochs
# (umap's default is 200 past 10k points): these keep the map's neighbourhoods as 30,000 points
# and 200 epochs did (kNN@10 and trustworthiness, bench/umap_job.py, the manual's performance page) for a
# third of the fit's CPU
SAMPLE = 20_000
EPOCHS = 100
ANCHORS = 8_192          # sampled points each other memory is compared with
K = 10
_PLACE_CHUNK = 32_768
PLACED = "placed by neighbours"   # in method_text of a sampled layout


@dataclass
class SampledLayout:
    coords: np.ndarray      # (n, 2) float32, aligned with the input rows
    sample: np.ndarray      # row indices that were fitted
    method: str             # the method in a line, for the window to show (method_text)


def needs_sample(n_points: int) -> bool:
    return n_points > SAMPLE_ABOVE


def choose_sample(n_points: int, size: int = SAMPLE, seed: int = 42) -> np.ndarray:
    """`size` distinct row indices, uniformly at random (same seed, same sample), in row order."""
    if size >= n_points:
        return np.arange(n_points)
    return np.sort(np.random.default_rng(seed).choice(n_points, size=size, replace=False))


def method_text(n_points: int, sample: int, unit: str = "memories") -> str:
    """The method in a line the map's toolbar can show (`unit`: "distinct vectors" when copies
    were fitted as one)."""
    if sample >= n_points:
        return f"UMAP of all {n_points:,} {unit}"
    return f"UMAP of a random {sample:,} of {n_points:,} {unit}; the other {n_points - sample:,} {PLACED}"


def method_detail(anchors: int = ANCHORS, k: int = K) -> str:
    """How "placed by neighbours" is done, for a tooltip beside method_text."""
    return (f"UMAP was fitted on a random sample; every other memory sits at the similarity-weighted mean "
            f"of its {k} nearest among {anchors:,} sampled memories (cosine), inside the cluster it belongs to")


def sampled_layout(X: np.ndarray, fit, *, sample: int = SAMPLE, anchors: int = ANCHORS, k: int = K,
                   seed: int = 42, task: Task | None = None) -> SampledLayout:
    """Lay out the unit-norm rows of X: `fit(X[sample], task) -> (m, 2)` on the sample (the first
    60% of the task's progress), then place the others (the rest; cancellable between blocks)."""
    task = task or quiet()
    chosen = choose_sample(len(X), sample, seed)
    fitted = fit(np.ascontiguousarray(X[chosen], dtype=np.float32), task.part(0.0, 0.6))
    task.check()
    return place_rest(X, chosen, fitted, anchors=anchors, k=k, seed=seed, task=task.part(0.6, 1.0))


def place_rest(X: np.ndarray, chosen: np.ndarray, fitted: np.ndarray, *, anchors: int = ANCHORS, k: int = K,
               seed: int = 42, task: Task | None = None) -> SampledLayout:
    """The layout of every row of X from the fitted coordinates of rows `chosen`: the others
    placed from their nearest sampled neighbours (cancellable between blocks)."""
    place = task or quiet()
    n = len(X)
    coords = np.full((n, 2), np.nan, np.float32)
    coords[chosen] = np.asarray(fitted, dtype=np.float32)
    anchor_rows = chosen[choose_sample(len(chosen), anchors, seed + 1)]
    rest = np.setdiff1d(np.arange(n), chosen, assume_unique=True)
    anchor_emb, anchor_xy = X[anchor_rows], coords[anchor_rows]
    for start in range(0, len(rest), _PLACE_CHUNK):
        place.check()
        rows = rest[start:start + _PLACE_CHUNK]
        coords[rows] = place_by_neighbours(anchor_emb, anchor_xy, X[rows], k=k)
        done = min(start + _PLACE_CHUNK, len(rest))
        place.progress(done / max(len(rest), 1), f"placing {done:,} of {len(rest):,} memories")
    return SampledLayout(coords=coords, sample=chosen,
                         method=method_text(n, len(chosen)))
