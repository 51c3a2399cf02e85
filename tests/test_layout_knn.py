import numpy as np
import pytest
from conftest import unit_vectors

from memviz.layout.knn import nearest


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
