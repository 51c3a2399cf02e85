"""Judged queries panel: the judged set the current setting is measured against, and what it says.

At the top, the set (the store's judged sets), Fit… and the set's actions (import, export,
delete); then the live quality readout of the setting in force — recall@k, nDCG@10, MRR, P@k,
each with its change against the baseline (the preset's defaults, or a pinned setting) — and
how many judged queries got better or worse. Below, two tabs: **Queries** (each judged query's
measure and change, how many of its relevant memories are in the top k; choosing one runs it in
the query panel and lists its near misses: the relevant memories outside the top k, their rank
and the component that held each back — clicking one selects it everywhere) and **Picture**
(the measure over a grid of two weights, α × β at the current γ by default, with the current
setting and the last fit marked; a click there tries that point).

The panel shows `memviz.session.judging.Tuning` (Qt-free, the window's JudgeController fills it
from jobs on the "judge" lane) and talks back through signals: set_chosen(name),
query_chosen(id), memory_chosen(id), measure_chosen(family), axes_chosen(x, y),
point_chosen(values). `MarksBar` (below) is the row of mark buttons the window puts under the
query panel's results.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QAbstractTableModel, QEvent, QModelIndex, QPoint, QRectF, Qt, Signal
from PySide6.QtGui import QAction, QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QSizePolicy,
    QSplitter,
    QTableView,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from memviz.app.plain_text import plain_tooltip
from memviz.app.plots import style
from memviz.session.judging import AXIS_NAMES, FAMILIES, GRADE_MARKS, MarkBook, Tuning, axis_choices, describe, measure_label, measure_name
from memviz.session.state import AppState
from memviz.store import iso
from memviz.words import count

_RIGHT = int(Qt.AlignRight | Qt.AlignVCenter)
STRIP_CAPTION_FROM = 520   # px of the readout strip from which it names the set beside the numbers
CAPTION_WIDTH = 70   # px of the readout strip's set name (cut, whole in its tooltip)


def _signed(d: float, short: bool = False) -> str:
    """A change as ▲0.021 / ▼0.013 (`short`: ▲.021), "" when below the third decimal."""
    if abs(d) < 5e-4:
        return ""
    text = f"{abs(d):.3f}"
    return ("▲" if d > 0 else "▼") + (text[1:] if short and text.startswith("0") else text)


class _Rows(QAbstractTableModel):
    """A table of tuples (`rows`) under HEADERS."""

    HEADERS: tuple[str, ...] = ()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.rows: list[tuple] = []

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.HEADERS)


class JudgedQueriesModel(_Rows):
    """The judged set's queries with the readout's measure, its change and how many of each
    query's relevant memories are in the top k. A row: (id, text, tooltip, value, delta, found,
    found tip)."""

    HEADERS = ("query", "measure", "Δ", "found")

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.measure = "nDCG@10"

    def set_rows(self, tuning: Tuning, state: AppState) -> None:
        self.beginResetModel()
        self.rows = []
        judged, r = tuning.judged, tuning.readout
        self.measure = "measure" if r is None else measure_label(r.measure)
        if judged is not None:
            k = int(r.params.k) if r is not None else None
            for q in judged:
                text = q.query if q.query.strip() else f"like {q.like}"
                tip = f"{q.id}\n{text}\nasked as of {iso(q.as_of) + ' UTC' if q.as_of is not None else 'the store’s clock'}"
                tip += "".join(f"\n{what}: {', '.join(v)}" for what, v in (("agents", q.agents), ("kinds", q.kinds),
                                                                         ("tags", q.tags)) if v)
                value = delta = found = None
                found_tip = ""
                if r is not None:
                    value = r.now.per_query[q.id][r.measure]
                    delta = value - r.before.per_query[q.id][r.measure]
                    rel = len(q.relevant_ids)
                    got = round(r.now.per_query[q.id][f"recall@{k}"] * rel)
                    found = f"{got}/{rel}"
                    found_tip = f"{got} of its {rel} relevant memories are in the top {k}"
                self.rows.append((q.id, text, tip, value, delta, found, found_tip))
        self.endResetModel()

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation != Qt.Horizontal:
            return None
        if role == Qt.DisplayRole:
            return self.measure if section == 1 else self.HEADERS[section]
        if role == Qt.ToolTipRole:
            return ("The judged query (its text, or the memory it queries like)", "Its measure under the setting in "
                    "force", "The change against the readout's baseline", "Relevant memories in the top k")[section]
        return None

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        qid, text, tip, value, delta, found, found_tip = self.rows[index.row()]
        c = index.column()
        if role == Qt.DisplayRole:
            return (text, None if value is None else f"{value:.3f}", None if delta is None else _signed(delta), found)[c]
        if role == Qt.ToolTipRole:
            return plain_tooltip(tip) if c == 0 else (found_tip or None) if c == 3 else None
        if role == Qt.TextAlignmentRole and c > 0:
            return _RIGHT
        if role == Qt.ForegroundRole and c == 2 and delta is not None and abs(delta) >= 5e-4:
            t = style.theme()
            return QColor(t.up if delta > 0 else t.down)
        return None

    def query_id(self, row: int) -> str:
        return self.rows[row][0]

    def row_of(self, query_id: str | None) -> int | None:
        return next((i for i, r in enumerate(self.rows) if r[0] == query_id), None)


class NearMissModel(_Rows):
    """The chosen query's relevant memories outside the top k: rank, grade, what held each back.
    A row: (memory id, rank text, grade, reason, reason tip, preview)."""

    HEADERS = ("rank", "grade", "held back by", "memory")

    def set_rows(self, near, previews) -> None:
        self.beginResetModel()
        self.rows = []
        for h in near:
            if h.rank is None:
                reason, tip = "not a candidate", ("not among the query's candidates: filtered out, retired, or made "
                                                  "after the moment it is asked")
            elif h.component is None:
                reason, tip = "", f"rank {h.rank}"
            else:
                mine, cut = h.contributions.get(h.component, 0.0), h.cutoff.get(h.component, 0.0)
                reason = f"{h.component} {mine:.2f} vs {cut:.2f}"
                tip = ("weighted components, this memory → the k-th result:\n" + "\n".join(
                    f"{c}: {h.contributions[c]:.3g} → {h.cutoff[c]:.3g}" for c in h.contributions))
            self.rows.append((h.memory_id, "—" if h.rank is None else str(h.rank), GRADE_MARKS[h.grade], reason, tip,
                              previews(h.memory_id)))
        self.endResetModel()

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation == Qt.Horizontal and role == Qt.DisplayRole:
            return self.HEADERS[section]
        if orientation == Qt.Horizontal and role == Qt.ToolTipRole:
            return ("Its rank among all the query's candidates", "Your grade: ★★ highly relevant, ★ relevant",
                    "The component where it falls furthest short of the k-th result (weighted, as the score adds "
                    "them)", "Click to select it in every panel")[section]
        return None

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        mid, rank, grade, reason, tip, preview = self.rows[index.row()]
        c = index.column()
        if role == Qt.DisplayRole:
            return (rank, grade, reason, preview)[c]
        if role == Qt.ToolTipRole:
            return plain_tooltip(tip) if c == 2 else plain_tooltip(f"{mid}\n{preview}") if c == 3 else None
        if role == Qt.TextAlignmentRole and c == 0:
            return _RIGHT
        return None


class GridPicture(QWidget):
    """The measure over a grid of two parameters as a heatmap with a colour bar, the current
    setting and the fitted one marked. point_chosen(x value, y value): a click on the picture."""

    point_chosen = Signal(float, float)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.grid = None
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        vb = self.plot.getViewBox()
        vb.setMouseEnabled(False, False)
        self.image = pg.ImageItem()
        self.plot.addItem(self.image)
        self.bar = pg.ColorBarItem(values=(0.0, 1.0), width=14, interactive=False)
        self.bar.setImageItem(self.image, insert_in=self.plot.getPlotItem())
        self.bar.axis.enableAutoSIPrefix(False)
        self.current = pg.ScatterPlotItem(size=13, symbol="o")
        self.fitted = pg.ScatterPlotItem(size=17, symbol="star")
        self.current.setZValue(10)
        self.fitted.setZValue(11)
        self.plot.addItem(self.current)
        self.plot.addItem(self.fitted)
        self.current.setToolTip("The setting in force")
        self.fitted.setToolTip("The last fit's parameters")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.plot)
        self.plot.scene().sigMouseClicked.connect(self._clicked)
        self.theme: style.Theme | None = None
        self.restyle()

    def restyle(self) -> None:
        t = self.theme = style.theme()
        self.plot.setBackground(t.paper)
        for name in ("left", "bottom"):
            ax = self.plot.getAxis(name)
            ax.setPen(t.axis)
            ax.setTextPen(t.ink)
        self.bar.axis.setPen(t.axis)
        self.bar.axis.setTextPen(t.ink)
        cmap = pg.ColorMap(np.linspace(0.0, 1.0, len(t.ramp)), [QColor(c) for c in t.ramp])
        self.bar.setColorMap(cmap)
        self.current.setBrush(pg.mkBrush(style.color(t.query)))
        self.current.setPen(pg.mkPen(style.color(t.paper), width=2))
        self.fitted.setBrush(pg.mkBrush(style.color(t.paper)))   # light on the dark end, ringed on the light one
        self.fitted.setPen(pg.mkPen(style.color(t.ink), width=1.5))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.PaletteChange, QEvent.ApplicationPaletteChange) and style.theme() != self.theme:
            self.restyle()

    def show_grid(self, grid, params, fitted: dict | None) -> None:
        """Draw `grid` (or nothing), the current point of `params` and the fitted one."""
        self.grid = grid
        if grid is None:
            self.image.clear()
            self.current.setData([], [])
            self.fitted.setData([], [])
            return
        xs = np.array([grid.x.position(v) for v in grid.x.values])
        ys = np.array([grid.y.position(v) for v in grid.y.values])
        dx = (xs[-1] - xs[0]) / max(len(xs) - 1, 1)
        dy = (ys[-1] - ys[0]) / max(len(ys) - 1, 1)
        values = np.asarray(grid.values, float)
        lo, hi = float(np.nanmin(values)), float(np.nanmax(values))
        if hi - lo < 1e-9:
            lo, hi = lo - 0.01, hi + 0.01
        self.image.setImage(values.T, autoLevels=False)   # ImageItem's first axis is x
        self.image.setRect(QRectF(xs[0] - dx / 2, ys[0] - dy / 2, xs[-1] - xs[0] + dx, ys[-1] - ys[0] + dy))
        self.bar.setLevels((lo, hi))
        self.bar.axis.setLabel(measure_label(grid.measure))
        for name, axis in (("bottom", grid.x), ("left", grid.y)):
            ax = self.plot.getAxis(name)
            ax.setLabel(axis.label)
            if axis.knob is not None:   # a log scale: ticks at round positions, labelled with values
                ticks = [(axis.position(v), f"{v:.4g}") for v in axis.values[::max(1, len(axis.values) // 4)]]
                ax.setTicks([ticks])
            else:
                ax.setTicks(None)
        self.plot.setXRange(xs[0] - dx / 2, xs[-1] + dx / 2, padding=0.02)   # room for a mark on an edge
        self.plot.setYRange(ys[0] - dy / 2, ys[-1] + dy / 2, padding=0.03)
        self.move_marks(params, fitted)

    def move_marks(self, params, fitted: dict | None) -> None:
        g = self.grid
        if g is None:
            return
        x, y = getattr(params, g.x.name), getattr(params, g.y.name)
        self.current.setData([g.x.position(x)], [g.y.position(y)])
        if fitted is not None and g.x.name in fitted and g.y.name in fitted:
            self.fitted.setData([g.x.position(fitted[g.x.name])], [g.y.position(fitted[g.y.name])])
        else:
            self.fitted.setData([], [])

    def value_at(self, i: int, j: int) -> float:
        return float(self.grid.values[j, i])

    def _clicked(self, event) -> None:
        g = self.grid
        if g is None or event.button() != Qt.LeftButton:
            return
        p = self.plot.getViewBox().mapSceneToView(event.scenePos())
        xs = np.array([g.x.position(v) for v in g.x.values])
        ys = np.array([g.y.position(v) for v in g.y.values])
        if not (xs[0] - 1e-9 <= p.x() <= xs[-1] + 1e-9 and ys[0] - 1e-9 <= p.y() <= ys[-1] + 1e-9):
            return
        i, j = int(np.abs(xs - p.x()).argmin()), int(np.abs(ys - p.y()).argmin())
        self.point_chosen.emit(float(g.x.values[i]), float(g.y.values[j]))


class MetricCell(QWidget):
    """One measure of the readout: its name above its value (large) and its change against
    the baseline."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.name = QLabel()
        self.value = QLabel("—")
        self.delta = style.ThemeLabel("")
        big = QFont(self.value.font())
        big.setPointSizeF(big.pointSizeF() * 1.3)
        big.setBold(True)
        self.value.setFont(big)
        for w in (self.name, self.value, self.delta):
            w.setTextFormat(Qt.PlainText)
        self.name.setAlignment(Qt.AlignHCenter)
        self.value.setAlignment(Qt.AlignRight | Qt.AlignBaseline)
        self.delta.setAlignment(Qt.AlignLeft | Qt.AlignBaseline)
        lay = QGridLayout(self)
        lay.setContentsMargins(2, 0, 2, 0)
        lay.setHorizontalSpacing(4)
        lay.setVerticalSpacing(0)
        lay.addWidget(self.name, 0, 0, 1, 2)
        lay.addWidget(self.value, 1, 0, Qt.AlignRight | Qt.AlignBaseline)
        lay.addWidget(self.delta, 1, 1, Qt.AlignLeft | Qt.AlignBaseline)
        lay.setColumnStretch(0, 1)
        lay.setColumnStretch(1, 1)
        for w in (self.name, self.value, self.delta):   # a narrow dock cuts them rather than growing
            w.setMinimumWidth(0)
            w.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)

    def set_value(self, name: str, value: float | None, delta: float | None) -> None:
        self.name.setText(measure_label(name))
        self.value.setText("—" if value is None else f"{value:.3f}")
        d = _signed(delta, short=True) if delta is not None else ""
        self.delta.setText(d or ("=" if delta is not None else ""))
        self.delta.setToolTip("" if delta is None else f"change against the baseline: {delta:+.4f}")
        self.delta.set_pick(None if not d else (lambda t: t.up) if delta > 0 else (lambda t: t.down))


class ReadoutStrip(QFrame):
    """The live quality readout where the sliders are: the judged set's recall@k, nDCG@10, MRR
    and P@k under the setting in force, each with its change against the readout's baseline.
    Hidden while no judged set is measured."""

    def __init__(self, state: AppState, tuning: Tuning, parent=None) -> None:
        super().__init__(parent)
        self.state, self.tuning = state, tuning
        self.setFrameShape(QFrame.StyledPanel)
        self.caption = QLabel()
        self.caption.setTextFormat(Qt.PlainText)
        self.caption.setMaximumWidth(CAPTION_WIDTH)
        self.cells = [MetricCell() for _ in range(4)]
        lay = QHBoxLayout(self)
        lay.setContentsMargins(4, 2, 4, 2)
        lay.setSpacing(6)
        lay.addWidget(self.caption)
        for c in self.cells:
            lay.addWidget(c, 1)
        tuning.readout_changed.connect(self.refresh)
        tuning.sets_changed.connect(self.refresh)
        tuning.status_changed.connect(lambda _t: self.refresh())
        self.refresh()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.caption.setVisible(self.width() >= STRIP_CAPTION_FROM)   # a narrow dock keeps the numbers whole

    def refresh(self) -> None:
        t, r = self.tuning, self.tuning.readout
        self.setVisible(t.set_name is not None)
        if t.set_name is None:
            return
        n = len(t.judged) if t.judged is not None else 0
        fm = self.caption.fontMetrics()
        self.caption.setText(fm.elidedText(t.set_name, Qt.ElideRight, CAPTION_WIDTH) + "\n"
                             + fm.elidedText(count(n, "query"), Qt.ElideRight, CAPTION_WIDTH))
        base = "" if r is None else t.baseline_text(r.params)
        self.setToolTip(plain_tooltip(f"The judged set “{t.set_name}” ({count(n, 'query')}) measured under the "
                                      f"setting in force" + (f"; the changes are against {base}" if base else "")
                                      + (f"\n{t.status}" if t.status else "")))
        k = int(self.state.params.k)
        if r is None:
            for c, fam in zip(self.cells, FAMILIES):
                c.set_value(measure_name(fam, k), None, None)
            return
        for c, name in zip(self.cells, r.now.measures):
            c.set_value(name, r.now.means[name], r.now.means[name] - r.before.means[name])


class JudgedPanel(QWidget):
    """See the module docstring."""

    context_requested = Signal(list, QPoint)
    set_chosen = Signal(object)
    query_chosen = Signal(str)
    memory_chosen = Signal(str)
    measure_chosen = Signal(str)
    axes_chosen = Signal(str, str)
    point_chosen = Signal(dict)
    picture_shown = Signal(bool)

    def __init__(self, state: AppState, tuning: Tuning, actions: dict[str, QAction], parent=None) -> None:
        super().__init__(parent)
        self.state, self.tuning, self.actions = state, tuning, actions
        self._loading = False
        self._choices_for = None   # (k, preset, axes) the measure and axis lists were made for
        self.sets = QComboBox()
        self.sets.setMinimumContentsLength(10)
        self.sets.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.sets.setToolTip("The judged set the setting in force is measured against")
        self.fit_button = QToolButton()
        self.fit_button.setDefaultAction(actions["fit"])
        self.fit_button.setToolButtonStyle(Qt.ToolButtonTextOnly)
        self.more = QToolButton()
        self.more.setText("Set ▾")
        self.more.setToolTip("Import, export or delete judged sets and queries")
        self.more.setPopupMode(QToolButton.InstantPopup)
        menu = QMenu(self.more)
        for key in ("import", "import_trec", "export", None, "delete_query", "delete_set"):
            menu.addSeparator() if key is None else menu.addAction(actions[key])
        self.more.setMenu(menu)
        self.pin_button = QToolButton()
        self.pin_button.setDefaultAction(actions["pin"])
        self.pin_button.setText("Pin baseline")
        self.pin_button.setToolButtonStyle(Qt.ToolButtonTextOnly)
        top = QHBoxLayout()
        top.addWidget(QLabel("judged set"))
        top.addWidget(self.sets, 1)
        top.addWidget(self.more)
        top.addWidget(self.pin_button)
        top.addWidget(self.fit_button)

        # the readout of the measure per query (the four means: ReadoutStrip, under the sliders)
        self.measure = QComboBox()
        self.measure.setToolTip("The measure per query, of the wins and losses and of the picture")
        self.compare = QLabel()
        self.compare.setTextFormat(Qt.PlainText)
        self.compare.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)   # never widening the dock:
        self.compare.setWordWrap(True)                                            # on two lines where narrow
        line = QHBoxLayout()
        line.addWidget(self.measure)
        line.addWidget(self.compare, 1)
        self.status = QLabel()
        self.status.setTextFormat(Qt.PlainText)
        self.status.setWordWrap(True)

        # queries and near misses
        self.queries = JudgedQueriesModel(self)
        self.query_view = self._table(self.queries)
        qh = self.query_view.horizontalHeader()
        qh.setSectionResizeMode(0, QHeaderView.Stretch)
        for c, w in ((1, 70), (2, 58), (3, 46)):
            qh.setSectionResizeMode(c, QHeaderView.Interactive)
            self.query_view.setColumnWidth(c, w)
        qh.setStretchLastSection(False)
        self.near = NearMissModel(self)
        self.near_view = self._table(self.near)
        nh = self.near_view.horizontalHeader()
        for c, w in ((0, 44), (1, 40), (2, 150)):
            self.near_view.setColumnWidth(c, w)
        nh.setStretchLastSection(True)
        self.near_title = QLabel()
        self.near_title.setTextFormat(Qt.PlainText)
        self.near_title.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        near_box = QWidget()
        nl = QVBoxLayout(near_box)
        nl.setContentsMargins(0, 2, 0, 0)
        nl.addWidget(self.near_title)
        nl.addWidget(self.near_view, 1)
        split = QSplitter(Qt.Vertical)
        split.addWidget(self.query_view)
        split.addWidget(near_box)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)

        # the picture
        self.picture = GridPicture()
        self.picture.plot.setMinimumHeight(60)
        for v in (self.query_view, self.near_view):
            v.setMinimumHeight(48)
        self.x_axis, self.y_axis = QComboBox(), QComboBox()
        self.picture_note = QLabel()
        self.picture_note.setTextFormat(Qt.PlainText)
        self.picture_note.setWordWrap(True)
        self.picture_note.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        axes = QHBoxLayout()
        axes.addWidget(QLabel("x"))
        axes.addWidget(self.x_axis)
        axes.addWidget(QLabel("y"))
        axes.addWidget(self.y_axis)
        axes.addStretch(1)
        pic = QWidget()
        pl = QVBoxLayout(pic)
        pl.setContentsMargins(0, 2, 0, 0)
        pl.addLayout(axes)
        pl.addWidget(self.picture, 1)
        pl.addWidget(self.picture_note)

        self.tabs = QTabWidget()
        self.tabs.addTab(split, "Queries")
        self.tabs.addTab(pic, "Picture")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.setSpacing(3)
        lay.addLayout(top)
        lay.addLayout(line)
        lay.addWidget(self.status)
        lay.addWidget(self.tabs, 1)

        self.tabs.currentChanged.connect(lambda i: self.picture_shown.emit(i == 1))
        self.sets.currentIndexChanged.connect(self._set_picked)
        self.measure.currentIndexChanged.connect(self._measure_picked)
        self.x_axis.currentIndexChanged.connect(self._axes_picked)
        self.y_axis.currentIndexChanged.connect(self._axes_picked)
        self.query_view.clicked.connect(lambda ix: self.query_chosen.emit(self.queries.query_id(ix.row())))
        self.query_view.activated.connect(lambda ix: self.query_chosen.emit(self.queries.query_id(ix.row())))
        self.query_view.setContextMenuPolicy(Qt.CustomContextMenu)
        self.query_view.customContextMenuRequested.connect(self._query_menu)
        self.near_view.clicked.connect(lambda ix: self.memory_chosen.emit(self.near.rows[ix.row()][0]))
        self.near_view.setContextMenuPolicy(Qt.CustomContextMenu)
        self.near_view.customContextMenuRequested.connect(self._near_menu)
        self.picture.point_chosen.connect(self._point_picked)
        tuning.sets_changed.connect(self._show_sets)
        tuning.readout_changed.connect(self._show_readout)
        tuning.grid_changed.connect(self._show_grid)
        tuning.status_changed.connect(lambda _t: self._show_readout())
        state.params_changed.connect(lambda p, s: self._fill_choices(p))
        self._fill_choices(state.params)
        self._show_sets()
        self._show_readout()

    @staticmethod
    def _table(model) -> QTableView:
        v = QTableView()
        v.setModel(model)
        v.setSelectionBehavior(QAbstractItemView.SelectRows)
        v.setSelectionMode(QAbstractItemView.SingleSelection)
        v.verticalHeader().setVisible(False)
        v.verticalHeader().setDefaultSectionSize(22)
        v.setWordWrap(False)
        v.horizontalHeader().setMinimumSectionSize(24)
        return v

    # ------------------------------------------------------------ what the user picks
    def _set_picked(self, i: int) -> None:
        if not self._loading:
            self.set_chosen.emit(self.sets.itemData(i) if i >= 0 else None)

    def _measure_picked(self, i: int) -> None:
        if not self._loading and i >= 0:
            self.measure_chosen.emit(self.measure.itemData(i))

    def _axes_picked(self) -> None:
        if not self._loading and self.x_axis.currentIndex() >= 0 and self.y_axis.currentIndex() >= 0:
            self.axes_chosen.emit(self.x_axis.currentData(), self.y_axis.currentData())

    def _point_picked(self, x: float, y: float) -> None:
        g = self.tuning.grid
        if g is not None:
            self.point_chosen.emit({g.x.name: x, g.y.name: y})

    def _query_menu(self, pos) -> None:
        ix = self.query_view.indexAt(pos)
        if not ix.isValid():
            return
        self.query_chosen.emit(self.queries.query_id(ix.row()))
        menu = QMenu(self)
        menu.addAction(self.actions["delete_query"])
        menu.addAction(self.actions["export"])
        menu.popup(self.query_view.viewport().mapToGlobal(pos))

    def _near_menu(self, pos) -> None:
        ix = self.near_view.indexAt(pos)
        if ix.isValid():
            mid = self.near.rows[ix.row()][0]
            self.memory_chosen.emit(mid)
            self.context_requested.emit([mid], self.near_view.viewport().mapToGlobal(pos))

    # ------------------------------------------------------------ showing the model
    def _fill_choices(self, params) -> None:
        """The measure list (k is the setting's) and the picture's axes (the preset's), made
        again when k or the preset changes (not at each slider step)."""
        key = (int(params.k), params.preset, self.tuning.axes_for(params))
        if key == self._choices_for:
            return
        self._choices_for = key
        self._loading = True
        try:
            k = int(params.k)
            self.measure.clear()
            for fam in FAMILIES:
                self.measure.addItem(measure_label(measure_name(fam, k)), fam)
            self.measure.setCurrentIndex(max(0, self.measure.findData(self.tuning.family)))
            axes = self.tuning.axes_for(params)
            for box, want in ((self.x_axis, axes[0] if axes else None), (self.y_axis, axes[1] if axes else None)):
                box.clear()
                for name in axis_choices(params.preset):
                    box.addItem(AXIS_NAMES.get(name, name), name)
                box.setCurrentIndex(max(0, box.findData(want)))
        finally:
            self._loading = False

    def _show_sets(self) -> None:
        self._loading = True
        try:
            self.sets.clear()
            for name, n in self.tuning.sets:
                self.sets.addItem(f"{name} ({n} quer{'y' if n == 1 else 'ies'})", name)
            i = self.sets.findData(self.tuning.set_name)
            self.sets.setCurrentIndex(i)
            self.sets.setEnabled(bool(self.tuning.sets))
            if not self.tuning.sets:
                self.sets.setPlaceholderText("none yet")
        finally:
            self._loading = False

    def _show_readout(self) -> None:
        t, r = self.tuning, self.tuning.readout
        if self.sets.currentData() != t.set_name:
            self._show_sets()
        self.queries.set_rows(t, self.state)
        self.query_view.horizontalHeader().setSectionResizeMode(0, QHeaderView.Stretch)
        row = self.queries.row_of(t.query_id)
        if row is not None:
            self.query_view.selectRow(row)
        if r is None:
            self.compare.setText("")
            self.status.setText(t.status or ("Preparing …" if t.judged is not None else ""))
            self.status.setVisible(bool(self.status.text()))
            self.near.set_rows((), self._preview)
            self.near_title.setText("Near misses: choose a query")
            return
        w = r.wins
        base = t.baseline_text(r.params)
        mean, was = r.now.means[r.measure], r.before.means[r.measure]
        self.compare.setText(f"mean {mean:.3f} {_signed(mean - was) or '='} · {w.better} better · {w.worse} worse · "
                             f"{w.same} same vs {base}")
        self.compare.setToolTip(plain_tooltip(f"Per judged query, {measure_label(r.measure)} under the setting in "
                                              f"force ({describe(r.params)}) against {base} ({describe(r.baseline)})"))
        self.status.setText(t.status)
        self.status.setVisible(bool(t.status))
        self.near.set_rows(r.near, self._preview)
        k = int(r.params.k)
        if r.query_id is None:
            self.near_title.setText("Near misses (relevant memories outside the top k): choose a query")
        elif not r.near:
            self.near_title.setText(f"{r.query_id}: every relevant memory is in the top {k}.")
        else:
            self.near_title.setText(f"{r.query_id}: {len(r.near)} relevant outside the top {k} (click: select it)")
        self.picture.move_marks(self.state.params, t.fitted_point(self.state.params))

    def _show_grid(self) -> None:
        t, params = self.tuning, self.state.params
        axes = t.axes_for(params)
        g = t.grid
        if axes is None:
            self.picture.show_grid(None, params, None)
            self.picture_note.setText(f"The {params.preset} preset has no two weights to draw.")
            return
        if g is None:
            self.picture.show_grid(None, params, None)
            self.picture_note.setText("Drawing …" if t.evaluator is not None else "")
            return
        if g is not self.picture.grid:
            self.picture.show_grid(g, params, t.fitted_point(params))
        else:
            self.picture.move_marks(params, t.fitted_point(params))
        others = [f for f in axis_choices(params.preset) if f not in (g.x.name, g.y.name)]
        at = describe(g.params, others) if others else ""
        fitted = t.fitted_point(params)
        self.picture_note.setText(
            f"{measure_label(g.measure)} over {g.x.label} × {g.y.label}" + (f" at {at}" if at else "")
            + f"; {len(g.x.values)} × {len(g.y.values)} settings. ● the setting in force"
            + ("  ★ the last fit" if fitted else "") + " · click a point to try it")

    def _preview(self, memory_id: str) -> str:
        data = self.state.data
        i = None if data is None else data.arrays.index_of(memory_id)
        return "(not in the store)" if i is None else str(data.previews[i])


class MarksBar(QWidget):
    """The mark buttons under the query's results (grade the selected results 2, 1, 0 or clear),
    what is marked for the query on screen and whether it is saved, and Save to set. Other
    queries with unsaved marks are listed in a menu (query_requested(Query) runs one again)."""

    query_requested = Signal(object)

    def __init__(self, book: MarkBook, actions: dict[str, QAction], parent=None) -> None:
        super().__init__(parent)
        self.book = book
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(3)
        lay.addWidget(QLabel("grade"))
        self.buttons = {}
        for key, text in (("mark2", "★★ 2"), ("mark1", "★ 1"), ("mark0", "✕ 0"), ("unmark", "clear")):
            b = QToolButton()
            b.setText(text)
            act = actions[key]
            b.setToolTip(act.toolTip())
            b.clicked.connect(act.trigger)
            act.changed.connect(lambda b=b, a=act: (b.setEnabled(a.isEnabled()), b.setToolTip(a.toolTip())))
            b.setEnabled(act.isEnabled())
            self.buttons[key] = b
            lay.addWidget(b)
        self.note = style.ThemeLabel("")
        self.note.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)   # cut, never widening the dock
        self.others = QToolButton()
        self.others.setPopupMode(QToolButton.InstantPopup)
        self.others.setMenu(QMenu(self.others))
        self.others.menu().aboutToShow.connect(self._fill_others)
        self.save = QToolButton()
        self.save.setDefaultAction(actions["save"])
        self.save.setText("Save to set…")
        self.save.setToolButtonStyle(Qt.ToolButtonTextOnly)
        actions["save"].changed.connect(lambda: self.save.setText("Save to set…"))
        lay.addWidget(self.note, 1)
        lay.addWidget(self.others)
        lay.addWidget(self.save)
        book.changed.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        m = self.book.marks
        if m is None or not m.grades:
            text, pick = ("" if m is None and self.book.current is None else "nothing marked"), None
        elif m.dirty:
            text, pick = f"{m.describe()} · not saved", (lambda t: t.alarm)
        else:
            text, pick = f"{m.describe()} · saved in {m.set_name} as {m.query_id}", None
        self.note.setText(text)
        self.note.setToolTip(plain_tooltip(text))
        self.note.set_pick(pick)
        others = [u for u in self.book.unsaved() if u.query != self.book.current]
        self.others.setText(f"{len(others)} other{'s' if len(others) != 1 else ''} not saved ▾")
        self.others.setVisible(bool(others))

    def _fill_others(self) -> None:
        menu = self.others.menu()
        menu.clear()
        for m in self.book.unsaved():
            if m.query == self.book.current:
                continue
            act = menu.addAction(f"{m.title()[:60]} — {m.describe()}")
            act.triggered.connect(lambda _=False, q=m.query: self.query_requested.emit(q))


__all__ = ["GridPicture", "JudgedPanel", "JudgedQueriesModel", "MarksBar", "NearMissModel", "ReadoutStrip"]
