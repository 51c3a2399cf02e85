"""PCA to 2-D: the map shown at once, before UMAP is ready.

The covariance route (X^T X, then an eigendecomposition of a dim x dim matrix) is exact and
fast enough at the sizes memviz opens (bench/layout.py), so no randomised or sampled
approximation is needed.
"""
from __future__ import annotations

import numpy as np

from ..blas import one_blas_thread


def embedded_rows(embedding: np.ndarray) -> np.ndarray:
    """Rows that hold a vector (MemoryArrays keeps zero rows for memories without one)."""
    return np.any(embedding != 0, axis=1)


def pca_2d(embedding: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """(n, 2) float32 projection on the first two principal components, aligned to the rows of
    `embedding`. Rows outside `mask` (default: the non-zero rows) are NaN and take no part in
    the fit. Deterministic: each axis is signed so its largest loading is positive."""
    # One BLAS thread: on a busy machine multi-threaded BLAS spin-waits (a small eigendecomposition
    # then takes seconds); single-threaded it is also bit-reproducible.
    with one_blas_thread():
        return _pca_2d(embedding, mask)


def _pca_2d(embedding: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    x = np.asarray(embedding, dtype=np.float32)
    n = x.shape[0]
    out = np.full((n, 2), np.nan, dtype=np.float32)
    if mask is None:
        mask = embedded_rows(x)
    mask = np.asarray(mask, dtype=bool)
    fit = x if mask.all() else x[mask]
    m = fit.shape[0]
    if m == 0 or x.ndim != 2 or x.shape[1] == 0:
        return out
    # a large store's axes from every k-th row (about 50 M numbers: 200k rows at 256-d, 33k at
    # 1536-d): that many fix two axes of a first map as well as all rows would
    rows = max(2_000, _FIT_CELLS // x.shape[1])
    part = fit[::-(-m // rows)] if m > rows else fit
    part_mean = part.mean(axis=0, dtype=np.float64)
    comps = _top_axes(part, part_mean) if x.shape[1] >= _ITERATE_DIM else _exact_axes(part, part_mean)
    if comps.shape[1] < 2:                    # 1-D embeddings: second axis is zero
        comps = np.pad(comps, ((0, 0), (0, 2 - comps.shape[1])))
    signs = np.sign(comps[np.abs(comps).argmax(axis=0), [0, 1]])
    comps *= np.where(signs == 0, 1.0, signs)
    # centred after the projection: the mean of the projected rows is the projection of the mean
    # (a pass over two columns, not over the whole matrix)
    proj = fit @ comps.astype(np.float32)
    out[mask] = proj - proj.mean(axis=0, dtype=np.float64).astype(np.float32)
    return out


_FIT_CELLS = 51_200_000
_ITERATE_DIM = 768   # from here the d x d covariance (100k x 1536: 2.4e11 multiply-adds) costs seconds
_SLICE_BYTES = 384 << 10  # rows of the subspace iteration's products that stay in a core's cache


def _exact_axes(fit: np.ndarray, mean: np.ndarray) -> np.ndarray:
    # covariance without materialising the centred copy (100 MB at 100k x 256)
    cov = (fit.T @ fit).astype(np.float64) / fit.shape[0] - np.outer(mean, mean)
    _, vecs = np.linalg.eigh(cov)             # ascending
    return vecs[:, ::-1][:, :2]


def _top_axes(fit: np.ndarray, mean: np.ndarray, block: int = 8, rounds: int = 8) -> np.ndarray:
    """The two leading eigenvectors of the covariance by subspace iteration on a block of 8
    (fixed start: deterministic), two thin products per round instead of the d x d matrix.
    Both products of a round are taken a slice of rows at a time, so the second reads the slice
    from the CPU's cache, not from memory."""
    m, d = fit.shape
    rows = max(8, _SLICE_BYTES // (4 * d))

    def cov_times(v):
        v32, acc = v.astype(np.float32), np.zeros((d, v.shape[1]))
        for s in range(0, m, rows):
            acc += fit[s:s + rows].T @ (fit[s:s + rows] @ v32)
        return acc / m - np.outer(mean, mean @ v)
    v = np.linalg.qr(np.random.default_rng(0).standard_normal((d, block)))[0]
    for _ in range(rounds):
        v = np.linalg.qr(cov_times(v))[0]
    w, u = np.linalg.eigh(v.T @ cov_times(v))   # Rayleigh-Ritz on the block, ascending
    return v @ u[:, ::-1][:, :2]
