"""Exact k nearest neighbours by cosine similarity (unit-norm rows), in blocks of bounded memory.

Used to place new memories and as UMAP's neighbour graph up to a few tens of thousands of
points: a blocked matrix product is faster there than compiling pynndescent's NN-descent,
which numba cannot cache and recompiles in every new process.

Selecting the top k of each similarity row is the costly part after the product (argpartition
over 100k columns). It is narrowed first: the columns are cut into groups of GROUP, and the k
groups with the highest maxima hold every one of the top k (the k-th best value is at least
the k-th best group maximum), so only k * GROUP candidates per row are partitioned. Exact.
"""
from __future__ import annotations

import numpy as np

BLOCK_CELLS = 20_000_000  # similarity block: 80 MB of float32
GROUP = 64


def nearest(query: np.ndarray, base: np.ndarray, k: int, on_block=None) -> tuple[np.ndarray, np.ndarray]:
    """(indices (m, k) int64, similarities (m, k) float32), most similar first.
    `on_block(done_rows, total_rows)` is called after each block (progress)."""
    m, n = query.shape[0], base.shape[0]
    k = max(0, min(k, n))
    idx = np.empty((m, k), dtype=np.int64)
    sims = np.empty((m, k), dtype=np.float32)
    if k == 0 or m == 0:
        return idx, sims
    step = max(1, BLOCK_CELLS // max(n, 1))
    for start in range(0, m, step):
        s = query[start:start + step] @ base.T
        cand = _candidates(s, k)
        cs = np.take_along_axis(s, cand, axis=1)
        part = np.argpartition(cs, cs.shape[1] - k, axis=1)[:, -k:] if k < cs.shape[1] else \
            np.broadcast_to(np.arange(cs.shape[1]), cs.shape)
        ps = np.take_along_axis(cs, part, axis=1)
        order = np.argsort(-ps, axis=1, kind="stable")
        idx[start:start + step] = np.take_along_axis(np.take_along_axis(cand, part, axis=1), order, axis=1)
        sims[start:start + step] = np.take_along_axis(ps, order, axis=1)
        if on_block is not None:
            on_block(min(start + step, m), m)
    return idx, sims


def _candidates(s: np.ndarray, k: int) -> np.ndarray:
    """Column indices per row that surely include the row's top k (see the module note)."""
    b, n = s.shape
    groups = n // GROUP
    if groups <= k:
        return np.broadcast_to(np.arange(n), s.shape)
    gmax = s[:, :groups * GROUP].reshape(b, groups, GROUP).max(axis=2)
    best = np.argpartition(gmax, groups - k, axis=1)[:, -k:]
    cols = (best[:, :, None] * GROUP + np.arange(GROUP)).reshape(b, k * GROUP)
    tail = np.arange(groups * GROUP, n)  # the columns after the last whole group are always candidates
    return np.concatenate([cols, np.broadcast_to(tail, (b, len(tail)))], axis=1)
