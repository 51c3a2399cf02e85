"""Colours, brushes and marker sizes shared by the plots (one QBrush per colour, reused by
every point: pyqtgraph's symbol atlas then holds a handful of symbols, not one per point).

Every colour a plot or a custom-drawn cell uses comes from `theme()`: a `Theme` derived from the
application's palette (light or dark, the desktop's or View ▸ Theme's, memviz.app.theme). The
hues below are what each colour means; a theme keeps each hue but moves its lightness until it
stands out from that palette's background by at least 3:1 (WCAG contrast), drawn at the least
opaque alpha the plots draw it with. A panel draws again when its palette changes (QEvent.PaletteChange).
"""
from __future__ import annotations

import colorsys
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor, QFont, QGuiApplication, QPalette

from memviz.app.tinted import TintedLabel

# what each colour means (the hues); a Theme adjusts their lightness to its background
KIND_COLORS = {
    "episode": "#4C78A8", "fact": "#F58518", "preference": "#54A24B", "reflection": "#B279A2",
    "plan": "#E45756", "dialogue": "#72B7B2", "character": "#EECA3B", "scene": "#9D755D",
}
PALETTE = ["#4C78A8", "#F58518", "#54A24B", "#B279A2", "#E45756", "#72B7B2", "#EECA3B", "#9D755D",
           "#FF9DA6", "#BAB0AC", "#1B9E77", "#7570B3"]
COMPONENT_COLORS = {"relevance": "#4C78A8", "recency": "#F58518", "importance": "#54A24B"}  # the score bars
OTHER_COMPONENTS = ["#B279A2", "#72B7B2", "#EECA3B", "#9D755D"]
SELECTED = "#FFD400"
QUERY = "#E01E5A"
NEW = "#1F5FBF"  # the ring around memories just written
BROKEN = "#D62728"
TOOL = "#1E78DC"  # the rectangle, lasso and time range being drawn

MIN_CONTRAST = 3.0   # WCAG's least contrast for graphics that carry meaning
POINT_ALPHA = 190    # the least opaque alpha a plot fills a live memory's marker with (the map's)
N_SIZES = 6          # importance is drawn with this many marker sizes (few distinct symbols)
N_RAMP = 24          # continuous colourings are quantised to this many shared brushes


def luminance(c: QColor) -> float:
    """WCAG relative luminance of an opaque colour."""
    def lin(v: float) -> float:
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4
    return 0.2126 * lin(c.redF()) + 0.7152 * lin(c.greenF()) + 0.0722 * lin(c.blueF())


def contrast(a: QColor, b: QColor) -> float:
    """WCAG contrast ratio of two opaque colours (1 to 21)."""
    la, lb = luminance(a), luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def over(c: QColor, background: QColor, alpha: float | None = None) -> QColor:
    """`c` painted at `alpha` (default: its own) over an opaque background: the opaque colour on screen."""
    a = c.alphaF() if alpha is None else alpha
    return QColor(*(round(a * f(c) + (1 - a) * f(background)) for f in (QColor.red, QColor.green, QColor.blue)))


def readable(hue: str, background: QColor, alpha: float = 1.0, ratio: float = MIN_CONTRAST) -> str:
    """`hue` with its lightness moved away from `background` (darker on a light one, lighter on a
    dark one) until, drawn at `alpha` over it, it has `ratio` contrast; unchanged if it has."""
    c = QColor(hue)
    h, lightness, s = colorsys.rgb_to_hls(c.redF(), c.greenF(), c.blueF())
    step = -0.01 if luminance(background) > 0.18 else 0.01  # 0.18: mid grey, as far from black as from white
    while True:
        c = QColor(QColor.fromRgbF(*colorsys.hls_to_rgb(h, lightness, s)).name())  # as 8-bit channels, as drawn
        if contrast(over(c, background, alpha), background) >= ratio or not 0.0 < lightness < 1.0:
            return c.name()
        lightness = min(max(lightness + step, 0.0), 1.0)


def mix(a: QColor, b: QColor, share_of_a: float) -> str:
    return over(a, b, share_of_a).name()


@dataclass(frozen=True)
class Theme:
    """The colours of the plots and custom-drawn cells for one palette (hex strings: `color()`
    makes a QColor with an alpha)."""

    dark: bool
    paper: str            # the plots' background (the palette's Base, as views have): veils and label fills
    ink: str              # text and axes on the plots
    label_text: str       # labels of the graph and the map
    label_text_faint: str  # labels of memories outside the selection's lineage
    axis: str             # axis lines and ticks
    link: str             # the reflection graph's links outside the selection's lineage (drawn faint)
    lineage: str          # the selection's ancestors and descendants: darker (lighter) than every kind colour
    selected: str
    query: str
    new: str
    broken: str
    tool: str             # shapes being drawn, the time range
    as_of: str            # the timeline's "as of" line
    hover_fill: str
    hover_border: str
    unknown: str          # no category / no score: grey
    muted: str            # text of what is out (retired memories, memories left out of the prompt)
    alarm: str            # text that warns (the past is shown, a cut)
    caution: str          # text that qualifies (an estimate)
    ok: str               # text that reassures (a writable store), on the window's background
    up: str               # a rank gained
    down: str             # a rank lost
    cut: str              # the prompt view's cut line: its text, over cut_fill
    cut_fill: str
    pin: str              # memories pinned into the prompt (protected)
    bar: str              # the prompt view's running total of tokens
    kinds: dict[str, str] = field(default_factory=dict)
    palette: tuple[str, ...] = ()
    components: dict[str, str] = field(default_factory=dict)
    other_components: tuple[str, ...] = ()
    ramp: tuple[str, ...] = ()

    @classmethod
    def from_palette(cls, pal: QPalette) -> Theme:
        bg, fg = pal.color(QPalette.Base), pal.color(QPalette.Text)
        bg.setAlpha(255)
        dark = luminance(bg) < luminance(fg)

        def point(hue: str) -> str:  # a marker's fill, drawn at POINT_ALPHA
            return readable(hue, bg, POINT_ALPHA / 255)

        def mark(hue: str) -> str:   # a ring, a line, an opaque bar
            return readable(hue, bg)
        lut = pg.colormap.get("viridis").getLookupTable(0.0, 1.0, N_RAMP, alpha=False)
        return cls(
            dark=dark, paper=bg.name(), ink=fg.name(), label_text=readable(mix(fg, bg, 0.9), bg, ratio=4.5),
            label_text_faint=readable(mix(fg, bg, 0.68), bg),
            axis=mix(fg, bg, 0.6), link=mix(fg, bg, 0.5), lineage=mix(fg, bg, 0.95),
            selected=mark(SELECTED), query=mark(QUERY), new=mark(NEW), broken=mark(BROKEN), tool=mark(TOOL),
            as_of=mark(BROKEN), hover_fill=mix(QColor("#FFFFE1") if not dark else QColor("#46463A"), bg, 0.92),
            hover_border=mix(fg, bg, 0.45), unknown=point("#969696"), muted=readable(mix(fg, bg, 0.5), bg),
            alarm=readable("#BB0000", pal.color(QPalette.Window), ratio=4.5),
            caution=readable("#8A6D00", pal.color(QPalette.Window), ratio=4.5),
            ok=readable("#2A7D2A", pal.color(QPalette.Window), ratio=4.5),
            up=readable("#2A7D2A", bg, ratio=4.5), down=readable("#B03030", bg, ratio=4.5),
            cut=readable("#C0392B", QColor(mix(QColor(BROKEN), bg, 0.16)), ratio=4.5), cut_fill=mix(QColor(BROKEN), bg, 0.16),
            pin=readable("#7B4FA0", bg, ratio=4.5), bar=readable(KIND_COLORS["episode"], bg, 150 / 255),
            kinds={k: point(v) for k, v in KIND_COLORS.items()}, palette=tuple(point(v) for v in PALETTE),
            components={k: mark(v) for k, v in COMPONENT_COLORS.items()},
            other_components=tuple(mark(v) for v in OTHER_COMPONENTS),
            ramp=tuple(point(QColor(int(r), int(g), int(b)).name()) for r, g, b in lut))

    def component(self, name: str, i: int) -> str:
        """A score component's colour (the results' bars, the weight labels)."""
        return self.components.get(name) or self.other_components[i % len(self.other_components)]


_current: tuple[int, Theme] | None = None  # (the application palette's cacheKey, its theme)


def theme() -> Theme:
    """The theme of the application's palette now (made again when the palette changes)."""
    global _current
    pal = QGuiApplication.palette()
    if _current is None or _current[0] != pal.cacheKey():
        _current = (pal.cacheKey(), Theme.from_palette(pal))
    return _current[1]


class ThemeLabel(TintedLabel):
    """A plain-text label whose text has a theme colour (`pick(theme)`; None: the palette's own),
    kept in it when the palette changes."""

    def __init__(self, text: str = "", pick: Callable[[Theme], str] | None = None, bold: bool = False,
                 parent=None, *, wrap: bool = False, selectable: bool = False) -> None:
        super().__init__(text, wrap=wrap, selectable=selectable)
        if parent is not None:
            self.setParent(parent)
        self.setForegroundRole(QPalette.WindowText)  # (in a toolbar a label would draw in ButtonText)
        if bold:
            font = QFont(self.font())
            font.setBold(True)
            self.setFont(font)
        self.set_pick(pick)

    def set_pick(self, pick: Callable[[Theme], str] | None) -> None:
        self.set_colour(None if pick is None else lambda: QColor(pick(theme())))


def color(name: str, alpha: int = 255) -> QColor:
    """A colour (a theme's hex string) with this alpha (0-255)."""
    c = QColor(name)
    c.setAlpha(alpha)
    return c


def category_color(name: str, order: int | None = None) -> QColor:
    t = theme()
    if name in t.kinds:
        return QColor(t.kinds[name])
    i = order if order is not None else zlib.crc32(name.encode()) % len(t.palette)
    return QColor(t.palette[i % len(t.palette)])


def category_brushes(names: list[str], alpha: int = 220, by_kind: bool = True) -> list:
    out = []
    for i, n in enumerate(names):
        c = category_color(n) if by_kind else category_color(n, i)
        c.setAlpha(alpha)
        out.append(pg.mkBrush(c))
    out.append(pg.mkBrush(color(theme().unknown, alpha)))
    return out


def ramp_brushes(alpha: int = 220) -> list:
    t = theme()
    brushes = [pg.mkBrush(color(c, alpha)) for c in t.ramp]
    brushes.append(pg.mkBrush(color(t.unknown, 90)))  # NaN: not a candidate / unknown
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


def kind_codes(data, rows: np.ndarray, dim: np.ndarray | None = None) -> np.ndarray:
    """The codes kind_styles gives `rows` (a live refresh's new rows, drawn in styles made before)."""
    k = len(data.kinds) + 1
    retired = ~np.isnan(data.arrays.valid_until[rows])
    pale = np.zeros(len(rows), bool) if dim is None else np.asarray(dim, bool)
    return data.kind_codes[rows] + k * (retired.astype(np.int64) + 2 * pale)


def kind_styles(data, rows: np.ndarray, dim: np.ndarray | None = None) -> tuple[np.ndarray, list[dict]]:
    """(codes, styles) for a PointsItem: colour by kind; retired rows hollow and faded; `dim`
    rows (a bool mask over `rows`) pale."""
    k = len(data.kinds) + 1
    codes = kind_codes(data, rows, dim)
    fill = category_brushes(data.kinds)
    light = category_brushes(data.kinds, alpha=45)
    live_pen = pg.mkPen(color(theme().paper, 160), width=0.5)  # a rim of the background between touching markers
    hollow = pg.mkBrush(0, 0, 0, 0)
    styles = []
    for ret, pal in ((False, False), (True, False), (False, True), (True, True)):
        for c in range(k):
            col = QColor(fill[c].color())
            col.setAlpha(50 if pal else 120)
            styles.append({"brush": hollow if ret else (light[c] if pal else fill[c]),
                           "pen": pg.mkPen(col, width=1.3) if ret else live_pen, "z": -1 if pal else 0})
    return codes, styles
