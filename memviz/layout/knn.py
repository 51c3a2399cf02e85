"""Exact k nearest neighbours by cosine similarity (unit-norm rows), in blocks of bounded memory.

Used to place new memories and as UMAP's neighbour graph up to a few tens of thousands of
points: a blocked matrix product is faster there than compiling pynndescent's NN-descent,
which numba cannot cache and recompiles in every new process.
"""
from __future__ import annotations

import numpy as np

BLOCK_CELLS = 20_000_000  # similarity block: 80 MB of float32


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
        part = np.argpartition(-s, k - 1, axis=1)[:, :k] if k < n else np.broadcast_to(np.arange(n), s.shape)
        ps = np.take_along_axis(s, part, axis=1)
        order = np.argsort(-ps, axis=1, kind="stable")
        idx[start:start + step] = np.take_along_axis(part, order, axis=1)
        sims[start:start + step] = np.take_along_axis(ps, order, axis=1)
        if on_block is not None:
            on_block(min(start + step, m), m)
    return idx, sims
