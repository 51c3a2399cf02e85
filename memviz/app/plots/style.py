"""Colours, brushes and marker sizes shared by the plots (one QBrush per colour, reused by
every point: pyqtgraph's symbol atlas then holds a handful of symbols, not one per point)."""
from __future__ import annotations

import zlib

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor

KIND_COLORS = {
    "episode": "#4C78A8", "fact": "#F58518", "preference": "#54A24B", "reflection": "#B279A2",
    "plan": "#E45756", "dialogue": "#72B7B2", "character": "#EECA3B", "scene": "#9D755D",
}
PALETTE = ["#4C78A8", "#F58518", "#54A24B", "#B279A2", "#E45756", "#72B7B2", "#EECA3B", "#9D755D",
           "#FF9DA6", "#BAB0AC", "#1B9E77", "#7570B3"]
SELECTED = "#FFD400"
LINEAGE = "#1B1B1B"  # the selection's ancestors and descendants: no kind or palette colour is this dark
QUERY = "#E01E5A"
NEW = "#1F5FBF"  # the ring around memories just written (the status bar's "+N new" has this colour)
BROKEN = "#D62728"
PAPER = "#FFFFFF"    # the plots' background: veils and label fills are made of it
LINK = "#8A8A8A"     # the reflection graph's links outside the selection's lineage (drawn faint)
LABEL_TEXT = "#2B2B2B"
LABEL_TEXT_FAINT = "#5E5E5E"  # labels of memories outside the selection's lineage
N_SIZES = 6          # importance is drawn with this many marker sizes (few distinct symbols)
N_RAMP = 24          # continuous colourings are quantised to this many shared brushes


def color(name: str, alpha: int = 255) -> QColor:
    """One of the colours above with this alpha (0-255)."""
    c = QColor(name)
    c.setAlpha(alpha)
    return c


def category_color(name: str, order: int | None = None) -> QColor:
    if name in KIND_COLORS:
        return QColor(KIND_COLORS[name])
    i = order if order is not None else zlib.crc32(name.encode()) % len(PALETTE)
    return QColor(PALETTE[i % len(PALETTE)])


def category_brushes(names: list[str], alpha: int = 220, by_kind: bool = True) -> list:
    out = []
    for i, n in enumerate(names):
        c = category_color(n) if by_kind else category_color(n, i)
        c.setAlpha(alpha)
        out.append(pg.mkBrush(c))
    out.append(pg.mkBrush(QColor(150, 150, 150, alpha)))
    return out


def ramp_brushes(alpha: int = 220) -> list:
    cmap = pg.colormap.get("viridis")
    cols = cmap.getLookupTable(0.0, 1.0, N_RAMP, alpha=False)
    brushes = [pg.mkBrush(QColor(int(r), int(g), int(b), alpha)) for r, g, b in cols]
    brushes.append(pg.mkBrush(QColor(180, 180, 180, 90)))  # NaN: not a candidate / unknown
    return brushes


def ramp_codes(values: np.ndarray) -> np.ndarray:
    """Bin a float array into N_RAMP bins over its finite range; NaN gets code N_RAMP."""
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(v)
    codes = np.full(len(v), N_RAMP, dtype=np.int64)
    if ok.any():
        lo, hi = float(v[ok].min()), float(v[ok].max())
        span = hi - lo if hi > lo else 1.0
        codes[ok] = np.clip(((v[ok] - lo) / span * (N_RAMP - 1)).round(), 0, N_RAMP - 1).astype(np.int64)
    return codes


def importance_sizes(importance: np.ndarray, small: float = 4.0, large: float = 14.0) -> np.ndarray:
    """Marker size from importance 0-10, in N_SIZES steps."""
    imp = np.nan_to_num(np.asarray(importance, dtype=np.float64), nan=5.0)
    step = np.clip(np.floor(imp / 10.0 * N_SIZES), 0, N_SIZES - 1)
    return small + step * (large - small) / (N_SIZES - 1)


def kind_styles(data, rows: np.ndarray, dim: np.ndarray | None = None) -> tuple[np.ndarray, list[dict]]:
    """(codes, styles) for a PointsItem: colour by kind; retired rows hollow and faded; `dim`
    rows (a bool mask over `rows`) pale."""
    a = data.arrays
    k = len(data.kinds) + 1
    kind = data.kind_codes[rows]
    retired = ~np.isnan(a.valid_until[rows])
    pale = np.zeros(len(rows), bool) if dim is None else np.asarray(dim, bool)
    codes = kind + k * (retired.astype(np.int64) + 2 * pale)
    fill = category_brushes(data.kinds)
    light = category_brushes(data.kinds, alpha=45)
    live_pen = pg.mkPen(255, 255, 255, 160, width=0.5)
    hollow = pg.mkBrush(255, 255, 255, 0)
    styles = []
    for ret, pal in ((False, False), (True, False), (False, True), (True, True)):
        for c in range(k):
            col = QColor(fill[c].color())
            col.setAlpha(50 if pal else 120)
            styles.append({"brush": hollow if ret else (light[c] if pal else fill[c]),
                           "pen": pg.mkPen(col, width=1.3) if ret else live_pen, "z": -1 if pal else 0})
    return codes, styles
