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
