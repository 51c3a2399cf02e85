"""The numba kernels of the passes over every row (retrieval/kernels.py through fastpass.py) give
the numpy expressions' values bit for bit, so the error bounds of quantized.py and engine.py hold
unchanged; the block-maxima shortcuts find what a full pass finds, ties and NaN included; and an
engine large enough to take them ranks exactly like the plain per-memory loop on a store of ties."""
import threading

import numpy as np
import pytest
from conftest import unit_vectors

from memviz import background
from memviz.retrieval import Engine, fastpass, preset_params, quantized, reference

T0 = 1_700_000_000


@pytest.fixture(scope="module")
def K():
    k = fastpass.load()
    assert k is not None, "numba is a dependency (umap-learn): the kernels must load"
    return k


def _awkward(rng, m):
    """Values with exact ties, signed zeros, NaN and infinities."""
    v = rng.integers(-3, 4, m).astype(float) / 4
    v[rng.integers(0, m, max(1, m // 50))] = -0.0
    return v


@pytest.mark.parametrize("m", [1, 1023, 1024, 1025, 5000, 70_001])
def test_the_weighted_sum_kernel_equals_numpy_bit_for_bit(K, m):
    rng = np.random.default_rng(m)
    for trial in range(4):
        terms = [(rng.normal(size=m) if trial % 2 else _awkward(rng, m), w)
                 for w in rng.normal(size=3) * [1, 1e-9, 1e9][trial % 3]]
        if trial == 3:
            terms[1][0][rng.integers(0, m)] = np.nan
            terms[2][0][rng.integers(0, m)] = np.inf
        for f in (None, rng.random(m)):
            s, maxima = fastpass.weighted_sum(terms, f)
            plain, none = fastpass.weighted_sum(terms, f, kernel=False)
            assert none is None and maxima is not None
            np.testing.assert_array_equal(s.view(np.int64), plain.view(np.int64))   # bits, NaN and -0.0 too
            want = fastpass.block_maxima(plain)
            np.testing.assert_array_equal(maxima, want)   # NaN where a block holds NaN
            assert len(maxima) == -(-m // fastpass.BLOCK)


@pytest.mark.parametrize("count", [1, 2, 3])
def test_an_unweighted_term_sums_as_one_weighted_by_1_and_the_callers_arrays_stay(K, count):
    """Presets without weights (hybrid, working-memory) pass w None: the same bits as w = 1.0
    (x * 1.0 == x), a new array, and their cached component arrays never written."""
    rng = np.random.default_rng(count)
    m = 3000
    for trial in range(3):
        arrays = [_awkward(rng, m) if trial == 2 else rng.normal(size=m) for _ in range(count)]
        arrays[0][5] = np.nan
        kept = [a.copy() for a in arrays]
        weights = [None if (i + trial) % 2 == 0 else float(rng.normal()) for i in range(count)]
        for f in (None, rng.random(m)):
            got, _ = fastpass.weighted_sum(list(zip(arrays, weights)), f)
            want, _ = fastpass.weighted_sum([(a, 1.0 if w is None else w) for a, w in zip(arrays, weights)], f,
                                            kernel=False)
            np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))
            assert not any(np.shares_memory(got, a) for a in arrays)
            for a, k in zip(arrays, kept):
                np.testing.assert_array_equal(a.view(np.int64), k.view(np.int64))


@pytest.mark.parametrize("dim", [256, 1536])
def test_the_int8_kernel_equals_the_numpy_product_bit_for_bit(K, dim):
    rng = np.random.default_rng(dim)
    codes = rng.integers(-127, 128, size=(3000, dim), dtype=np.int8)
    codes[:4] = 127                    # the largest dot product: 1536 * 127^2 stays within int32
    codes[4:8] = -127
    q = rng.integers(-127, 128, size=dim, dtype=np.int8)
    q[: dim // 2] = 127
    scale = rng.random(3000) / 127
    scale[9] = np.nan                  # a row holding NaN
    sq = np.float64(0.0031)
    got = np.empty(3000)
    K.int8_cosines(codes, q, scale, sq, got)
    dots = codes.astype(np.int64) @ q.astype(np.int64)
    assert np.abs(dots).max() < 2 ** 31
    np.testing.assert_array_equal(got.view(np.int64), (dots.astype(np.int32) * (scale * sq)).view(np.int64))


@pytest.fixture
def split_small(monkeypatch):
    """Every pass of more than two blocks split between the caller and the helper thread."""
    monkeypatch.setattr(fastpass, "SHARE", 2 * fastpass.BLOCK)
    monkeypatch.setattr(fastpass, "SPLIT_ROWS", 0)


@pytest.mark.parametrize("m", [5 * 2048 + 1, 300_001])
def test_a_first_pass_split_between_two_threads_equals_one_call_bit_for_bit(K, split_small, m):
    """The kernel is handed views of the index's own codes (C-contiguous, no copy per query,
    whatever spare rows the buffer has), covers every row once, and gives one call's values."""
    V = unit_vectors(m, 32, 5)
    calls = []

    def kernel(codes, q, scale, sq, out):
        calls.append((codes.flags.c_contiguous, np.shares_memory(codes, index.codes), len(codes)))
        K.int8_cosines(codes, q, scale, sq, out)
    index = quantized.Int8Index(V, kernel=kernel)
    assert len(index.codes.base) > m and index.codes.flags.c_contiguous   # spare rows beyond the view
    got, _ = index.cosines(V[3])
    assert all(c and shared for c, shared, _ in calls) and sum(r for _, _, r in calls) == m
    (cq,), (sq,), _, _ = quantized._quantise(V[3][None, :])
    want = np.empty(m)
    K.int8_cosines(index.codes, cq, index.scale, sq, want)
    np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))


def test_a_busy_helper_thread_does_not_hold_up_the_caller(K, split_small, monkeypatch):
    """The helper thread gets no core (the other one is busy: another query's pass, say): the
    caller takes every share itself and does not wait for it."""
    release = threading.Event()
    late = []
    monkeypatch.setattr(fastpass, "in_thread",   # the helper starts only once released
                        lambda fn, name: late.append(background.in_thread(lambda: (release.wait(60), fn()), name)))
    try:
        seen = []
        t = threading.Thread(target=fastpass.in_two, args=(lambda lo, hi: seen.append((lo, hi, threading.get_ident())),
                                                           10 * fastpass.SHARE + 5))
        t.start()
        t.join(30)
        assert not t.is_alive(), "the caller waited for a helper that never came"
        assert sorted((lo, hi) for lo, hi, _ in seen) == [(lo, min(lo + fastpass.SHARE, 10 * fastpass.SHARE + 5))
                                                          for lo in range(0, 10 * fastpass.SHARE + 5, fastpass.SHARE)]
        assert {who for _, _, who in seen} == {t.ident} and len(late) == 1
    finally:
        release.set()
        late[0].result(30)


def test_an_error_in_either_thread_reaches_the_caller(K, split_small):
    def call(lo, hi):
        if lo == 3 * fastpass.SHARE:
            raise ValueError("share 3")
    with pytest.raises(ValueError, match="share 3"):
        fastpass.in_two(call, 8 * fastpass.SHARE)


def test_kth_largest_and_at_least_by_block_maxima_equal_full_passes(K):
    rng = np.random.default_rng(1)
    for trial in range(150):
        m = int(rng.integers(1, 200_000))
        k = int(rng.integers(1, min(m, 400) + 1))
        s = rng.integers(0, int(rng.integers(1, 40)), m).astype(float) if trial % 2 else rng.normal(size=m)  # ties
        if trial % 5 == 0:
            s[rng.integers(0, m)] = np.nan
        one = np.ones(m)
        s, maxima = fastpass.weighted_sum([(s, 1.0), (one, 0.0), (one, 0.0)])
        want = np.partition(s, m - k)[m - k]
        for mx in (maxima, None):
            got = fastpass.kth_largest(s, k, mx)
            assert got == want or (np.isnan(got) and np.isnan(want)), (m, k)
            for t in (want, want - 1e-9, float(np.nanmax(s)), -np.inf):
                np.testing.assert_array_equal(fastpass.at_least(s, t, mx), np.flatnonzero(s >= t))


def _tied_store(store, n, seed):
    """n memories whose vectors repeat a few directions (exact cosine ties, equal int8 codes) or
    sit within float32 ulps of one, with importance and times drawn from a handful of values;
    40 rows scattered over the store lie within ulps of base[5] (a top k held by a few blocks)."""
    rng = np.random.default_rng(seed)
    dim = 16
    base = unit_vectors(6, dim, seed)
    V = base[rng.integers(0, 5, n)]
    near = rng.integers(0, n, n // 10)
    V[near] = base[0] + rng.normal(size=(len(near), dim)).astype(np.float32) * 1e-7
    few = rng.choice(n, 40, replace=False)
    V[few] = base[5] + rng.normal(size=(len(few), dim)).astype(np.float32) * 1e-7
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    recs = [dict(id=f"m{i:05d}", agent="ab"[i % 2], kind="episode", content=f"note {i % 7}",
                 importance=float(rng.integers(4, 7)), embedding=V[i], embedding_model="test/16",
                 event_time=T0 - 3600 * int(rng.integers(0, 3)), created_at=T0 - 3600 * int(rng.integers(0, 3)),
                 attributes={"ga_type": ("event", "thought")[i % 2], "node_count": i + 1, "embedding_key": "k"})
            for i in range(n)]
    store.insert_memories(recs, audit=False)
    return V, base


@pytest.mark.parametrize("split", [False, True])
def test_a_large_engine_ranks_exactly_like_the_loop_on_ties(K, store, split, request):
    """24k candidates: the sum, the k-th value and the region come from the kernel and the block
    maxima (k up to 5 takes the block path); the top k equal the plain loop's, ties in order;
    also with the passes split between two threads."""
    if split:
        request.getfixturevalue("split_small")
    V, base = _tied_store(store, 24_000, 3)
    arrays = store.arrays()
    assert quantized.index_for(arrays, wait=True, min_rows=0) is not None
    e = Engine(store, arrays, now=T0)
    nodes = reference.load_nodes(store, arrays)
    for q in (base[5], base[0]):
        e.set_query(vector=q)
        for name, extra in (("dual-memory", dict(alpha=1.0, beta=0.0, gamma=0.0)), ("dual-memory", {}),
                            ("dual-memory", dict(confidence_decay=True)), ("ada", {}), ("generative-agents", {})):
            for k in (1, 3, 5, 12):
                p = preset_params(name, k=k, **extra)
                got = e.score(p)
                want = reference.retrieve(nodes, e.query_vector.tolist(), p, now=T0)
                assert got.ids == [i for i, _ in want], (name, extra, k)
                np.testing.assert_allclose(got.score, [s for _, s in want], rtol=0, atol=1e-12)
