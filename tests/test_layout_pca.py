import numpy as np
from conftest import unit_vectors

from memviz.layout import pca_2d


def _stretched(n=500, dim=16, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dim)) * np.linspace(5, 0.5, dim)  # variance falls along the axes
    return (x @ np.linalg.qr(rng.normal(size=(dim, dim)))[0]).astype(np.float32)


def test_shape_dtype_and_determinism():
    x = unit_vectors(300, 32, seed=3)
    a, b = pca_2d(x), pca_2d(x.copy())
    assert a.shape == (300, 2) and a.dtype == np.float32
    assert np.array_equal(a, b)


def test_components_match_svd_and_are_ordered_by_variance():
    x = _stretched()
    p = pca_2d(x)
    centred = x - x.mean(axis=0)
    _, s, vt = np.linalg.svd(centred.astype(np.float64), full_matrices=False)
    var = p.var(axis=0)
    assert var[0] > var[1]
    assert np.allclose(var, s[:2] ** 2 / len(x), rtol=1e-3)
    ref = centred @ vt[:2].T
    for k in range(2):  # same axes up to sign
        assert abs(np.corrcoef(p[:, k], ref[:, k])[0, 1]) > 0.9999


def test_sign_is_fixed_so_row_order_does_not_flip_the_map():
    x = _stretched(seed=2)
    perm = np.random.default_rng(0).permutation(len(x))
    assert np.allclose(pca_2d(x)[perm], pca_2d(x[perm]), atol=1e-4)


def test_rows_without_a_vector_are_nan_and_left_out_of_the_fit():
    x = _stretched(200)
    with_zero = np.vstack([x[:50], np.zeros((3, x.shape[1]), np.float32), x[50:]])
    p = pca_2d(with_zero)
    assert np.isnan(p[50:53]).all()
    assert np.allclose(np.delete(p, [50, 51, 52], axis=0), pca_2d(x), atol=1e-4)
    assert np.isnan(pca_2d(np.zeros((4, 8), np.float32))).all()
