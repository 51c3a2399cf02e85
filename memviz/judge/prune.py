"""Which candidates can reach a query's top `depth` under any non-negative weights: the rest
are dominated, and an evaluator that re-ranks many weight settings need not score them.

Dominance. With every weight ≥ 0 a score is a monotone function of each component (a product
and a sum of non-negative-weighted terms, rounded: rounding is monotone too), so a candidate s
that is ≥ r in every dimension scores ≥ r for every setting. To make "dominates" a strict
partial order (no cycles among equal candidates) two candidates equal in every dimension
dominate by candidate order: the earlier one dominates. A candidate dominated by `depth` or
more others is pruned; `kept` returns the others.

What a pruned candidate is owed (the certificate an evaluator checks, `certified`): every
pruned r has at least `depth` dominators *among the kept* (take a dominator of r that is not
kept and maximal among those: its own `depth` dominators dominate r, are kept, by
maximality). So for any setting, with x the score of the d-th best kept candidate (d ≤ depth),
if fewer than `depth` kept candidates score ≥ x, no pruned candidate scores ≥ x, and the kept
candidates' top d (best score first, ties in candidate order) is the top d of all. When the
check fails (many exact ties at the cut) the evaluator ranks that query in full.

Counting, conservatively (a candidate is pruned only if it surely has `depth` dominators):
each dimension is cut into buckets at its values — fine near the top (the 1st, 2nd, 3rd … best
values, then geometrically wider), coarse below — and a candidate in a bucket strictly better
in every dimension surely dominates (its values are strictly greater). A bucket holding one
value only counts as "≥" for its own members too; a cell equal in every dimension counts its
earlier members. One bincount over the cells and a cumulative sum per dimension give every
candidate's count of sure dominators. A few milliseconds per 100k candidates.
"""
from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: buckets grow by this factor below the top (the 1st, 2nd, 3rd, 4th, 6th, 9th … best values)
RATIO = 1.5
#: the best values, exact ranks from a partition; below them, edges from a sample of the rest
TOP = 4096
SAMPLE = 1024


@dataclass(frozen=True)
class Buckets:
    """One dimension cut into buckets, 0 the best: `index` per candidate, `size` buckets,
    `uniform` per bucket (it holds one value only)."""

    index: np.ndarray
    size: int
    uniform: np.ndarray


def _geometric(n: int) -> np.ndarray:
    r = np.unique(np.floor(RATIO ** np.arange(0, int(np.log(max(n, 2)) / np.log(RATIO)) + 2)).astype(np.int64) - 1)
    return r[r < n]


def buckets(values: np.ndarray, *, distinct: int = 0) -> Buckets:
    """`values` (higher is better, no NaN) cut into buckets (see the module's docstring);
    with `distinct`, values with at most that many distinct values get a bucket each (a
    dimension cut once and used for many queries: importance, a key of recency)."""
    v = np.asarray(values, dtype=np.float64)
    n = len(v)
    if n == 0:
        return Buckets(np.zeros(0, np.int64), 1, np.ones(1, bool))
    top_n = min(n, TOP)
    few = np.unique(v) if distinct else None
    if few is not None and len(few) <= distinct:
        best, deep_edges = few[::-1], np.zeros(0)
        top_n = len(few)
    elif top_n < n:
        part = np.partition(v, n - top_n)
        best = np.sort(part[n - top_n:])[::-1]
        rest = part[:n - top_n]
        deeper = np.sort(rest[:: max(1, len(rest) // SAMPLE)])[::-1]
        fractions = _geometric(len(rest)) / max(len(rest), 1)
        deep_edges = deeper[np.minimum((fractions * len(deeper)).astype(np.int64), len(deeper) - 1)]
    else:
        best = np.sort(v)[::-1]
        deep_edges = np.zeros(0)
    chosen = best if few is not None and len(few) <= distinct else best[_geometric(top_n)]
    edges = np.unique(np.concatenate([chosen, deep_edges]))   # ascending, data values
    index = above(v, edges)
    size = len(edges) + 1
    lows = np.concatenate([edges[::-1], [v.min()]])                  # each bucket's least value
    counts = np.bincount(index, minlength=size)
    at_low = np.bincount(index[v == lows[index]], minlength=size)
    return Buckets(index, size, counts == at_low)


def kept(dims: Sequence[Buckets], depth: int) -> np.ndarray:
    """The candidates (positions, ascending) that are not surely dominated by `depth` others."""
    n = len(dims[0].index)
    if n <= depth:
        return np.arange(n)
    return np.flatnonzero(dominators(dims) < depth)


def dominators(dims: Sequence[Buckets]) -> np.ndarray:
    """How many others surely dominate each candidate (a lower bound of how many do)."""
    n = len(dims[0].index)
    sizes = [d.size for d in dims]
    flat = np.zeros(n, np.int64)
    for d in dims:
        flat *= d.size
        flat += d.index
    counts = np.bincount(flat, minlength=int(np.prod(sizes))).reshape(sizes)
    sure = counts
    for ax, d in enumerate(dims):
        inclusive = np.cumsum(sure, axis=ax)
        shape = [1] * len(sizes)
        shape[ax] = d.size
        sure = np.where(d.uniform.reshape(shape), inclusive, inclusive - sure)
    sure = sure.reshape(-1)
    dominated = sure[flat]
    equal = np.ones(sizes, bool)   # cells uniform in every dimension: their members are equal candidates
    for ax, d in enumerate(dims):
        shape = [1] * len(sizes)
        shape[ax] = d.size
        equal &= d.uniform.reshape(shape)
    equal = equal.reshape(-1)
    same = np.flatnonzero(equal[flat])
    if len(same):
        # an equal candidate dominates only if it is earlier: count the earlier ones alone
        order = same[np.argsort(flat[same], kind="stable")]
        cells = flat[order]
        starts = np.flatnonzero(np.r_[True, cells[1:] != cells[:-1]])
        first = np.repeat(starts, np.diff(np.r_[starts, len(order)]))
        earlier = np.arange(len(order)) - first
        dominated[order] -= counts.reshape(-1)[cells] - earlier
    return dominated


def certified(scores: np.ndarray, x: float, depth: int) -> bool:
    """Whether the kept candidates' top d is the top d of all: fewer than `depth` kept
    candidates score ≥ x, the d-th best kept score (the module's docstring)."""
    return int(np.count_nonzero(scores >= x)) < depth


# ------------------------------------------------------------------ the per-query passes, numba or numpy
_kernels = None
_lock = threading.Lock()


def kernels():
    """The numba kernels (kernels.py), compiled (or read from numba's cache) on first use and
    probed; None when numba cannot be used (then numpy gives the same answers). Blocks while
    compiling: an evaluator's precompute calls it, off the GUI thread."""
    global _kernels
    with _lock:
        if _kernels is None:
            try:
                from . import kernels as K

                out, ge = np.zeros((1, 2), np.int64), np.zeros(1, np.int64)
                K.top_segments(np.array([1.0, 3.0, 3.0]), np.array([0, 3]), 2, out, ge)
                idx = np.zeros(3, np.int64)
                K.bucket_index(np.array([0.0, 1.0, 2.5]), np.array([1.0, 2.0]), idx)
                _kernels = K if out.tolist() == [[1, 2]] and ge.tolist() == [2] and idx.tolist() == [2, 1, 0] else False
            except Exception:  # noqa: BLE001 - any numba failure means: use numpy
                _kernels = False
        return _kernels or None


def above(v: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """How many of `edges` (ascending) lie strictly above each value of `v`."""
    K = kernels()
    if K is None:
        return len(edges) - np.searchsorted(edges, v, side="right")
    out = np.empty(len(v), np.int64)
    K.bucket_index(np.ascontiguousarray(v, np.float64), np.ascontiguousarray(edges, np.float64), out)
    return out


def top(s: np.ndarray, d: int) -> np.ndarray | None:
    """Positions of the `d` best of `s`, best first, ties in position order; None when `s`
    holds NaN (its order is not a score's)."""
    n = len(s)
    if n == 0:
        return np.zeros(0, np.int64)
    if np.isnan(s).any():
        return None
    m = min(d, n)
    x = np.partition(s, n - m)[n - m]
    region = np.flatnonzero(s >= x)
    return region[np.argsort(-s[region], kind="stable")][:m]


def top_segments(s: np.ndarray, offsets: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """For each segment of `s` (one query's kept candidates): its best `d` (flat positions, -1
    padded, best first, ties in position order) and how many of its values reach the d-th best
    (-1: the segment holds NaN)."""
    nq = len(offsets) - 1
    out = np.full((nq, d), -1, np.int64)
    ge = np.zeros(nq, np.int64)
    K = kernels()
    if K is not None:
        K.top_segments(np.ascontiguousarray(s, np.float64), np.ascontiguousarray(offsets, np.int64), int(d), out, ge)
        return out, ge
    for q in range(nq):
        a, b = int(offsets[q]), int(offsets[q + 1])
        seg = s[a:b]
        t = top(seg, d)
        if t is None:
            ge[q] = -1
            continue
        out[q, :len(t)] = a + t
        ge[q] = int(np.count_nonzero(seg >= seg[t[-1]])) if len(t) else 0
    return out, ge


__all__ = ["Buckets", "above", "buckets", "certified", "dominators", "kept", "kernels", "top", "top_segments"]
