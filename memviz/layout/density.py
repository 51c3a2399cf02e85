"""Density rendering of a million points: what a frame of the map or timeline draws when too
many points are in view to draw each one.

`DensityGrid` bins the points once into a FINE × FINE grid over their bounds (counts and summed
colours per cell, a pyramid of 2×2 sums above it, a summed-area table, and the points sorted by
cell). A frame then costs what is on screen, not what is in the store:

- the number of points in view is four lookups in the summed-area table;
- up to `points_max` of them: the points themselves, gathered from the cells in view (contiguous
  runs of the cell-sorted order, one per grid row);
- more: the pyramid level whose cells are about BIN_PX screen pixels, sliced to the view, as a
  log-scaled image coloured by the mean colour of each cell's points; zoomed in past the finest
  level, the points in view are binned directly at BIN_PX pixels;
- either way, points that are isolated at the scale drawn (their cell and the 8 around it hold at
  most ISOLATED points) are listed as outliers, for drawing as markers over the image, so a lone
  memory never disappears into a faint pixel.

Isolation is decided per pyramid level once, when the grid is built: a coarse cell's 3×3
neighbourhood covers the fine one's, so a point isolated at a coarse level is isolated at every
finer one, and the outliers of a level are the points whose coarsest isolated level is at least it.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from ..background import in_thread

FINE = 1024         # cells per axis of the finest level (by default; a timeline wants more along x)
BIN_PX = 2.0        # screen pixels per density cell, about
ISOLATED = 2        # at most this many points in a cell and its 8 neighbours: the points are outliers
POINTS_MAX = 50_000  # up to this many points in view, the points themselves are drawn


@dataclass
class Frame:
    """What to draw for one view. `points` (indices into the grid's points, ascending) when few
    enough are in view; else `image` (h, w, 4) RGBA uint8, row 0 at `rect`'s lower y, covering
    `rect` = (x0, y0, x1, y1) in data coordinates, and `outliers` (indices, ascending)."""

    visible: int
    points: np.ndarray | None = None
    image: np.ndarray | None = None
    rect: tuple[float, float, float, float] | None = None
    outliers: np.ndarray | None = None
    level: int = -1   # pyramid level drawn; -1: points binned directly (or no image)

    @property
    def mode(self) -> str:
        return "points" if self.image is None else "density"


def _box3(a: np.ndarray) -> np.ndarray:
    """Sum over each cell and its 8 neighbours (zero outside)."""
    p = np.pad(a, 1)
    h, w = a.shape
    out = np.zeros(a.shape, p.dtype)
    for dy in range(3):
        for dx in range(3):
            out += p[dy:dy + h, dx:dx + w]
    return out


def _halve(a: np.ndarray) -> np.ndarray:
    """2×2 block sums of the first two axes (an odd edge padded with zeros)."""
    h, w = a.shape[:2]
    if h % 2 or w % 2:
        a = np.pad(a, [(0, h % 2), (0, w % 2)] + [(0, 0)] * (a.ndim - 2))
    return a[0::2, 0::2] + a[1::2, 0::2] + a[0::2, 1::2] + a[1::2, 1::2]


def build_later(x, y, colour, palette, size: tuple[int, int] = (FINE, FINE)):
    """A DensityGrid made on a background thread (a Future): binning a million points takes a
    second or two, which a window's paint cannot wait for."""
    return in_thread(lambda: DensityGrid(x, y, colour, palette, size), "memviz-density")


def shade(counts: np.ndarray, rgb_sum: np.ndarray, top: float) -> np.ndarray:
    """RGBA image: each cell its points' mean colour, opacity growing with log(count) up to `top`
    (empty cells transparent, a single point still clearly visible)."""
    c = counts.astype(np.float32)
    img = np.empty(counts.shape + (4,), np.uint8)
    np.clip(rgb_sum / np.maximum(c, 1)[..., None], 0, 255, out=img[..., :3], casting="unsafe")
    alpha = 90 + 165 * np.minimum(np.log1p(c) / np.float32(np.log1p(max(float(top), 1.0))), 1)
    img[..., 3] = np.where(c > 0, alpha, 0)
    return img


class DensityGrid:
    """The points (x, y) with a colour each (`colour`: index into `palette`, (k, 3) RGB 0-255),
    binned for frames (see the module's docstring). Non-finite points are never drawn."""

    def __init__(self, x, y, colour, palette, size: tuple[int, int] = (FINE, FINE)) -> None:
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        self.n = len(x)
        ok = np.isfinite(x) & np.isfinite(y)
        idx = np.flatnonzero(ok)
        if len(idx):
            x0, x1, y0, y1 = x[idx].min(), x[idx].max(), y[idx].min(), y[idx].max()
        else:
            x0 = x1 = y0 = y1 = 0.0
        if x1 <= x0:
            x0, x1 = x0 - 0.5, x1 + 0.5
        if y1 <= y0:
            y0, y1 = y0 - 0.5, y1 + 0.5
        self.bounds = (float(x0), float(x1), float(y0), float(y1))
        self.gx, self.gy = gx, gy = int(size[0]), int(size[1])
        self.sx, self.sy = gx / (x1 - x0), gy / (y1 - y0)   # cells per data unit
        self.x, self.y = x, y
        cx = np.minimum(((x[idx] - x0) * self.sx).astype(np.int64), gx - 1)
        cy = np.minimum(((y[idx] - y0) * self.sy).astype(np.int64), gy - 1)
        cell = cy * gx + cx
        self.order = idx[np.argsort(cell)]              # point indices sorted by cell
        counts = np.bincount(cell, minlength=gx * gy)
        self.starts = np.concatenate([[0], np.cumsum(counts)])  # order[starts[c]:starts[c+1]]: cell c
        counts = counts.reshape(gy, gx)
        self.sat = np.zeros((gy + 1, gx + 1), np.int64)
        self.sat[1:, 1:] = counts.cumsum(0).cumsum(1)
        level_counts = [counts.astype(np.int32)]
        while min(level_counts[-1].shape) > 8:
            level_counts.append(_halve(level_counts[-1]))
        self.level_max = [int(c.max(initial=0)) for c in level_counts]
        self._idx, self._cell = idx, cell
        self.levels = [(c, None) for c in level_counts]  # (counts, summed colours) per level
        self._colour(colour, palette)
        # outlier candidates: isolated at the finest level; then the coarsest level each stays isolated at
        nb = _box3(counts)
        cand = idx[nb.ravel()[cell] <= ISOLATED]
        iso = np.full(len(cand), 0, np.int64)
        ccx = np.minimum(((x[cand] - x0) * self.sx).astype(np.int64), gx - 1)
        ccy = np.minimum(((y[cand] - y0) * self.sy).astype(np.int64), gy - 1)
        alive = np.ones(len(cand), bool)
        for L in range(1, len(self.levels)):
            nbL = _box3(self.levels[L][0])
            still = alive & (nbL[ccy >> L, ccx >> L] <= ISOLATED)
            iso[still] = L
            alive = still
            if not alive.any():
                break
        self._cand, self._cand_level = cand, iso    # ascending: idx is

    def _colour(self, colour, palette) -> None:
        """Summed colours per cell at every level (and no image made yet)."""
        self.palette = np.asarray(palette, np.float64).reshape(-1, 3)
        self.colour = np.asarray(colour, np.int64)
        gx, gy = self.gx, self.gy
        rgb_sum = np.empty((gy, gx, 3), np.float32)
        rgb = self.palette[self.colour[self._idx]]
        for k in range(3):
            rgb_sum[..., k] = np.bincount(self._cell, weights=rgb[:, k], minlength=gx * gy).reshape(gy, gx)
        sums = [rgb_sum]
        while len(sums) < len(self.levels):
            sums.append(_halve(sums[-1]))
        self.levels = [(c, s) for (c, _), s in zip(self.levels, sums)]
        self._shaded: dict[int, np.ndarray] = {}       # level -> its whole image (made when first drawn)

    def colour_index(self, rgb) -> np.ndarray:
        """The palette index of each colour (k, 3); a colour not in the palette is added to it."""
        rgb = np.asarray(rgb, np.float64).reshape(-1, 3)
        out = np.empty(len(rgb), np.int64)
        for i, c in enumerate(rgb):
            at = np.flatnonzero((self.palette == c).all(axis=1))
            if not len(at):
                self.palette = np.vstack([self.palette, c])
                at = [len(self.palette) - 1]
            out[i] = at[0]
        return out

    def recolour(self, points, colour) -> None:
        """Points `points` (indices) now have colour `colour` (indices into the palette), in place:
        the summed colours of their cells follow at every level, and the images made so far are
        shaded again in those cells only (a live refresh's changed rows: not a pass over every
        point)."""
        points, colour = np.asarray(points, np.int64), np.asarray(colour, np.int64)
        was = self.colour[points]
        moved = was != colour
        points, colour, was = points[moved], colour[moved], was[moved]
        if not len(points):
            return
        self.colour[points] = colour
        x, y = self.x[points], self.y[points]
        ok = np.isfinite(x) & np.isfinite(y)   # (a point never drawn is in no cell)
        x0, _, y0, _ = self.bounds
        cx = np.minimum(((x[ok] - x0) * self.sx).astype(np.int64), self.gx - 1)
        cy = np.minimum(((y[ok] - y0) * self.sy).astype(np.int64), self.gy - 1)
        change = (self.palette[colour[ok]] - self.palette[was[ok]]).astype(np.float32)
        for L, (counts, rgb_sum) in enumerate(self.levels):
            at = (cy >> L, cx >> L)
            np.add.at(rgb_sum, at, change)
            if L in self._shaded:
                self._shaded[L][at] = shade(counts[at], rgb_sum[at], self.level_max[L])

    def recoloured(self, colour, palette) -> DensityGrid:
        """The same points in other colours (the map coloured by another column, scores of a new
        query): the binning, the costly part, is kept."""
        new = copy.copy(self)
        new._colour(colour, palette)
        return new

    # ------------------------------------------------------------ cells of a view
    def _cells(self, view) -> tuple[int, int, int, int]:
        """Cell range [cx0, cx1) × [cy0, cy1) of the finest level touching the view (x0, x1, y0, y1)."""
        bx0, _, by0, _ = self.bounds
        vx0, vx1, vy0, vy1 = view
        cx0 = int(np.clip(np.floor((vx0 - bx0) * self.sx), 0, self.gx))
        cx1 = int(np.clip(np.floor((vx1 - bx0) * self.sx) + 1, 0, self.gx))
        cy0 = int(np.clip(np.floor((vy0 - by0) * self.sy), 0, self.gy))
        cy1 = int(np.clip(np.floor((vy1 - by0) * self.sy) + 1, 0, self.gy))
        return cx0, cx1, cy0, cy1

    def count_in(self, view) -> int:
        """Points in the cells touching the view (a slight overcount at its edges), in O(1)."""
        cx0, cx1, cy0, cy1 = self._cells(view)
        s = self.sat
        return int(s[cy1, cx1] - s[cy0, cx1] - s[cy1, cx0] + s[cy0, cx0])

    def near(self, view, ordered: bool = True) -> np.ndarray:
        """Indices (ascending if `ordered`) of the points in the cells touching the view: a superset
        of the points inside it, gathered in O(points there)."""
        cx0, cx1, cy0, cy1 = self._cells(view)
        if cx1 <= cx0 or cy1 <= cy0:
            return np.zeros(0, np.int64)
        rows = np.arange(cy0, cy1) * self.gx
        lo, hi = self.starts[rows + cx0], self.starts[rows + cx1]
        lengths = hi - lo
        total = int(lengths.sum())
        if not total:
            return np.zeros(0, np.int64)
        # the runs [lo, hi) one after another: arange(total) shifted by each run's start
        shift = np.repeat(lo - (np.cumsum(lengths) - lengths), lengths)
        got = self.order[np.arange(total) + shift]
        return np.sort(got) if ordered else got

    def inside(self, view, ordered: bool = True) -> np.ndarray:
        """Indices (ascending if `ordered`) of the points inside the view."""
        got = self.near(view, ordered)
        x, y = self.x[got], self.y[got]
        vx0, vx1, vy0, vy1 = view
        return got[(x >= vx0) & (x <= vx1) & (y >= vy0) & (y <= vy1)]

    # ------------------------------------------------------------ frames
    def frame(self, view, pixels, points_max: int = POINTS_MAX, pad=(0.0, 0.0)) -> Frame:
        """What to draw for `view` (x0, x1, y0, y1) shown on `pixels` (width, height) device pixels.
        `pad` (data units) widens the view for markers whose centre is just outside it."""
        vx0, vx1, vy0, vy1 = view
        padded = (vx0 - pad[0], vx1 + pad[0], vy0 - pad[1], vy1 + pad[1])
        visible = self.count_in(padded)
        if visible <= points_max:
            return Frame(visible, points=self.inside(padded))
        w_px, h_px = max(float(pixels[0]), 1.0), max(float(pixels[1]), 1.0)
        # screen pixels per finest cell, along each axis
        fpx = w_px / max((vx1 - vx0) * self.sx, 1e-300)
        fpy = h_px / max((vy1 - vy0) * self.sy, 1e-300)
        finest = max(fpx, fpy)
        if finest > 2 * BIN_PX:   # the finest cells would show as blocks: bin what is in view
            return self._binned(view, w_px, h_px, visible)
        L = int(np.clip(np.round(np.log2(BIN_PX / finest)), 0, len(self.levels) - 1))
        counts, rgb_sum = self.levels[L]
        cx0, cx1, cy0, cy1 = self._cells(view)
        cx0, cy0 = cx0 >> L, cy0 >> L
        cx1, cy1 = min(counts.shape[1], -(-cx1 >> L)), min(counts.shape[0], -(-cy1 >> L))
        if L not in self._shaded:
            self._shaded[L] = shade(counts, rgb_sum, self.level_max[L])
        img = np.ascontiguousarray(self._shaded[L][cy0:cy1, cx0:cx1])
        bx0, _, by0, _ = self.bounds
        cw, ch = (1 << L) / self.sx, (1 << L) / self.sy
        rect = (bx0 + cx0 * cw, by0 + cy0 * ch, bx0 + cx1 * cw, by0 + cy1 * ch)
        out = self._cand[self._cand_level >= L]
        ox, oy = self.x[out], self.y[out]
        out = out[(ox >= padded[0]) & (ox <= padded[1]) & (oy >= padded[2]) & (oy <= padded[3])]
        return Frame(visible, image=img, rect=rect, outliers=out, level=L)

    def _binned(self, view, w_px: float, h_px: float, visible: int) -> Frame:
        """The points in view binned at BIN_PX screen pixels (zoomed in past the finest level)."""
        vx0, vx1, vy0, vy1 = view
        got = self.inside(view, ordered=False)
        nx, ny = max(1, int(np.ceil(w_px / BIN_PX))), max(1, int(np.ceil(h_px / BIN_PX)))
        bx = np.minimum(((self.x[got] - vx0) * (nx / max(vx1 - vx0, 1e-300))).astype(np.int64), nx - 1)
        by = np.minimum(((self.y[got] - vy0) * (ny / max(vy1 - vy0, 1e-300))).astype(np.int64), ny - 1)
        b = by * nx + bx
        counts = np.bincount(b, minlength=nx * ny)
        rgb = self.palette[self.colour[got]]
        rgb_sum = np.stack([np.bincount(b, weights=rgb[:, k], minlength=nx * ny) for k in range(3)], axis=-1)
        counts2 = counts.reshape(ny, nx)
        img = shade(counts2, rgb_sum.reshape(ny, nx, 3).astype(np.float32), counts.max(initial=0))
        lone = _box3(counts2).ravel()[b] <= ISOLATED
        return Frame(visible, image=img, rect=(vx0, vy0, vx1, vy1), outliers=np.sort(got[lone]), level=-1)
