"""Per-memory component formulas, vectorised over numpy arrays (float64).

Each function is one line of one source system's scoring; engine.py combines them.
Where an exact reproduction matters (the Generative Agents rank recency, the ADA cycle
decay) powers are taken with Python's float `**`, exactly as the reference code does.
"""
from __future__ import annotations

import math

import numpy as np

from ..blas import one_blas_thread

HOUR = 3600.0
DAY = 86400.0
_U32 = 2.0 ** -24  # unit roundoff of float32


def relevance_error_bound(dim: int) -> float:
    """Bound on |float32 dot - exact dot| for two unit vectors of `dim` components: any summation
    order keeps the error within gamma_dim * sum|a_i b_i| <= ~dim * u * |a||b| (Higham, 3.1)."""
    return 1.01 * (dim + 2) * _U32


def fast_relevance(embedding: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Cosine of every row with the query (rows are unit vectors, zero where a memory has no
    vector of the store's model): one float32 matrix-vector product, returned as float64.
    BLAS runs it on one thread: the pass is bound by memory bandwidth, and a multi-threaded
    sgemv stalls badly when the cores are busy (the window's other work, other processes)."""
    with one_blas_thread():
        return (embedding @ query).astype(np.float64)


def exact_relevance(embedding: np.ndarray, rows, query: np.ndarray) -> np.ndarray:
    """The reference value of the cosine for `rows`: the correctly rounded float64 of the exact
    dot product of the float32 vectors (each product of two float32 is exact in float64 and
    math.fsum sums exactly). Identical vectors always give identical values, in any order."""
    rows = np.asarray(rows, dtype=np.int64)
    if rows.size == 0:
        return np.zeros(0)
    prods = embedding[rows].astype(np.float64) * query.astype(np.float64)
    return np.fromiter((math.fsum(r) for r in prods.tolist()), dtype=np.float64, count=len(rows))


def minmax(values: np.ndarray, lo: float | None = None, hi: float | None = None) -> np.ndarray:
    """Generative Agents `normalize_dict_floats(d, 0, 1)`: (v - min) * (1 - 0) / (max - min) + 0,
    and every value 0.5 when max == min. `lo`/`hi` may be given when already known exactly."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return values.copy()
    lo = float(values.min()) if lo is None else lo
    hi = float(values.max()) if hi is None else hi
    rng = hi - lo
    if rng == 0:
        return np.full(values.shape, (1 - 0) / 2)
    return (values - lo) * (1 - 0) / rng + 0


def ga_rank_recency(decays) -> np.ndarray:
    """Generative Agents `extract_recency`: the i-th memory in last-accessed order (i from 1)
    gets recency_decay ** i. `decays` holds the decay of each memory in that order."""
    return np.fromiter((d ** i for i, d in enumerate(np.asarray(decays, dtype=np.float64).tolist(), start=1)),
                       dtype=np.float64, count=len(decays))


def exp_recency(age_seconds: np.ndarray, tau_hours: float) -> np.ndarray:
    """The dual-memory design: recency = exp(-Δt/τ), Δt in hours (negative ages, i.e. the future, count as 0)."""
    age_h = np.maximum(age_seconds, 0.0) / HOUR
    return np.exp(-age_h / tau_hours)


def cycle_recency(cycles_ago: np.ndarray, lam: float) -> np.ndarray:
    """ADA cognitive memory: recency = λ ** (cycles ago). Taken per distinct value with Python's `**`."""
    values, inverse = np.unique(np.asarray(cycles_ago, dtype=np.float64), return_inverse=True)
    table = np.array([lam ** v for v in values.tolist()], dtype=np.float64)
    return table[inverse].reshape(np.shape(cycles_ago))


def working_memory(importance: np.ndarray, age_seconds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """HTM's two-tier memory (:balanced): score = importance * (1.0 / (1 + age_in_hours)). Returns (recency, score)."""
    recency = 1.0 / (1 + np.maximum(age_seconds, 0.0) / HOUR)
    return recency, importance * recency


def ebbinghaus(confidence, decay_rate, age_seconds, protected) -> np.ndarray:
    """The assistant memory's decay: confidence × exp(-decay_rate × days^0.8); protected memories do not decay."""
    days = np.maximum(age_seconds, 0.0) / DAY
    factor = confidence * np.exp(-decay_rate * days ** 0.8)
    return np.where(protected, confidence, factor)


def rrf(rank: np.ndarray, k: int) -> np.ndarray:
    """Reciprocal rank fusion term 1/(k + rank) for 1-based ranks; rank 0 (absent from that list) gives 0."""
    rank = np.asarray(rank, dtype=np.float64)
    return np.where(rank > 0, 1.0 / (k + np.where(rank > 0, rank, 1.0)), 0.0)
