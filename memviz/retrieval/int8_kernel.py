"""The int8 x int8 -> int32 matrix-vector product of quantized.py, compiled by numba (imported
only through quantized.py, which falls back to the float32 product if this cannot load).
One thread, like the BLAS passes (memviz/blas.py); `cache=True` compiles it once per install."""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, boundscheck=False)
def int8_matvec(codes, q, out):
    n, d = codes.shape
    for i in range(n):
        acc = np.int32(0)
        for j in range(d):
            acc += np.int32(codes[i, j]) * np.int32(q[j])
        out[i] = acc
