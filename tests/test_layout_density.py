"""memviz.layout.density: what a frame of a million-point plot draws, checked against brute force."""
from __future__ import annotations

import numpy as np
import pytest

from memviz.layout.density import ISOLATED, DensityGrid

RED, BLUE = (220.0, 20.0, 20.0), (20.0, 40.0, 220.0)


@pytest.fixture(scope="module")
def blobs():
    """Two dense blobs (red left, blue right), a lone point far off, and a few NaN."""
    rng = np.random.default_rng(0)
    n = 40_000
    colour = (np.arange(n) % 2).astype(np.int64)
    x = rng.normal(size=n) * 0.5 + np.where(colour == 0, -3.0, 3.0)
    y = rng.normal(size=n) * 0.5
    x = np.r_[x, 40.0, np.nan, 1.0]
    y = np.r_[y, 30.0, 1.0, np.inf]
    colour = np.r_[colour, 0, 0, 0]
    return x, y, colour, DensityGrid(x, y, colour, np.array([RED, BLUE]), size=(256, 256))


def brute(x, y, view):
    x0, x1, y0, y1 = view
    return np.flatnonzero((x >= x0) & (x <= x1) & (y >= y0) & (y <= y1))


@pytest.mark.parametrize("view", [(-5, 5, -2, 2), (-3.2, -2.9, -0.1, 0.3), (0, 50, 0, 40), (100, 200, 0, 1),
                                  (-100, 100, -100, 100)])
def test_points_in_a_view_are_exactly_the_brute_force_ones(blobs, view):
    x, y, _, grid = blobs
    inside = grid.inside(view)
    assert np.array_equal(inside, brute(x, y, view))
    assert grid.count_in(view) >= len(inside)              # cells touching the view: never fewer
    assert set(inside) <= set(grid.near(view).tolist())


def test_few_points_in_view_are_drawn_as_points(blobs):
    x, y, _, grid = blobs
    view = (-3.1, -2.9, -0.1, 0.1)
    f = grid.frame(view, (800, 600), points_max=5_000)
    assert f.mode == "points" and f.image is None
    assert np.array_equal(f.points, brute(x, y, view))


def test_many_points_in_view_are_an_image_with_the_lone_point_as_outlier(blobs):
    x, y, _, grid = blobs
    view = (-10.0, 45.0, -5.0, 35.0)  # everything
    f = grid.frame(view, (800, 600), points_max=5_000)
    assert f.mode == "density" and f.level >= 0
    h, w = f.image.shape[:2]
    x0, y0, x1, y1 = f.rect
    ok = np.isfinite(x) & np.isfinite(y)
    assert x0 <= x[ok].min() and x1 >= 40 and y0 <= y[ok].min() and y1 >= 30  # the image covers the data
    lone = len(x) - 3
    assert lone in set(f.outliers.tolist())
    in_blob = (np.abs(x[:40_000] + 3) < 0.3) & (np.abs(y[:40_000]) < 0.3)
    assert not np.isin(np.flatnonzero(in_blob), f.outliers).any()     # the dense core is the image's
    assert len(f.outliers) < 0.05 * len(x)

    def pixel(px, py):  # the image cell holding data point (px, py); row 0 is the lowest y
        return f.image[int((py - y0) / (y1 - y0) * h), int((px - x0) / (x1 - x0) * w)]
    r, g, b, a = pixel(-3.0, 0.0)
    assert a > 200 and r > 150 and b < 80                         # the red blob, opaque where dense
    r, g, b, a = pixel(3.0, 0.0)
    assert a > 200 and b > 150 and r < 80
    assert pixel(20.0, -4.0)[3] == 0                               # nothing there: transparent


def test_a_point_isolated_when_zoomed_out_is_isolated_when_zoomed_in(blobs):
    """A coarse cell's 3×3 neighbourhood covers the fine one's: the outliers of a coarser level
    are among the finer level's."""
    x, y, c, grid = blobs
    levels = [grid.frame((-10.0, 45.0, -5.0, 35.0), (w, w * 0.7), points_max=100) for w in (60, 120, 240, 480)]
    assert len({f.level for f in levels}) > 1
    by_level = sorted(levels, key=lambda f: f.level)
    for finer, coarser in zip(by_level, by_level[1:]):
        assert set(coarser.outliers.tolist()) <= set(finer.outliers.tolist())


def test_zoomed_in_past_the_finest_cells_the_points_in_view_are_binned(blobs):
    x, y, _, grid = blobs
    view = (-3.5, -2.5, -0.5, 0.5)   # ~1/50 of the width on 1000 px: finest cells would be 20 px wide
    f = grid.frame(view, (1000, 800), points_max=1_000)
    assert f.mode == "density" and f.level == -1 and f.rect == (-3.5, -0.5, -2.5, 0.5)
    h, w = f.image.shape[:2]
    assert (w, h) == (500, 400)            # BIN_PX = 2 screen pixels per bin
    assert (f.image[..., 3] > 0).sum() > 0
    # every outlier is inside the view and alone within its 3×3 bins
    inside = set(brute(x, y, view).tolist())
    assert set(f.outliers.tolist()) <= inside
    bx = ((x[f.outliers] + 3.5) * w).astype(int)
    by = ((y[f.outliers] + 0.5) * h).astype(int)
    pts = brute(x, y, view)
    px, py = ((x[pts] + 3.5) * w).astype(int), ((y[pts] + 0.5) * h).astype(int)
    for i, j in zip(bx[:20], by[:20]):
        assert ((np.abs(px - i) <= 1) & (np.abs(py - j) <= 1)).sum() <= ISOLATED


def test_a_grid_of_nothing_or_one_spot_draws_nothing_wrong():
    empty = DensityGrid(np.zeros(0), np.zeros(0), np.zeros(0, np.int64), np.array([RED]))
    f = empty.frame((0, 1, 0, 1), (100, 100), points_max=10)
    assert f.mode == "points" and len(f.points) == 0
    same = DensityGrid(np.ones(500), np.ones(500), np.zeros(500, np.int64), np.array([RED]), size=(64, 64))
    f = same.frame((0, 2, 0, 2), (200, 200), points_max=10)
    assert f.mode == "density" and f.image[..., 3].max() > 200 and len(f.outliers) == 0


def test_recoloured_keeps_the_binning_and_changes_only_the_colours(blobs):
    x, y, colour, grid = blobs
    other = grid.recoloured(1 - colour, np.array([RED, BLUE]))
    assert other.order is grid.order and other.level_max == grid.level_max
    view = (-10.0, 45.0, -5.0, 35.0)
    a, b = grid.frame(view, (800, 600), points_max=5_000), other.frame(view, (800, 600), points_max=5_000)
    assert np.array_equal(a.image[..., 3], b.image[..., 3])       # the same counts
    assert np.array_equal(a.outliers, b.outliers)
    h, w = b.image.shape[:2]
    x0, y0, x1, y1 = b.rect
    r, g, bl, _ = b.image[int((0 - y0) / (y1 - y0) * h), int((-3 - x0) / (x1 - x0) * w)]
    assert bl > 150 and r < 80                                    # the left blob is blue now
    r, g, bl, _ = a.image[int((0 - y0) / (y1 - y0) * h), int((-3 - x0) / (x1 - x0) * w)]
    assert r > 150 and bl < 80                                    # and the original grid unchanged


def test_recolouring_points_in_place_is_binning_them_again():
    """A live refresh's changed points, recoloured cell by cell, give the grid (and its images)
    a fresh binning of the new colours gives."""
    rng = np.random.default_rng(4)
    n = 30_000
    x, y = rng.normal(size=n), rng.normal(size=n)
    x[5] = np.nan  # never drawn: in no cell
    colour = rng.integers(0, 3, n)
    palette = np.array([RED, BLUE, (20.0, 160.0, 40.0)])
    grid = DensityGrid(x, y, colour.copy(), palette, size=(128, 128))
    views = [((-4, 4, -4, 4), (px, px)) for px in (64, 32, 16, 8)]
    for view, pixels in views:   # images made before the change are patched too
        grid.frame(view, pixels, points_max=0)
    made = dict(grid._shaded)
    assert len(made) >= 3
    points = np.r_[5, rng.choice(n, 300, replace=False)]
    new = colour.copy()
    new[points] = rng.integers(0, 3, len(points))
    grid.recolour(points, new[points])
    fresh = DensityGrid(x, y, new, palette, size=(128, 128))
    assert np.array_equal(grid.colour, fresh.colour)
    for (counts, sums), (want_counts, want_sums) in zip(grid.levels, fresh.levels):
        assert np.array_equal(counts, want_counts)
        np.testing.assert_allclose(sums, want_sums, rtol=1e-6, atol=1e-3)
    for view, pixels in views:
        fresh.frame(view, pixels, points_max=0)
    assert fresh._shaded.keys() == made.keys()
    for level, img in made.items():
        assert np.abs(img.astype(int) - fresh._shaded[level]).max() <= 1


def test_a_grid_built_in_the_background_is_the_same_grid():
    from memviz.layout.density import build_later

    rng = np.random.default_rng(5)
    x, y, colour = rng.normal(size=5000), rng.normal(size=5000), rng.integers(0, 2, 5000)
    got = build_later(x, y, colour, np.array([RED, BLUE]), (64, 64)).result(timeout=60)
    want = DensityGrid(x, y, colour, np.array([RED, BLUE]), (64, 64))
    assert np.array_equal(got.order, want.order) and np.array_equal(got.sat, want.sat)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(got.levels, want.levels))
