"""Exact k nearest neighbours by cosine similarity (unit-norm rows), in blocks of bounded memory.

Used to place new memories and as UMAP's neighbour graph up to a few tens of thousands of
points: a blocked matrix product is faster there than compiling pynndescent's NN-descent,
which numba cannot cache and recompiles in every new process.

Selecting the top k of each similarity row is the costly part after the product (argpartition
over 100k columns). It is narrowed first: the columns are cut into groups of GROUP, and the k
groups with the highest maxima hold every one of the top k (the k-th best value is at least
the k-th best group maximum), so only k * GROUP candidates per row are partitioned. Exact.

The neighbour graph of one matrix (`nearest_self`, UMAP's graph of the sample) computes each
similarity once: the product is symmetric, so a tile of rows I against columns J (J before I)
serves I's rows and, transposed, J's rows; half the multiply-adds of nearest(X, X, k).
"""
from __future__ import annotations

import numpy as np

BLOCK_CELLS = 20_000_000  # similarity block: 80 MB of float32
GROUP = 64
TILE = 2048               # nearest_self's square tiles: 16 MB of float32 each
TILE_GROUP = 16           # a tile row is short (TILE columns): smaller groups narrow it further


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


def nearest_self(X: np.ndarray, k: int, on_block=None, tile: int = TILE) -> tuple[np.ndarray, np.ndarray]:
    """nearest(X, X, k) (each row finds itself first), with each similarity computed once (see the
    module note). `on_block(done, total)` is called after each row tile (progress; the work per
    tile grows with its index, so `done` counts tiles, not rows)."""
    n = X.shape[0]
    k = max(0, min(k, n))
    best_i = np.zeros((n, k), np.int64)
    best_s = np.full((n, k), -np.inf, np.float32)
    starts = range(0, n, tile)
    total = len(starts) * (len(starts) + 1) // 2
    for t, a in enumerate(starts):
        rows = slice(a, min(a + tile, n))
        for c in starts[:t + 1]:
            cols = slice(c, min(c + tile, n))
            s = X[rows] @ X[cols].T
            _merge(best_i, best_s, rows, *_top(s, k, axis=1), c)
            if c != a:  # the same tile read down its columns: the rows of `cols` among the columns `rows`
                _merge(best_i, best_s, cols, *_top(s, k, axis=0), a)
        if on_block is not None:
            on_block((t + 1) * (t + 2) // 2, total)
    order = np.argsort(-best_s, axis=1, kind="stable")
    return np.take_along_axis(best_i, order, axis=1), np.take_along_axis(best_s, order, axis=1)


def _top(s: np.ndarray, k: int, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """(index, value) of the k best along `axis` of a tile, for each position across it, as
    (positions, k) arrays (unordered). Narrowed by group maxima as _candidates, with groups
    strided (group j: j, j + G, j + 2G, ...) so the maxima reduce whole contiguous rows."""
    length, g = s.shape[axis], TILE_GROUP
    positions = s.shape[1 - axis]
    G = length // g
    if G <= k:
        cand = np.broadcast_to(np.arange(length), (positions, length))
    else:
        gmax = s[:, :G * g].reshape(-1, g, G).max(axis=1) if axis == 1 else s[:G * g].reshape(g, G, -1).max(axis=0).T
        best = np.argpartition(gmax, G - k, axis=1)[:, G - k:]                             # (positions, k)
        cand = (best[:, None, :] + G * np.arange(g)[None, :, None]).reshape(positions, g * k)
        tail = np.arange(G * g, length)  # the ones after the last whole group are always candidates
        cand = np.concatenate([cand, np.broadcast_to(tail, (positions, len(tail)))], axis=1)
    cs = np.take_along_axis(s, cand, axis=1) if axis == 1 else s[cand, np.arange(positions)[:, None]]
    if k < cs.shape[1]:
        part = np.argpartition(cs, cs.shape[1] - k, axis=1)[:, cs.shape[1] - k:]
        return np.take_along_axis(cand, part, axis=1), np.take_along_axis(cs, part, axis=1)
    return np.ascontiguousarray(cand), cs


def _merge(best_i, best_s, rows: slice, cols, vals, offset: int) -> None:
    """Keep the k best of each row's current k and a tile's candidates."""
    k = best_i.shape[1]
    ai = np.concatenate([best_i[rows], cols + offset], axis=1)
    av = np.concatenate([best_s[rows], vals], axis=1)
    keep = np.argpartition(av, av.shape[1] - k, axis=1)[:, -k:]
    best_i[rows] = np.take_along_axis(ai, keep, axis=1)
    best_s[rows] = np.take_along_axis(av, keep, axis=1)


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
