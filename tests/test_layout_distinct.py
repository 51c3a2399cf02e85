"""Finding identical vectors: exact, in row order, robust to hash collisions."""
import numpy as np

from memviz.layout.distinct import distinct_rows


def test_distinct_rows_matches_numpy_unique():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, 64)).astype(np.float32)
    X = np.concatenate([x, x[rng.integers(0, 3000, 2000)], x[:5]])
    d = distinct_rows(X)
    _, first = np.unique(X, axis=0, return_index=True)
    assert np.array_equal(d.first, np.sort(first))     # each vector's first copy, ascending
    assert np.array_equal(X[d.first][d.inverse], X)    # every row maps to its own vector
    assert d.counts.sum() == len(X) and d.copies[0] == 1 + int((X[3000:] == X[0]).all(axis=1).sum())


def test_rows_alike_in_the_hashed_columns_are_still_told_apart():
    Y = np.zeros((12, 256), np.float32)
    Y[:, 3] = np.arange(12) % 4          # differs only in a column the hash may skip
    Y[:, 200] = np.arange(12) % 3
    d = distinct_rows(Y)
    assert len(d.first) == 12 and np.array_equal(Y[d.first][d.inverse], Y)
    Y[7] = Y[1]
    d = distinct_rows(Y)
    assert len(d.first) == 11 and d.inverse[7] == d.inverse[1] and d.copies[1] == 2


def test_nothing_to_compare():
    d = distinct_rows(np.zeros((0, 8), np.float32))
    assert len(d.first) == 0 and len(d.inverse) == 0
