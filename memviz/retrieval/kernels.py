"""The numba kernels of the passes over every row (imported only through fastpass.load, which
falls back to numpy when numba cannot load). `cache=True` compiles them once per install.

Each call runs on one thread over the rows it is given; fastpass.in_two hands the first pass over
a large store to the caller and one helper thread in small shares (nogil), so a second core
halves it when free and costs at most one share's wait when busy.
No fastmath: every value is the same IEEE operations, in the same order, as the numpy code it
replaces (bit-identical, tests/test_retrieval_fastpass.py), so the error bounds of quantized.py
and engine.py hold unchanged.
"""
from __future__ import annotations

import numba
import numpy as np

#: rows per block of `weighted_sum3`'s block maxima
BLOCK = 1024


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _dot(codes, i, q):
    # the int32 sum wraps like the int32 it is stored in, which lets LLVM keep 16 lanes of int32
    # (vpmaddwd) instead of widening to int64; it never wraps (|c . q| <= 1536 * 127^2 < 2^31)
    acc = np.int32(0)
    for j in range(q.shape[0]):
        acc = np.int32(acc + np.int32(codes[i, j]) * np.int32(q[j]))
    return acc


#: rows ahead of the one being scored whose cache lines int8_cosines loads early
AHEAD = 32


@numba.njit(cache=True, nogil=True, boundscheck=False)
def int8_cosines(codes, q, scale, sq, out):
    """out[i] = (codes[i] . q, exact in int32) * (scale[i] * sq): quantized.py's first pass,
    the numpy expression `dots * (scale * sq)` without its two temporaries.

    From memory (1M x 256 is 256 MB) the dot products stall on each row's four cache lines,
    one row at a time. Loading one byte of each line AHEAD rows on starts those reads early:
    less CPU per pass from memory, a little more when the codes sit in cache (bench/scale.py
    measures both). The loaded bytes are OR-ed into the returned value only so that the loads
    are not optimised away."""
    n, d = codes.shape
    flat = codes.reshape(n * d)
    sink = np.int32(0)
    for i in range(n):
        ahead = (i + AHEAD) * d
        if i + AHEAD < n:
            for line in range(0, d, 64):
                sink |= np.int32(flat[ahead + line])
        out[i] = np.float64(_dot(codes, i, q)) * (scale[i] * sq)
    return sink


@numba.njit(cache=True, nogil=True, boundscheck=False)
def weighted_sum3(p0, w0, p1, w1, p2, w2, f, out, maxima):
    """out = p0*w0 + p1*w1 + p2*w2 (each term times f[i] first when f is not empty), left to
    right, and maxima[b] = the largest of out[b*BLOCK:(b+1)*BLOCK] (NaN if it holds a NaN)."""
    n = out.shape[0]
    use_f = f.shape[0] > 0
    for b in range((n + BLOCK - 1) // BLOCK):
        top = -np.inf
        nan = False
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            if use_f:
                v = p0[i] * w0 * f[i] + p1[i] * w1 * f[i] + p2[i] * w2 * f[i]
            else:
                v = p0[i] * w0 + p1[i] * w1 + p2[i] * w2
            out[i] = v
            if v > top:
                top = v
            elif v != v:
                nan = True
        maxima[b] = np.nan if nan else top
