"""The numba kernels of a judged re-ranking (imported only through `load`, which falls back to
numpy when numba cannot load; the numpy code gives the same answers). `cache=True` compiles
them once per install.

- `top_segments`: each query's best `d` of its kept candidates (one segment of a flat array of
  scores per query), best first, ties in position order, with how many score at least the d-th
  (prune.certified's count): the per-query loop of a slider move, without 200 numpy calls.
- `bucket_index`: how many of a few sorted edges lie above each value (prune.buckets), a binary
  search per value without numpy's searchsorted overhead on unsorted needles.
"""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _worse(hv, hp, i, j):
    """Heap entry i ranks below entry j: a lower score, or the same score later."""
    return hv[i] < hv[j] or (hv[i] == hv[j] and hp[i] > hp[j])


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _sift_down(hv, hp, i, m):
    while True:
        left = 2 * i + 1
        if left >= m:
            return
        w = left
        if left + 1 < m and _worse(hv, hp, left + 1, left):
            w = left + 1
        if not _worse(hv, hp, w, i):
            return
        hv[i], hv[w] = hv[w], hv[i]
        hp[i], hp[w] = hp[w], hp[i]
        i = w


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _floor(s, a, b, m, hv):
    """The m-th largest of up to 16·m values of s[a:b] spread over it (all of them when it is
    short), taken in a scrambled order (a stride prime to their number) so that no order of the
    scores makes every value enter the heap (hv, used as scratch)."""
    n = b - a
    ns = min(n, 16 * m)
    step = 7919 if ns % 7919 else 7907   # primes: j * step mod ns visits every j once
    size = 0
    for j in range(ns):
        x = s[a + (((j * step) % ns) * n) // ns]
        if size < m:
            hv[size] = x
            c = size
            size += 1
            while c > 0:   # a min-heap of values
                parent = (c - 1) >> 1
                if hv[c] < hv[parent]:
                    hv[c], hv[parent] = hv[parent], hv[c]
                    c = parent
                else:
                    break
        elif x > hv[0]:
            hv[0] = x
            i = 0
            while True:
                left = 2 * i + 1
                if left >= m:
                    break
                w = left
                if left + 1 < m and hv[left + 1] < hv[left]:
                    w = left + 1
                if hv[w] >= hv[i]:
                    break
                hv[i], hv[w] = hv[w], hv[i]
                i = w
    return hv[0]


@numba.njit(cache=True, nogil=True, boundscheck=False)
def top_segments(s, offsets, d, out, ge):
    """For each segment q of `s` (offsets[q]:offsets[q+1]): out[q, :m] the flat positions of its
    m = min(d, length) best values, best first, equal values in position order; ge[q] the number
    of its values ≥ the m-th best; ge[q] = -1 when the segment holds NaN (out is then unset).
    A heap of the m best so far, its root the worst of them: a later value enters only when it
    beats the root (an equal one comes later, so it ranks below); values below a floor known
    from a sample are not looked at."""
    nq = len(offsets) - 1
    hv = np.empty(max(d, 1), np.float64)
    hp = np.empty(max(d, 1), np.int64)
    for q in range(nq):
        a, b = offsets[q], offsets[q + 1]
        m = min(d, b - a)
        ge[q] = 0
        if m == 0:
            continue
        bad = False
        for i in range(a, b):
            if np.isnan(s[i]):
                bad = True
                break
        if bad:
            ge[q] = -1
            continue
        # a value below the m-th best of a sample cannot be among the m best (m values of the
        # segment reach it): skipping those keeps the heap's work small whatever the order
        # (scores rising with position, as recency does in store order, would otherwise enter
        # the heap one by one). The sample is the whole segment when it is short.
        floor = _floor(s, a, b, m, hv)
        filled = 0
        for i in range(a, b):
            x = s[i]
            if x < floor:
                continue
            if filled < m:   # fill, keeping the heap order (sift up)
                hv[filled], hp[filled] = x, i
                c = filled
                filled += 1
                while c > 0:
                    parent = (c - 1) >> 1
                    if _worse(hv, hp, c, parent):
                        hv[c], hv[parent] = hv[parent], hv[c]
                        hp[c], hp[parent] = hp[parent], hp[c]
                        c = parent
                    else:
                        break
            elif x > hv[0]:
                hv[0], hp[0] = x, i
                _sift_down(hv, hp, 0, m)
        cut = hv[0]
        cnt = 0
        for i in range(a, b):
            if s[i] >= cut:
                cnt += 1
        ge[q] = cnt
        # the heap holds the m best: worst at the root; take them out worst first
        size = m
        while size > 0:
            out[q, size - 1] = hp[0]
            size -= 1
            hv[0], hp[0] = hv[size], hp[size]
            _sift_down(hv, hp, 0, size)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def bucket_index(v, edges, out):
    """out[i] = the number of `edges` (ascending) strictly greater than v[i]."""
    L = len(edges)
    for i in range(len(v)):
        x = v[i]
        lo, hi = 0, L   # first edge > x, by binary search
        while lo < hi:
            mid = (lo + hi) >> 1
            if edges[mid] > x:
                hi = mid
            else:
                lo = mid + 1
        out[i] = L - lo
