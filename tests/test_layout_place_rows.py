"""place_rows: new rows placed by their laid-out neighbours, searched in the one matrix."""
from __future__ import annotations

import numpy as np
from conftest import unit_vectors

from memviz.layout.place import place_by_neighbours, place_rows


def test_place_rows_matches_placing_against_a_copy_of_the_laid_out_rows():
    emb = unit_vectors(400, 16, seed=4)
    xy = np.random.default_rng(1).normal(size=(400, 2)).astype(np.float32)
    xy[380:] = np.nan   # rows added since the layout
    xy[7] = np.nan      # a row without a place is never a neighbour
    laid = np.isfinite(xy[:, 0])
    got = place_rows(emb, xy, np.arange(380, 400))
    want = place_by_neighbours(emb[laid], xy[laid], emb[380:])
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert np.isnan(place_rows(emb, np.full((400, 2), np.nan, np.float32), np.arange(3))).all()


def test_past_most_laid_out_rows_the_neighbours_are_searched_among_a_fixed_sample_of_them():
    emb = unit_vectors(400, 16, seed=4)
    xy = np.random.default_rng(1).normal(size=(400, 2)).astype(np.float32)
    xy[380:] = np.nan
    new = np.arange(380, 400)
    # no more laid-out rows than `most`: every one of them, as before
    np.testing.assert_allclose(place_rows(emb, xy, new, most=380), place_rows(emb, xy, new), rtol=1e-6)
    got = place_rows(emb, xy, new, most=100)
    assert np.isfinite(got).all()
    np.testing.assert_array_equal(got, place_rows(emb, xy, new, most=100))   # the same sample each time
    # against those 100 exactly: each point at its nearest sampled neighbours' weighted mean
    laid = np.flatnonzero(np.isfinite(xy[:, 0]))
    anchors = np.sort(np.random.default_rng(0).choice(laid, size=100, replace=False))
    np.testing.assert_allclose(got, place_by_neighbours(emb[anchors], xy[anchors], emb[new]), rtol=1e-6)
