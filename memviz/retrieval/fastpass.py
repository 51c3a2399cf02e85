"""The passes over every candidate that a slider move or a new query costs: a weighted sum of
three per-row terms, its k-th largest value and the positions at or above a threshold.

On a large store (1M rows) numpy spends a pass over memory per operation (three multiplies, two
adds, a copy for the caller, block maxima, a comparison: ~10 passes of 8 MB). The numba kernel
(kernels.weighted_sum3) makes the sum in one pass and the maxima of 1024-row blocks with it;
those maxima then point at the few blocks that can hold the k-th value or a region member, so
`kth_largest` and `at_least` read a few blocks instead of the whole array. Without numba (or
before it has loaded: it is loaded by the int8 index's build thread, never on the caller's)
the same values come from numpy.
"""
from __future__ import annotations

import threading

import numpy as np

from ..background import in_thread

BLOCK = 1024  # = kernels.BLOCK (not imported from there: that would load numba)
#: rows per share of a pass split between two threads (in_two): small, so the caller waits
#: little for the helper's last share; 61 shares at 1M rows
SHARE = 16_384
#: passes over fewer rows stay on the calling thread (a few milliseconds: waking a helper on a
#: busy machine can cost more than it saves)
SPLIT_ROWS = 8 * SHARE

_kernels = None
_lock = threading.Lock()


def load():
    """The kernels module, compiled (or read from numba's cache) and probed once; None when
    numba cannot be used. Blocks while compiling: call it off the GUI thread."""
    global _kernels
    with _lock:
        if _kernels is None:
            try:
                from . import kernels as K  # numba loads slowly: large stores only

                codes, cos = np.ones((2, 3), np.int8), np.empty(2)
                K.int8_cosines(codes, np.ones(3, np.int8), np.full(2, 0.5), 2.0, cos)
                s, top = np.empty(3), np.empty(1)
                one = np.ones(3)
                K.weighted_sum3(one, 1.0, one, 2.0, one, 3.0, np.zeros(0), s, top)
                K.weighted_sum3(one, 1.0, one, 2.0, one, 3.0, one, s, top)
                ok = cos.tolist() == [3.0, 3.0] and s.tolist() == [6.0] * 3 and top.tolist() == [6.0]
                _kernels = K if ok else False
            except Exception:  # noqa: BLE001 - any numba failure means: use numpy
                _kernels = False
        return _kernels or None


def in_two(call, n: int) -> None:
    """call(lo, hi) over rows [0, n) in shares of SHARE rows, taken in turn by the calling
    thread and one helper thread (the kernels release the GIL). The caller never waits for a
    share it could take itself: on two cores the pass takes about half the time, and when the
    other core is busy (the window, the UMAP worker, the agent, or another query's helper) the
    caller does nearly all of it and waits at most for the one share the helper holds. Each row
    is computed by the same code whichever thread takes it, so the values are those of one call."""
    share = SHARE
    starts = range(0, n, share)
    if n < SPLIT_ROWS or len(starts) < 2:
        call(0, n)
        return
    lock, done, errors = threading.Lock(), threading.Event(), []
    state = {"next": 0, "left": len(starts)}

    def work():
        while True:
            with lock:
                i = state["next"]
                if i >= len(starts):
                    return
                state["next"] = i + 1
            try:
                call(starts[i], min(n, starts[i] + share))
            except BaseException as e:  # noqa: BLE001 - re-raised on the calling thread
                errors.append(e)
            with lock:
                state["left"] -= 1
                if state["left"] == 0:
                    done.set()

    in_thread(work, "memviz-pass")
    work()
    done.wait()
    if errors:
        raise errors[0]


def ready():
    """The kernels if already loaded, else None (never compiles on the caller's thread)."""
    return _kernels or None


def weighted_sum(terms, f=None, *, kernel=True):
    """(s, maxima): s[i] = sum over (p, w) of terms, in their order, of p[i]*w (then times f[i]
    when f is given), as a new float64 array; w None: p[i] itself (as p[i]*1.0 would be, without
    the pass). maxima: the largest value of each BLOCK of s (NaN where a block holds NaN), or
    None when numpy made s (kernel=False or not loaded)."""
    K = ready() if kernel else None
    if K is not None and len(terms) == 3 and all(w is not None for _, w in terms):
        (p0, w0), (p1, w1), (p2, w2) = ((np.ascontiguousarray(p, np.float64), float(w)) for p, w in terms)
        s = np.empty(len(p0))
        maxima = np.empty(-(-len(s) // BLOCK))
        ff = np.zeros(0) if f is None else np.ascontiguousarray(f, np.float64)
        # one thread: a slider move's whole budget is a few ms, and on a busy machine waiting for a
        # helper's share costs more than the pass (bench/rerank.py measures it under load)
        K.weighted_sum3(p0, w0, p1, w1, p2, w2, ff, s, maxima)
        return s, maxima
    s = t = None
    own = False   # s is this call's array (else a caller's term, never written)
    for p, w in terms:
        if w is None and f is None:
            term = p
        else:
            t = np.multiply(p, f if w is None else w, out=t)
            if w is not None and f is not None:
                np.multiply(t, f, out=t)
            term = t
        if s is None:
            s, own = term, term is t
            if own:
                t = None   # s keeps this buffer: the next term gets its own
        else:
            s = np.add(s, term, out=s if own else None)
            own = True
    return (s if own else np.array(s, dtype=np.float64)), None


def block_maxima(s: np.ndarray) -> np.ndarray:
    """The largest value of each BLOCK of s (NaN where a block holds NaN), with numpy."""
    nb = len(s) // BLOCK
    maxima = s[:nb * BLOCK].reshape(nb, BLOCK).max(axis=1)
    return maxima if nb * BLOCK == len(s) else np.append(maxima, s[nb * BLOCK:].max())


def kth_largest(s: np.ndarray, k: int, maxima: np.ndarray | None = None) -> float:
    """The k-th largest value of s (NaN counts as largest, as in np.partition). The k-th largest
    block maximum is a lower bound of it (k distinct values reach it), so only the blocks whose
    maximum reaches that bound are partitioned: a few thousand values instead of 1M."""
    m = len(s)
    if m < 16 * BLOCK or m // BLOCK < 4 * k:
        return np.partition(s, m - k)[m - k]
    if maxima is None:
        maxima = block_maxima(s)
    if np.isnan(maxima).any():
        return np.partition(s, m - k)[m - k]
    nb = len(maxima)
    top = _in_blocks(s, np.flatnonzero(maxima >= np.partition(maxima, nb - k)[nb - k]))
    return np.partition(top, len(top) - k)[len(top) - k]


def at_least(s: np.ndarray, threshold: float, maxima: np.ndarray | None = None) -> np.ndarray:
    """Positions of s holding a value >= threshold, ascending (np.flatnonzero(s >= threshold)),
    reading only the blocks whose maximum reaches it when the maxima are known and NaN-free."""
    if maxima is None or np.isnan(maxima).any():
        return np.flatnonzero(s >= threshold)
    blocks = np.flatnonzero(maxima >= threshold)
    if len(blocks) > len(maxima) // 8:
        return np.flatnonzero(s >= threshold)
    pos = _block_positions(blocks, len(s))
    return pos[s[pos] >= threshold]


def _block_positions(blocks: np.ndarray, m: int) -> np.ndarray:
    pos = (blocks[:, None] * BLOCK + np.arange(BLOCK)).ravel()
    return pos[pos < m]   # the last block may be partial


def _in_blocks(s: np.ndarray, blocks: np.ndarray) -> np.ndarray:
    return s[_block_positions(blocks, len(s))]
