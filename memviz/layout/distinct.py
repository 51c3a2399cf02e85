"""Identical vectors, found once: a layout is fitted on the distinct ones and every copy drawn
where its original is.

Agent stores repeat themselves ("Isabella is idle" hundreds of times in a Generative Agents
persona; half of the old assistant sample): fitting UMAP on the copies spends its neighbour
graph on points at distance 0 and scatters the rest as specks around one dense core.

Rows are compared bit for bit. They are sorted by a random projection (one matrix-vector
product) and only neighbours in that order with the same projection are compared in full,
so 100k x 256 takes tens of milliseconds, not the seconds of np.unique(axis=0).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Distinct:
    first: np.ndarray    # row of each distinct vector's first copy, ascending
    inverse: np.ndarray  # per row: the index (into `first`) of its distinct vector
    counts: np.ndarray   # per distinct vector: how many rows hold it

    @property
    def copies(self) -> np.ndarray:
        """Per row: how many rows share its vector (1 = unique)."""
        return self.counts[self.inverse]

    def expand(self, fitted: np.ndarray) -> np.ndarray:
        """Per-distinct results (len(first), ...) spread back to every row."""
        return np.asarray(fitted)[self.inverse]


def _row_keys(flat: np.ndarray) -> np.ndarray:
    """A hash of each row's bits over up to 32 columns spread across it (integer arithmetic:
    a float product is not bit-reproducible across rows, BLAS blocks them differently)."""
    bits = flat.view(np.uint8).reshape(flat.shape[0], -1)
    width = bits.shape[1] // 4 * 4
    words = bits[:, :width].view(np.uint32) if width else np.zeros((flat.shape[0], 0), np.uint32)
    cols = np.unique(np.linspace(0, words.shape[1] - 1, min(32, words.shape[1])).astype(np.int64)) \
        if words.shape[1] else np.zeros(0, np.int64)
    mult = np.random.default_rng(12345).integers(1, 2 ** 63, size=len(cols), dtype=np.uint64) | np.uint64(1)
    key = np.zeros(flat.shape[0], np.uint64)
    for c, m in zip(cols, mult):
        key = key * np.uint64(1_000_003) + words[:, c].astype(np.uint64) * m  # wraps: fine for a hash
    for c in range(width, bits.shape[1]):
        key = key * np.uint64(257) + bits[:, c].astype(np.uint64)
    return key


def distinct_rows(X: np.ndarray) -> Distinct:
    X = np.ascontiguousarray(X)
    n = X.shape[0]
    if n == 0:
        z = np.zeros(0, np.int64)
        return Distinct(z, z, z)
    flat = X.reshape(n, -1)
    key = _row_keys(flat)
    order = np.argsort(key, kind="stable")
    key = key[order]
    equal_key = np.zeros(n, bool)
    equal_key[1:] = key[1:] == key[:-1]
    same = np.zeros(n, bool)  # same[j]: sorted row j has the bits of sorted row j-1
    cand = np.flatnonzero(equal_key)
    if len(cand):
        a, b = flat[order[cand]], flat[order[cand - 1]]
        same[cand] = np.all(a.view(np.uint8).reshape(len(cand), -1) == b.view(np.uint8).reshape(len(cand), -1), axis=1)
    group_sorted = np.cumsum(~same) - 1
    # a hash collision inside a run of equal keys (rare): settle that run exactly
    for j in np.flatnonzero(equal_key & ~same):
        lo = j
        while lo > 0 and equal_key[lo]:
            lo -= 1
        hi = j
        while hi + 1 < n and equal_key[hi + 1]:
            hi += 1
        run = order[lo:hi + 1]
        _, local = np.unique(flat[run].view(np.uint8).reshape(len(run), -1), axis=0, return_inverse=True)
        group_sorted[lo:hi + 1] = group_sorted.max() + 1 + local.ravel()  # fresh ids, made dense below
    inverse = np.empty(n, np.int64)
    inverse[order] = group_sorted
    # number the groups by their first row, so `first` ascends and results follow row order
    _, inverse = np.unique(inverse, return_inverse=True)  # dense after any collision fix
    groups = int(inverse.max()) + 1
    first = np.full(groups, n, np.int64)
    np.minimum.at(first, inverse, np.arange(n))
    by_first = np.argsort(first, kind="stable")
    rank = np.empty(groups, np.int64)
    rank[by_first] = np.arange(groups)
    inverse = rank[inverse]
    counts = np.bincount(inverse, minlength=groups)
    return Distinct(first[by_first], inverse, counts)
