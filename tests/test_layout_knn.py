import numpy as np
import pytest
from conftest import unit_vectors

from memviz.layout.knn import nearest, nearest_self


@pytest.mark.parametrize("n, k", [(5, 10), (64, 3), (130, 15), (5000, 15), (5003, 1)])
def test_nearest_is_exact_against_a_full_sort(n, k):
    base = unit_vectors(n, 24, seed=n)
    rng = np.random.default_rng(k)
    query = base[rng.integers(0, n, 200)] + 0.2 * unit_vectors(200, 24, seed=1)
    sims = query @ base.T
    idx, got = nearest(query, base, k)
    kk = min(k, n)
    assert idx.shape == (200, kk)
    want = -np.sort(-sims, axis=1)[:, :kk]
    assert np.allclose(got, want, atol=1e-6)                        # the k best values, best first
    assert np.allclose(np.take_along_axis(sims, idx, axis=1), got)  # and the indices that hold them


def test_progress_per_block_reaches_the_end(monkeypatch):
    import memviz.layout.knn as knn
    monkeypatch.setattr(knn, "BLOCK_CELLS", 1000)  # force several blocks
    seen = []
    base = unit_vectors(300, 8)
    idx, _ = nearest(base, base, 5, on_block=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (300, 300) and len(seen) > 1
    assert (idx[:, 0] == np.arange(300)).all()  # each point is its own nearest


@pytest.mark.parametrize("n, k, tile", [(3, 15, 2048), (100, 15, 32), (1000, 15, 256), (1000, 1, 100), (2500, 40, 512)])
def test_nearest_self_is_nearest_of_the_matrix_with_itself(n, k, tile):
    """The graph of one matrix, each similarity computed once (tiles read along both axes), is
    the exact one: the same k best values, best first, each row itself first."""
    X = unit_vectors(n, 24, seed=n + k)
    sims = X @ X.T
    seen = []
    idx, got = nearest_self(X, k, on_block=lambda d, t: seen.append((d, t)), tile=tile)
    kk = min(k, n)
    assert idx.shape == got.shape == (n, kk)
    assert np.allclose(got, -np.sort(-sims, axis=1)[:, :kk], atol=1e-6)
    assert np.allclose(np.take_along_axis(sims, idx, axis=1), got, atol=1e-6)
    assert (idx[:, 0] == np.arange(n)).all()
    assert seen[-1][0] == seen[-1][1] and len(seen) == -(-n // tile)


def test_nearest_self_with_ties_keeps_distinct_neighbours():
    """Equal similarities across tiles (the same direction in many rows): no row is counted twice."""
    rng = np.random.default_rng(0)
    X = unit_vectors(8, 16, seed=2)[rng.integers(0, 8, 700)]
    X[::7] = unit_vectors(100, 16, seed=3)
    idx, got = nearest_self(X, 12, tile=64)
    assert all(len(set(r)) == 12 for r in idx.tolist())
    assert np.allclose(got, -np.sort(-(X @ X.T), axis=1)[:, :12], atol=1e-6)
