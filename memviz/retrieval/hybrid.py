"""The assistant memory's hybrid search: FTS5 BM25 ranks and vector ranks fused by reciprocal rank fusion.

    score = 1/(k + fts_rank) + 1/(k + vector_rank),  k = 60, ranks from 1 among the candidates;
    a memory absent from a list (no matching word, no vector) gets no term from that list.

Unlike the assistant memory's (ADR 005) two short lists, every candidate is ranked, so the whole store can be
coloured by its fused score; the top of the ranking is the same.
"""
from __future__ import annotations

import numpy as np


def fts_rows(store, arrays, text: str) -> tuple[np.ndarray, np.ndarray]:
    """(rows, bm25) of every memory matching any word of `text`, best first (bm25 ascending,
    ties in store order). Memories written after the arrays were read are left out.

    The store answers with rowids (`fts_hits`, one per backend), mapped to rows and sorted with
    numpy here: a common word can match a quarter of a large store."""
    pairs = store.fts_hits(text)
    if not len(pairs):
        return np.zeros(0, np.int64), np.zeros(0)
    rowid, scores = pairs[:, 0].astype(np.int64), pairs[:, 1]
    rows = np.searchsorted(arrays.rowid, rowid)   # arrays are in rowid order
    known = rows < len(arrays.rowid)
    known[known] = arrays.rowid[rows[known]] == rowid[known]
    rows, scores = rows[known].astype(np.int64), scores[known].astype(np.float64)
    order = np.lexsort((rows, scores))
    return rows[order], scores[order]


def fts_ranks(n: int, hit_rows: np.ndarray, is_candidate: np.ndarray) -> np.ndarray:
    """Rank (from 1) of each row among the candidate hits, 0 where not a hit. Shape (n,)."""
    hits = hit_rows[is_candidate[hit_rows]]
    rank = np.zeros(n, dtype=np.int64)
    rank[hits] = np.arange(1, len(hits) + 1)
    return rank


def vector_ranks(idx: np.ndarray, rel_fast: np.ndarray, has_vec: np.ndarray, exact_fn, delta: float,
                 top: int) -> np.ndarray:
    """Rank (from 1) of each candidate position by cosine, descending, ties in candidate order;
    0 for candidates without a vector. The float32 cosines order the list; where neighbours in
    the first `top` places are closer than the float32 error, their exact cosines decide."""
    m = len(idx)
    pos = np.flatnonzero(has_vec[idx])
    rel = rel_fast[idx[pos]]
    order = pos[descending_order(rel)]
    vals = rel_fast[idx[order]]
    if len(order) > 1:
        close = np.flatnonzero(np.abs(np.diff(vals[: min(len(vals), top + 1)])) < 2 * delta)
        if close.size:
            # each close pair's run: extend to the whole run of near-equal neighbours
            start = close[0]
            end = close[-1] + 1
            limit = min(len(vals) - 1, 10 * top)  # past this the order only moves scores by < 1e-7
            while end < limit and vals[end] - vals[end + 1] < 2 * delta:
                end += 1
            seg = order[start:end + 1]
            exact = exact_fn(idx[seg])
            order[start:end + 1] = seg[np.lexsort((seg, -exact))]
    rank = np.zeros(m, dtype=np.int64)
    rank[order] = np.arange(1, len(order) + 1)
    return rank



def descending_order(values: np.ndarray) -> np.ndarray:
    """np.argsort(-values, kind="stable") of finite float32 values (float32 cosines, even when
    held as float64), in half the time: each value's float32
    bits, mapped so that unsigned order is descending value order, above its position, as one
    uint64 key; the keys are distinct, so numpy's fast unstable sort gives the stable order."""
    values = np.asarray(values)
    x = values.astype(np.float32)
    if len(x) >= 1 << 32 or not np.isfinite(x).all() or (values.dtype != np.float32 and not np.array_equal(x, values)):
        return np.argsort(-values, kind="stable")   # not float32 values (the cosines are): the plain sort
    b = (-x + np.float32(0.0)).view(np.uint32)   # + 0.0: -0.0 and 0.0 are one value, as in argsort
    key = np.where(b & np.uint32(0x80000000), ~b, b | np.uint32(0x80000000)).astype(np.uint64) << np.uint64(32)
    key |= np.arange(len(x), dtype=np.uint64)
    key.sort()
    return (key & np.uint64(0xFFFFFFFF)).astype(np.int64)
