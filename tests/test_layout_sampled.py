"""A large store's map: a layout fitted on a sample, the rest placed from sampled neighbours."""
import numpy as np
import pytest

from memviz.layout.pca import pca_2d
from memviz.layout.sampled import choose_sample, needs_sample, sampled_layout
from memviz.tasks import Cancelled, Task


def _clusters(n, dim=32, seed=0):
    """n unit vectors around 4 well-separated directions; returns (X, cluster of each row)."""
    rng = np.random.default_rng(seed)
    centres = np.eye(dim, dtype=np.float32)[:4] * 4
    label = rng.integers(0, 4, n)
    X = centres[label] + rng.normal(size=(n, dim)).astype(np.float32) * 0.3
    return X / np.linalg.norm(X, axis=1, keepdims=True), label


def test_choose_sample_is_distinct_sorted_and_repeatable():
    a = choose_sample(10_000, 300, seed=3)
    assert len(a) == len(set(a.tolist())) == 300 and (np.diff(a) > 0).all()
    assert np.array_equal(a, choose_sample(10_000, 300, seed=3))
    assert np.array_equal(choose_sample(50, 300), np.arange(50))
    assert needs_sample(1_000_000) and not needs_sample(10_000)


def test_the_window_never_waits_for_the_nn_descent_compile():
    """The window's job fits at most a sample on the exact graph: warming its worker for a large
    store must not compile NN-descent (~40 s of a core), which the fit would queue behind."""
    from memviz.layout.umap_worker import needs_nn_descent
    assert not any(needs_nn_descent(n) for n in (100, 30_000, 100_000, 1_000_000))


def test_every_memory_is_placed_inside_its_own_cluster():
    X, label = _clusters(4000)
    fitted = []

    def fit(Xs, task):
        fitted.append(len(Xs))
        return pca_2d(Xs, np.ones(len(Xs), bool))

    progress = []
    out = sampled_layout(X, fit, sample=400, anchors=200, k=5, task=Task("map", lambda f, t: progress.append(f)))
    assert fitted == [400] and np.isfinite(out.coords).all() and out.coords.shape == (4000, 2)
    assert out.method == "UMAP of a random 400 of 4,000 memories; the other 3,600 placed by neighbours"
    # each placed point is nearest (in 2-D) to the centre of its own cluster's sampled points
    s = out.sample
    centres = np.array([out.coords[s][label[s] == c].mean(axis=0) for c in range(4)])
    rest = np.setdiff1d(np.arange(4000), s)
    d = np.linalg.norm(out.coords[rest][:, None, :] - centres[None], axis=2)
    assert (d.argmin(axis=1) == label[rest]).mean() > 0.99
    assert progress[-1] == pytest.approx(1.0)


def test_a_cancelled_task_stops_the_placement():
    X, _ = _clusters(3000)
    task = Task("map")

    def fit(Xs, t):
        task.cancel()   # the user cancels while the sample is being fitted
        return pca_2d(Xs, np.ones(len(Xs), bool))

    with pytest.raises(Cancelled):
        sampled_layout(X, fit, sample=300, anchors=100, task=task)
