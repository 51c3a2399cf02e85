"""The first map of a large store: PCA axes from a stride of the rows and, at 768+ dimensions,
by subspace iteration instead of the d x d covariance; the map matches the exact PCA's."""
import numpy as np

from memviz.layout import pca


def _two_axes(n, d, seed=0):
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    x[:, :2] *= np.float32([6, 4])
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _exact_map(x):
    centred = x.astype(np.float64) - x.mean(axis=0, dtype=np.float64)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    return centred @ vt[:2].T


def test_high_dimensional_axes_by_iteration_match_the_svd(monkeypatch):
    x = _two_axes(3000, 800)
    calls = []
    real = pca._top_axes
    monkeypatch.setattr(pca, "_top_axes", lambda *a, **k: calls.append(1) or real(*a, **k))
    got = pca.pca_2d(x)
    want = _exact_map(x)
    assert calls, "800-d takes the iteration"
    for i in (0, 1):
        assert abs(np.corrcoef(got[:, i], want[:, i])[0, 1]) > 0.9999


def test_a_large_store_is_fitted_on_a_stride_of_its_rows(monkeypatch):
    x = _two_axes(20_000, 64, seed=1)
    monkeypatch.setattr(pca, "_FIT_CELLS", 64 * 2_500)     # fit on every 8th row
    got = pca.pca_2d(x)
    want = _exact_map(x)
    assert np.isfinite(got).all() and got.shape == (20_000, 2)
    for i in (0, 1):
        assert abs(np.corrcoef(got[:, i], want[:, i])[0, 1]) > 0.999
    assert np.array_equal(got, pca.pca_2d(x.copy()))        # still deterministic
