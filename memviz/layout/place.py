"""Placing memories that are new since a layout was computed, without recomputing it.

Each new point goes to the similarity-weighted mean of the 2-D positions of its k nearest
laid-out neighbours in embedding space (cosine; the vectors are unit-norm). UMAP keeps
neighbourhoods, so this lands a point inside the cluster it belongs to.
"""
from __future__ import annotations

import numpy as np

from .knn import nearest


def place_by_neighbours(known_emb: np.ndarray, known_xy: np.ndarray, new_emb: np.ndarray, k: int = 10) -> np.ndarray:
    """(m, 2) float32 positions for the rows of `new_emb`; NaN when nothing is laid out."""
    out = np.full((new_emb.shape[0], 2), np.nan, dtype=np.float32)
    ok = ~np.isnan(known_xy).any(axis=1)
    known_emb, known_xy = known_emb[ok], known_xy[ok].astype(np.float64)
    if len(known_emb) == 0 or len(new_emb) == 0:
        return out
    nn, sim = nearest(new_emb, known_emb, k)
    w = 1.0 / (np.clip(1.0 - sim.astype(np.float64), 0.0, None) + 1e-3)  # an exact duplicate dominates
    out[:] = np.einsum("ik,ikd->id", w, known_xy[nn]) / w.sum(axis=1, keepdims=True)
    # a copy of a laid-out vector sits exactly on it, as the copies in the fit do (distinct.py)
    best = sim.argmax(axis=1)
    same = np.all(new_emb == known_emb[nn[np.arange(len(nn)), best]], axis=1)
    out[same] = known_xy[nn[same, best[same]]]
    return out


def place_rows(emb: np.ndarray, xy: np.ndarray, rows: np.ndarray, k: int = 10, most: int | None = None) -> np.ndarray:
    """place_by_neighbours for `rows` of one matrix whose laid-out rows are those with a finite
    `xy`: the neighbours are searched in `emb` itself, so the laid-out rows are never copied
    out (100 MB at 100k memories, per live refresh). `most`: past this many laid-out rows, the
    neighbours are searched among that many of them chosen at random (the same ones for the
    same rows laid out), so placing a new memory costs the same at 1M rows as at `most`, as a
    sampled layout places its rest (sampled.py). (len(rows), 2) float32, NaN when nothing near
    is laid out."""
    rows = np.asarray(rows, np.int64)
    out = np.full((len(rows), 2), np.nan, dtype=np.float32)
    if not len(rows):
        return out
    if most is not None:
        laid = np.flatnonzero(np.isfinite(xy[:, 0]))
        if len(laid) > most:
            anchors = np.sort(np.random.default_rng(0).choice(laid, size=most, replace=False))
            return place_by_neighbours(emb[anchors], xy[anchors], emb[rows], k)
    # the rows being placed (and rows without a vector or a place) may come up as neighbours:
    # ask for that many more, then keep the laid-out ones
    nn, sim = nearest(emb[rows], emb, k + len(rows) + 1)
    known = np.isfinite(xy[:, 0])
    for i in range(len(rows)):
        keep = known[nn[i]]
        idx, s = nn[i][keep][:k], sim[i][keep][:k]
        if len(idx):
            w = 1.0 / (np.clip(1.0 - s.astype(np.float64), 0.0, None) + 1e-3)
            out[i] = (w[:, None] * xy[idx].astype(np.float64)).sum(axis=0) / w.sum()
    return out
