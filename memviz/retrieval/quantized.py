"""An int8 copy of the embedding matrix for the first pass of a query, with a proven error bound.

A first pass over a large store is bound by memory bandwidth: the int8 codes are a quarter of the
float32 matrix, read by an integer kernel (numba; a large store's rows shared with a second
thread, fastpass.in_two).
The first pass only *selects*: every memory it cannot rule out is rescored from the float32
vectors (engine.py), so the top k are those of exact scoring. Why nothing is lost:

The bound. Row x (float32, unit length up to rounding) is stored as codes c (int8) and a scale
s = max|x_j| / 127 (float64): x~ = s*c, residual r = x - x~, |r_j| <= s/2. The query q is
coded the same way: q~ = s_q*c_q, r_q = q - q~. The first pass returns a = s*s_q*(c . c_q), the
integer dot product being exact in int32 (|c . c_q| <= 1536 * 127^2 < 2^31) and the two float64
multiplications adding a relative error <= 2u (u = 2^-53). Then, by Cauchy-Schwarz,

    |x . q - x~ . q~| = |r . q + x~ . r_q| <= |r| |q| + |x~| |r_q| <= R |q| + (N + R) |r_q|

with R = max over rows of |r| and N = max |x| (both measured in float64 when the index is built,
each rounded up by a relative 1e-12). So every first-pass cosine is within

    err = R |q| + (N + R) |r_q| + 2u (N + R) |q~| + 1e-12

of the exact dot product of the float32 vectors (the last terms cover float64 rounding with a wide
margin). `err` is the same for every row: it is `Engine`'s `relevance error` when this index is used.

From cosines to rankings. Every linear preset's score is affine in the cosine for each row:
score_i = A_i * cos_i + B_i, where A_i = alpha * (row weight) * (decay factor) * (1/(hi - lo) under
Generative Agents' min-max normalisation, with lo and hi the *exact* extreme cosines, found by the
same bound: the exact minimum lies among the rows whose first-pass value is within 2 err of the
smallest). So |fast score - exact score| <= max|A_i| * err + the float64 rounding of the sums
(engine.py adds 8 eps times the sum of the largest weighted terms for that). Call this E. If the
k-th largest fast score is s_k, at least k rows have an exact score >= s_k - E, so the exact k-th
score is >= s_k - E and a true top-k member j has fast score >= exact_j - E >= s_k - 2E. The engine
rescores exactly every row with fast score >= s_k - 2E - ties included, since the test is >=,
and duplicated vectors get identical codes and identical first-pass values - and ranks those.
"""
from __future__ import annotations

import threading
import weakref
from concurrent.futures import Future

import numpy as np

from ..background import in_thread
from ..store.arrays import spare_rows
from . import fastpass

MIN_ROWS = 20_000     # below this the float32 product takes a few milliseconds: no index
_CHUNK = 32_768       # rows quantised at a time (bounds the float64 temporaries)
_U64 = 2.0 ** -53
_build_lock = threading.Lock()
_extend_lock = threading.Lock()


def _dot_kernel():
    """The numba kernel of the first pass (kernels.int8_cosines; compiled once, cached on disk),
    or None when numba cannot be used (the float32 product serves instead)."""
    K = fastpass.load()
    return K.int8_cosines if K is not None else None


def _quantise(x: np.ndarray):
    """Codes, scales (float64) and the float64 norms of the residual and of the row, per row of x."""
    x64 = x.astype(np.float64)
    finite = np.isfinite(x64).all(axis=1)
    if not finite.all():  # a vector an agent wrote with NaN or inf: first-pass value NaN, as float32 gives
        x64[~finite] = 0.0
    amax = np.abs(x64).max(axis=1) if x64.shape[1] else np.zeros(len(x64))
    scale = amax / 127.0
    safe = np.where(scale > 0, scale, 1.0)
    codes = np.rint(x64 / safe[:, None])
    np.clip(codes, -127, 127, out=codes)
    resid = x64 - codes * scale[:, None]
    scale[~finite] = np.nan
    return (codes.astype(np.int8), scale, np.sqrt(np.einsum("ij,ij->i", resid, resid)),
            np.sqrt(np.einsum("ij,ij->i", x64, x64)))


class Int8Index:
    """The int8 codes of an embedding matrix and what the error bound needs (see the module docstring).

    `extended` makes the index of a grown matrix (a live refresh appended rows, re-embedded some)
    without quantising it all again: codes and scales sit in buffers with spare rows, shared
    between the two indexes like the matrix's rows are (memviz.session.buffers), as many spare as
    the matrix has (store.arrays.spare_rows): running out copies them all, on the GUI thread."""

    def __init__(self, embedding: np.ndarray, kernel=None):
        n, d = embedding.shape
        self.dim = d
        codes = np.empty((n + spare_rows(n), d), np.int8)
        scale = np.empty(n + spare_rows(n), np.float64)
        self.codes, self.scale = codes[:n], scale[:n]
        self._bound = [0.0, 0.0]  # R, N (shared by the indexes sharing these buffers): see extended
        self._claim = [n]         # rows of the buffers some index holds (shared): spare rows are beyond
        self._quantise_into(embedding, 0)
        self._kernel = kernel or _dot_kernel()

    def _quantise_into(self, rows: np.ndarray, start: int, at: np.ndarray | None = None) -> None:
        """Codes and scales of `rows` written at start.. (or at rows `at`); R and N raised to cover them."""
        resid_max = norm_max = 0.0
        for i in range(0, len(rows), _CHUNK):
            c, s, r, nx = _quantise(rows[i:i + _CHUNK])
            where = slice(start + i, start + i + len(c)) if at is None else at[i:i + _CHUNK]
            self.codes.base[where] = c
            self.scale.base[where] = s
            if len(c):
                resid_max = max(resid_max, float(r.max()))
                norm_max = max(norm_max, float(nx.max()))
        b = self._bound
        b[0], b[1] = max(b[0], resid_max * (1 + 1e-12)), max(b[1], norm_max * (1 + 1e-12))

    @property
    def resid_max(self) -> float:
        return self._bound[0]

    @property
    def norm_max(self) -> float:
        return self._bound[1]

    def extended(self, embedding: np.ndarray, changed: np.ndarray) -> Int8Index:
        """The index of `embedding`: this index's rows (the first len(self.codes) of it) with the
        rows beyond them quantised and appended, and the rows `changed` (re-embedded since)
        quantised again in place. Appending writes into the spare rows (copied into a larger
        buffer only when they run out: amortised), so this index keeps seeing its own rows.

        Why the bound stays valid, for both indexes: R and N are maxima over rows, kept in one
        list the two share and only ever raised, so every row either index holds is covered (a
        row re-embedded keeps its old residual in the maximum too, which only widens the bound).
        A re-embedded row is patched where the matrix patched it (session.live.delta.apply_rows): in the
        shared buffer, for both, or in the new one when the rows were copied."""
        n, m = len(self.codes), len(embedding)
        new = object.__new__(Int8Index)
        new.dim, new._kernel, new._bound, new._claim = self.dim, self._kernel, self._bound, self._claim
        codes, scale = self.codes.base, self.scale.base
        if codes is None or len(codes) < m or self._claim[0] != n:
            # no room left, or another index was extended from this one: a larger buffer (the old
            # one stays with the indexes holding it)
            codes = np.empty((m + spare_rows(m), self.dim), np.int8)
            scale = np.empty(m + spare_rows(m), np.float64)
            codes[:n], scale[:n] = self.codes, self.scale
            new._claim = [m]
        new._claim[0] = m
        new.codes, new.scale = codes[:m], scale[:m]
        changed = np.asarray(changed, np.int64)
        changed = changed[changed < n]
        if len(changed):
            new._quantise_into(embedding[changed], 0, at=changed)
        if m > n:
            new._quantise_into(embedding[n:m], n)
        return new

    @property
    def usable(self) -> bool:
        return self._kernel is not None

    def cosines(self, query: np.ndarray) -> tuple[np.ndarray, float]:
        """(first-pass cosine of every row as float64, err): |value - exact dot| <= err for every row."""
        q = np.asarray(query, dtype=np.float32)
        (cq,), (sq,), (rq,), (nq,) = _quantise(q[None, :])
        codes, scale, approx = self.codes, self.scale, np.empty(len(self.codes))
        kernel = self._kernel   # = int32 dots * (scale * sq); half the rows on a second core
        fastpass.in_two(lambda lo, hi: kernel(codes[lo:hi], cq, scale[lo:hi], sq, approx[lo:hi]), len(codes))
        nqt = float(np.linalg.norm(cq.astype(np.float64) * sq))
        big = self.norm_max + self.resid_max
        err = self.resid_max * nq + big * rq + 2 * _U64 * big * nqt + 1e-12
        return approx, float(err * (1 + 1e-9))


class _ByIdentity:
    """Values kept for objects by identity (MemoryArrays and numpy arrays are not hashable), each
    dropped with its object: an index lives as long as the arrays or matrix it was made for."""

    def __init__(self):
        self._items: dict[int, tuple[weakref.ref, object]] = {}

    def get(self, obj):
        hit = self._items.get(id(obj))
        return hit[1] if hit is not None and hit[0]() is obj else None

    def set(self, obj, value) -> None:
        key, items = id(obj), self._items

        def gone(ref):  # runs before the id can be reused: only this object's entry goes
            if items.get(key, (None,))[0] is ref:
                items.pop(key, None)
        items[key] = (weakref.ref(obj, gone), value)

    def pop(self, obj) -> None:
        if self.get(obj) is not None:
            self._items.pop(id(obj), None)


# what this module knows of each arrays (the arrays own no attribute of ours):
_own = _ByIdentity()        # arrays -> its index, or False when none can be made (no numba, a failed build)
_pending = _ByIdentity()    # arrays -> (older arrays, rows changed since): its index extends older's once built
_by_matrix = _ByIdentity()  # embedding matrix -> its index or False: views of one load share it
_building: dict[int, Future] = {}   # id(matrix) -> the build under way


def index_for(arrays, *, wait: bool = False, min_rows: int = MIN_ROWS) -> Int8Index | None:
    """The int8 index of `arrays.embedding`, built once per matrix in a background thread (the
    first queries use the float32 product meanwhile); None until it is ready, or when the store
    is small or numba is unavailable. Arrays sharing a matrix (as-of views of one load) share
    its index. `wait` blocks until it is built (benchmarks, tests)."""
    idx = _own.get(arrays)
    if idx is not None:
        return idx or None
    base = _pending.get(arrays)
    if base is not None:  # made by a live refresh while the index it extends was being built
        older, changed = base
        if _own.get(older) is None:
            if not wait:
                return None
            index_for(older, wait=True, min_rows=0)
        _extend(older, arrays, changed)
        return _own.get(arrays) or None
    with _build_lock:
        done = _by_matrix.get(arrays.embedding)
    if done is not None:
        _own.set(arrays, done)
        return done or None
    if len(arrays) < min_rows or arrays.dim == 0:
        return None
    key = id(arrays.embedding)
    with _build_lock:
        build = _building.get(key)
        if build is None:
            build = _building[key] = in_thread(lambda: _build(arrays, key), "memviz-int8-index")
    if wait:
        build.result()
        return index_for(arrays, min_rows=min_rows)
    return None


def _build(arrays, key) -> None:
    made = False
    try:
        idx = Int8Index(arrays.embedding)
        made = idx if idx.usable else False
    except Exception:  # noqa: BLE001 - whatever stops the build, queries keep the float32 product
        made = False
    finally:
        with _build_lock:
            _building.pop(key, None)
            _own.set(arrays, made)
            _by_matrix.set(arrays.embedding, made)


def carry(old, new, changed) -> None:
    """A live refresh made arrays `new` from `old` (rows appended; `changed`: rows re-embedded in
    place): `new`'s index is `old`'s extended (Int8Index.extended), not built again; at once if
    `old`'s is ready, else when it is (index_for). Nothing when `old` has none."""
    if new.dim != old.dim:
        return
    if _own.get(old) is not None:
        _extend(old, new, changed)
        return
    base = _pending.get(old)
    if base is not None:  # still waiting for the same build
        _pending.set(new, (base[0], np.union1d(base[1], changed).astype(np.int64)))
        return
    with _build_lock:
        building = id(old.embedding) in _building
    if building:
        _pending.set(new, (old, np.asarray(changed, np.int64)))


def _extend(old, new, changed) -> None:
    with _extend_lock:
        if _own.get(new) is not None:
            return  # another thread did
        idx = _own.get(old)
        made = idx.extended(new.embedding, changed) if idx else False
        _own.set(new, made)
        _pending.pop(new)
    with _build_lock:
        _by_matrix.set(new.embedding, made)
