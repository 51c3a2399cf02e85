"""Query panel: live retrieval through memviz.retrieval's Engine (retrieval/engine.py).

Embedding the query (Engine.set_query) is the costly step and runs once per query text;
every slider move only re-scores (Engine.score). Both run as "engine"-lane jobs (one
thread, so the engine is never used concurrently); a new setting cancels the pending
one, so a dragged slider yields a stream of fresh rankings and never a queue of stale
ones. The results table shows rank, rank change against a baseline, score and a stacked bar
of the weighted components (ResultBarDelegate). The baseline is the ranking before the
current adjustment began (a burst of setting changes), or the one the user pinned; entries
("in") and exits (listed under the table) count as changes too.

After any write (the agent's or the user's) the current query runs again on the new data,
same text or example, same setting; memories written since the query was run are marked
"★ new" when they enter the results.

The retrieval parameters live in the AppState (`state.params`), not in the widgets: an edit
of a widget writes them there, and the widgets follow any change made elsewhere (two-way
binding); the ranking follows `state.params_changed`, whoever changed them.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QEvent, QItemSelectionModel, QModelIndex, QPoint, QRect, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSlider,
    QSpinBox,
    QStyledItemDelegate,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from memviz.app.plain_text import plain_tooltip
from memviz.app.workers import Workers
from memviz.retrieval import PRESETS, Engine, Result, preset_params
from memviz.session.live import RERANK_S, merged
from memviz.session.state import AppState, StoreData
from memviz.store import iso
from memviz.words import count

COMPONENT_COLORS = {"relevance": "#4C78A8", "recency": "#F58518", "importance": "#54A24B"}
OTHER_COLORS = ["#B279A2", "#72B7B2", "#EECA3B", "#9D755D"]
RESULT_COLUMNS = ["rank", "Δ", "score", "why", "kind", "agent", "content"]
#: starting widths (px) of every column but the content, which takes the rest of the view
RESULT_WIDTHS = {"rank": 32, "Δ": 34, "score": 54, "why": 80, "kind": 66, "agent": 74}
COMPACT_WIDTHS = {"rank": 28, "Δ": 28, "score": 52, "why": 50, "kind": 72, "agent": 62}
# a live refresh runs the query again in at most this share of the time (its own cost paces it):
# a 5 ms int8 query follows every refresh, a 0.25 s Generative Agents one runs every ~2 s
RERUN_SHARE = 0.1
COMPACT_BELOW = 560   # px of results view: narrower than this, the columns beside the content shrink
HEADER_TIPS = {"why": "The score's weighted components as a stacked bar (relevance, recency, importance); "
                      "hover a bar for its numbers", "Δ": "Change of rank since the previous setting"}
WEIGHT_MAX = 5.0      # slider range of α, β, γ
SLIDER_STEPS = 500
DEBOUNCE_MS = 20      # coalesce slider moves; the engine lane drops stale settings anyway
ADJUST_IDLE_MS = 1500  # setting changes closer than this are one adjustment (one baseline)
_TIP_COLUMNS = {RESULT_COLUMNS.index(c) for c in ("content", "agent", "kind")}
_RIGHT_COLUMNS = {RESULT_COLUMNS.index(c) for c in ("rank", "score", "Δ")}
_DELTA_COLUMN = RESULT_COLUMNS.index("Δ")
_RIGHT = int(Qt.AlignRight | Qt.AlignVCenter)


@dataclasses.dataclass(frozen=True)
class _Ranked:
    """The last whole ranking, what a live refresh's merge (session.live.query.merged) starts from."""

    result: Result
    ref: float                       # the time its recency was measured from
    clock_at: float | None           # the store clock's fixed time then (None: the wall clock)
    query_vector: np.ndarray | None
    at: float                        # time.monotonic() when it was ranked (RERANK_S)


def component_color(name: str, i: int) -> QColor:
    return QColor(COMPONENT_COLORS.get(name, OTHER_COLORS[i % len(OTHER_COLORS)]))


class ResultsModel(QAbstractTableModel):
    """The ranking on screen. Its cells are formatted once per result (`data` only looks them
    up: a repaint asks ~500 times); a result with as many rows as the last one is put in place
    (dataChanged: no reset, no relayout), as every scrubber step and slider move gives."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.result = None
        self.data_: StoreData | None = None
        self.delta: list[str] = []
        self.exits: list[tuple[str, int]] = []  # (id, rank in the baseline) of memories that left the results
        self.components: list[str] = []
        self.bar_max = 1.0
        self._cells: list[list] = []            # per row: the DisplayRole of each column
        self._delta_colors: list = []           # per row: the Δ column's colour (None: default)

    def set_result(self, result, data: StoreData | None, previous: dict[str, int] | None,
                   fresh: set[str] = frozenset()) -> None:
        """`previous`: the baseline's ranks (None: nothing to compare); `fresh`: ids of memories
        written since the query was run (marked "★ new")."""
        before = self.rowCount()
        in_place = result is not None and before > 0 and len(result.ids) == before
        if not in_place:
            self.beginResetModel()
        self.result, self.data_ = result, data
        self.delta, self.exits = [], []
        self.components = [] if result is None else list(result.weighted)
        if result is not None:
            for rank, mid in enumerate(result.ids, 1):
                old = None if previous is None else previous.get(mid)
                self.delta.append("★ new" if mid in fresh else "" if previous is None else "in" if old is None else
                                  "" if old == rank else (f"▲{old - rank}" if old > rank else f"▼{rank - old}"))
            if previous is not None:
                now = set(result.ids)
                self.exits = sorted(((m, r) for m, r in previous.items() if m not in now), key=lambda x: x[1])
            totals = sum(np.clip(np.asarray(v, float), 0, None) for v in result.weighted.values()) \
                if result.weighted else np.zeros(0)
            self.bar_max = float(np.max(totals)) if len(result.ids) and np.size(totals) else 1.0
            self.bar_max = self.bar_max if self.bar_max > 0 else 1.0
        self._format()
        if in_place:
            self.dataChanged.emit(self.index(0, 0), self.index(before - 1, len(RESULT_COLUMNS) - 1))
        else:
            self.endResetModel()

    def _format(self) -> None:
        self._cells, self._delta_colors = [], []
        if self.result is None:
            return
        a, previews = self.data_.arrays, self.data_.previews
        for i, r in enumerate(np.asarray(self.result.rows, np.int64).tolist()):
            self._cells.append([str(i + 1), self.delta[i], f"{float(self.result.score[i]):.4f}", None, a.kind[r],
                                a.agent[r], previews[r]])
            d = self.delta[i]
            self._delta_colors.append(None if not d else QColor("#2a7d2a") if d.startswith("▲") else
                                      QColor("#b03030") if d.startswith("▼") else QColor("#1f5fbf"))

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() or self.result is None else len(self.result.ids)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(RESULT_COLUMNS)

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation == Qt.Horizontal and role == Qt.DisplayRole:
            return RESULT_COLUMNS[section]
        if orientation == Qt.Horizontal and role == Qt.ToolTipRole:
            return HEADER_TIPS.get(RESULT_COLUMNS[section])
        return None

    def row_of(self, i: int) -> int:
        return int(self.result.rows[i])

    def contributions(self, i: int) -> list[tuple[str, float]]:
        return [(k, float(v[i])) for k, v in self.result.weighted.items()]

    def data(self, index, role=Qt.DisplayRole):
        if not self._cells or not index.isValid():
            return None
        if role == Qt.DisplayRole:
            return self._cells[index.row()][index.column()]
        if role == Qt.ToolTipRole and index.column() in _TIP_COLUMNS:
            return plain_tooltip(self._cells[index.row()][index.column()])  # the whole text where the column cuts it
        if role == Qt.ForegroundRole and index.column() == _DELTA_COLUMN:
            return self._delta_colors[index.row()]
        if role == Qt.TextAlignmentRole and index.column() in _RIGHT_COLUMNS:
            return _RIGHT
        return None

    def records(self) -> list[dict]:
        """The results as plain dicts (export)."""
        out = []
        if self.result is None:
            return out
        for i, mid in enumerate(self.result.ids):
            rec = {"rank": i + 1, "id": mid, "score": float(self.result.score[i]),
                   "kind": self.data_.arrays.kind[self.row_of(i)], "agent": self.data_.arrays.agent[self.row_of(i)]}
            for k, v in self.result.raw.items():
                rec[k] = float(v[i])
            for k, v in self.result.weighted.items():
                rec[f"{k}_weighted"] = float(v[i])
            rec["content"] = self.data_.previews[self.row_of(i)]
            out.append(rec)
        return out


class ResultBarDelegate(QStyledItemDelegate):
    """A stacked bar of the weighted contributions; its length is the score relative to the top one."""

    def paint(self, painter: QPainter, option, index) -> None:
        model: ResultsModel = index.model()
        super().paint(painter, option, index)
        if model.result is None:
            return
        rect = option.rect.adjusted(3, 4, -3, -4)
        x = rect.left()
        painter.save()
        painter.setPen(Qt.NoPen)
        for j, (name, v) in enumerate(model.contributions(index.row())):
            w = int(round(max(v, 0.0) / model.bar_max * rect.width()))
            if w > 0:
                painter.setBrush(component_color(name, j))
                painter.drawRect(QRect(x, rect.top(), w, rect.height()))
                x += w
        painter.restore()

    def helpEvent(self, event, view, option, index):  # tooltip: the numbers behind the bar
        model: ResultsModel = index.model()
        if model.result is not None:
            i = index.row()
            parts = [f"{k}: raw {float(model.result.raw.get(k, [np.nan] * (i + 1))[i]):.3f} → "
                     f"weighted {v:.3f}" for k, v in model.contributions(i)]
            from PySide6.QtWidgets import QToolTip
            QToolTip.showText(event.globalPos(), "\n".join(parts), view)  # numbers only: plain text
            return True
        return super().helpEvent(event, view, option, index)


class WeightControl(QWidget):
    """A slider and a spin box bound both ways to one float."""

    changed = Signal(float)

    def __init__(self, maximum: float = WEIGHT_MAX, parent=None) -> None:
        super().__init__(parent)
        self.maximum = maximum
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setRange(0, SLIDER_STEPS)
        self.spin = QDoubleSpinBox(decimals=2, singleStep=0.05, maximum=maximum * 4)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.slider, 1)
        lay.addWidget(self.spin)
        self.slider.valueChanged.connect(self._from_slider)
        self.spin.valueChanged.connect(self._from_spin)

    def value(self) -> float:
        return float(self.spin.value())

    def set_value(self, v: float, emit: bool = False) -> None:
        self.spin.blockSignals(True)
        self.slider.blockSignals(True)
        self.spin.setValue(v)
        self.slider.setValue(int(round(min(v, self.maximum) / self.maximum * SLIDER_STEPS)))
        self.spin.blockSignals(False)
        self.slider.blockSignals(False)
        if emit:
            self.changed.emit(v)

    def _from_slider(self, pos: int) -> None:
        v = pos / SLIDER_STEPS * self.maximum
        self.spin.blockSignals(True)
        self.spin.setValue(v)
        self.spin.blockSignals(False)
        self.changed.emit(self.value())

    def _from_spin(self, v: float) -> None:
        self.slider.blockSignals(True)
        self.slider.setValue(int(round(min(v, self.maximum) / self.maximum * SLIDER_STEPS)))
        self.slider.blockSignals(False)
        self.changed.emit(v)


class QueryPanel(QWidget):
    """ranked(result, seconds): a new ranking is shown (benchmarks and tests wait on it);
    `shown_params` is the setting it was made with."""

    context_requested = Signal(list, QPoint)
    ranked = Signal(object, float)

    def __init__(self, state: AppState, workers: Workers, parent=None) -> None:
        super().__init__(parent)
        self.state, self.workers = state, workers
        self.engine = None
        self.engine_for: StoreData | None = None
        self.query_key = None           # what the engine's cached query is (text / like id)
        self._ranks: dict[str, int] | None = None     # id -> rank of the ranking on screen
        self._baseline: dict[str, int] | None = None  # what Δ compares with (see the module docstring)
        self._pinned = False
        self._adjusting = False
        self._fresh: set[str] = set()                  # ids written since the query was run
        self.shown_params = None        # the Params of the ranking on screen
        self._loading = False
        self._submitted_at = 0.0
        self._asked = None              # the Params of the last ranking asked of the engine

        self.text = QLineEdit(placeholderText="Query text — Enter to run")
        self.text.setClearButtonEnabled(True)
        self.run_button = QPushButton("Run")
        self.like_button = QPushButton("Query by selected")
        self.like_button.setToolTip("Use the selected memory's own embedding as the query")
        self.preset = QComboBox()
        self.alpha, self.beta, self.gamma = WeightControl(), WeightControl(), WeightControl()
        self.tau = QDoubleSpinBox(decimals=1, minimum=0.1, maximum=1e6, suffix=" h", singleStep=1.0)
        self.decay = QDoubleSpinBox(decimals=4, minimum=0.0, maximum=1.0, singleStep=0.005)
        self.k = QSpinBox(minimum=1, maximum=10000, value=10)
        self.agent = QComboBox()
        self.kind = QComboBox()
        self.include_retired = QCheckBox("include retired")
        self.protected_only = QCheckBox("protected only")
        self.confidence_decay = QCheckBox("confidence decay")
        # the moment queried is the window's "as of" (its scrubber): shown here, set there
        self.as_of = QLabel("as of: now")
        self.as_of.setTextFormat(Qt.PlainText)
        self.as_of.setToolTip("The query scores the store as of the moment the window shows (the as-of bar)")
        self.message = QLabel()
        self.message.setTextFormat(Qt.PlainText)
        self.message.setWordWrap(True)
        self.results = ResultsModel(self)
        self.view = QTableView()
        self.view.setModel(self.results)
        self.view.setItemDelegateForColumn(RESULT_COLUMNS.index("why"), ResultBarDelegate(self.view))
        self.view.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.view.verticalHeader().setVisible(False)
        self.view.verticalHeader().setDefaultSectionSize(22)
        self.view.setWordWrap(False)
        h = self.view.horizontalHeader()
        h.setMinimumSectionSize(24)
        self._compact: bool | None = None
        self._size_columns(False)
        self.view.viewport().installEventFilter(self)
        h.setStretchLastSection(True)  # the content column takes what the others leave
        h.setSectionResizeMode(QHeaderView.Interactive)
        self.view.setColumnHidden(RESULT_COLUMNS.index("agent"), True)
        self.view.setContextMenuPolicy(Qt.CustomContextMenu)
        self.view.customContextMenuRequested.connect(
            lambda pos: self.context_requested.emit(self.state.selected_ids, self.view.viewport().mapToGlobal(pos)))
        self.legend = QLabel()
        self.legend.setTextFormat(Qt.PlainText)
        self.legend.setWordWrap(True)  # it carries the result's notes
        self.pin_button = QPushButton("Pin as baseline")
        self.pin_button.setCheckable(True)
        self.pin_button.setToolTip("Compare every later setting with the ranking shown now (Δ column, entries and "
                                   "exits); unpinned, Δ compares with the ranking before the current adjustment")
        self.pin_button.toggled.connect(self.pin_baseline)

        top = QHBoxLayout()
        top.addWidget(self.text, 1)
        top.addWidget(self.run_button)
        top.addWidget(self.like_button)
        grid = QGridLayout()
        grid.setHorizontalSpacing(6)
        grid.setVerticalSpacing(2)
        grid.addWidget(QLabel("preset"), 0, 0)
        grid.addWidget(self.preset, 0, 1, 1, 3)
        for r, (name, w) in enumerate((("α relevance", self.alpha), ("β recency", self.beta),
                                       ("γ importance", self.gamma)), 1):
            lab = QLabel(name)
            lab.setStyleSheet(f"color: {component_color(name.split()[1], 0).name()}; font-weight: bold;")
            grid.addWidget(lab, r, 0)
            grid.addWidget(w, r, 1, 1, 3)
        grid.addWidget(QLabel("τ recency"), 4, 0)
        grid.addWidget(self.tau, 4, 1)
        grid.addWidget(QLabel("decay"), 4, 2)
        grid.addWidget(self.decay, 4, 3)
        grid.addWidget(QLabel("k"), 5, 0)
        grid.addWidget(self.k, 5, 1)
        grid.addWidget(self.as_of, 5, 2, 1, 2)
        grid.addWidget(QLabel("agent"), 6, 0)
        grid.addWidget(self.agent, 6, 1)
        grid.addWidget(QLabel("kind"), 6, 2)
        grid.addWidget(self.kind, 6, 3)
        checks = QHBoxLayout()
        for c in (self.include_retired, self.protected_only, self.confidence_decay):
            checks.addWidget(c)
        checks.addStretch(1)
        grid.addLayout(checks, 7, 0, 1, 4)
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(3, 1)
        for combo in (self.preset, self.agent, self.kind):  # long agent/kind names must not widen the dock
            combo.setMinimumContentsLength(6)
            combo.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(top)
        lay.addLayout(grid)
        lay.addWidget(self.message)
        lay.addWidget(self.view, 1)
        foot = QHBoxLayout()
        foot.addWidget(self.legend, 1)
        foot.addWidget(self.pin_button)
        lay.addLayout(foot)

        self._score_timer = QTimer(self, singleShot=True, interval=DEBOUNCE_MS, timeout=self.rescore)
        self._text_timer = QTimer(self, singleShot=True, interval=500, timeout=self.run_query)
        self._rerun_timer = QTimer(self, singleShot=True, timeout=self._rerun)
        self._rerun_next = 0.0        # monotonic time before which a live rerun waits (RERUN_SHARE)
        self._rerun_pending = False   # a refresh came while the query ran: once more when it is in
        self._touched: list = []      # rows live refreshes added or changed since the ranking shown
        self._ranked: _Ranked | None = None  # the last whole ranking: what a refresh's merge starts from
        self._adjust_timer = QTimer(self, singleShot=True, interval=ADJUST_IDLE_MS, timeout=self.end_adjustment)
        for w in (self.alpha, self.beta, self.gamma):
            w.changed.connect(self._params_edited)
        for w in (self.tau, self.decay, self.k):
            w.valueChanged.connect(self._params_edited)
        for w in (self.agent, self.kind):
            w.currentIndexChanged.connect(self._params_edited)
        for w in (self.include_retired, self.protected_only, self.confidence_decay):
            w.toggled.connect(self._params_edited)
        self.preset.currentIndexChanged.connect(self._preset_chosen)
        self.text.returnPressed.connect(self.run_query)
        self.text.textEdited.connect(lambda: self._text_timer.start())
        self.run_button.clicked.connect(self.run_query)
        self.like_button.clicked.connect(self.query_selected)
        self.view.clicked.connect(self._result_clicked)
        state.data_changed.connect(self._on_data)
        state.data_changed.connect(self._fit_columns)
        state.rows_changed.connect(self._on_rows)
        state.params_changed.connect(self._on_params)
        state.selection_changed.connect(self._on_selection)
        self._fill_presets()

    # ------------------------------------------------------------ widgets <-> state.params
    def _fill_presets(self) -> None:
        self.preset.blockSignals(True)
        for name, desc in PRESETS.items():
            self.preset.addItem(name)
            self.preset.setItemData(self.preset.count() - 1, str(desc), Qt.ToolTipRole)
        self.preset.blockSignals(False)
        self._show_params(self.state.params)

    def _show_params(self, p) -> None:
        """Make every widget show `p` (the state's parameters), without writing them back."""
        self._loading = True
        try:
            self.preset.blockSignals(True)
            self.preset.setCurrentText(p.preset)
            self.preset.blockSignals(False)
            self._load_params(p)
            for combo, values in ((self.agent, p.agents), (self.kind, p.kinds)):
                combo.blockSignals(True)
                i = combo.findText(values[0]) if values and len(values) == 1 else -1
                combo.setCurrentIndex(max(i, 0))
                combo.blockSignals(False)
            self.as_of.setText("as of: now" if p.as_of is None else f"as of: {iso(p.as_of)} UTC")
        finally:
            self._loading = False

    def _load_params(self, p) -> None:
        """The preset's part of `p` into the weight, time constant and option widgets."""
        was, self._loading = self._loading, True
        try:
            self.alpha.set_value(p.alpha)
            self.beta.set_value(p.beta)
            self.gamma.set_value(p.gamma)
            self.tau.setValue(p.tau_hours)
            self.decay.setValue(p.decay)
            self.k.setValue(p.k)
            self.include_retired.setChecked(bool(p.include_retired))
            self.protected_only.setChecked(bool(p.protected_only))
            self.confidence_decay.setChecked(bool(p.confidence_decay))
        finally:
            self._loading = was

    def params(self):
        """The retrieval parameters in force: the state's (which the widgets show)."""
        return self.state.params

    def _widget_params(self):
        """The Params the widgets describe now (fields without a widget, e.g. tags, kept from the state)."""
        name = self.preset.currentText()
        base = self.state.params if self.state.params.preset == name else preset_params(name)
        return dataclasses.replace(
            base, alpha=self.alpha.value(), beta=self.beta.value(), gamma=self.gamma.value(),
            tau_hours=float(self.tau.value()), decay=float(self.decay.value()), k=int(self.k.value()),
            as_of=self.state.as_of,
            agents=(self.agent.currentText(),) if self.agent.currentIndex() > 0 else None,
            kinds=(self.kind.currentText(),) if self.kind.currentIndex() > 0 else None,
            time_range=self.state.time_range, include_retired=self.include_retired.isChecked(),
            protected_only=self.protected_only.isChecked(), confidence_decay=self.confidence_decay.isChecked())

    def set_weights(self, alpha=None, beta=None, gamma=None) -> None:
        """Set weights as the user would (tests, bench, restoring settings)."""
        for w, v in ((self.alpha, alpha), (self.beta, beta), (self.gamma, gamma)):
            if v is not None:
                w.set_value(v)
        self._params_edited()

    def _preset_chosen(self) -> None:
        self._load_params(preset_params(self.preset.currentText()))
        self._params_edited()

    def _params_edited(self, *_):
        """A widget was edited: its setting becomes the state's (the ranking follows from there)."""
        if not self._loading:
            self.state.set_params(self._widget_params(), source=self)

    def _on_params(self, params, source) -> None:
        if source is not self:
            self._show_params(params)
        if not self._pinned and not self._adjusting:
            self._baseline = self._ranks  # an adjustment begins: Δ compares with the ranking before it
        self._adjusting = True
        self._adjust_timer.start()
        asked = self._asked
        if asked is not None and params.replace(as_of=None) == asked.replace(as_of=None):
            # only the moment moved (the as-of bar coalesces its own steps): no debounce, so the
            # engine scores while the GUI thread redraws the other panels
            self._score_timer.stop()
            self.rescore()
        else:
            self._score_timer.start()

    def end_adjustment(self) -> None:
        """The current adjustment is over (ADJUST_IDLE_MS without a change): the next change
        takes the ranking on screen as its baseline."""
        self._adjust_timer.stop()
        self._adjusting = False

    def pin_baseline(self, on: bool = True) -> None:
        """Pin the ranking on screen as the baseline (off: back to "before the current adjustment")."""
        self._pinned = bool(on) and self._ranks is not None
        if self._pinned:
            self._baseline = dict(self._ranks)
        self.pin_button.blockSignals(True)
        self.pin_button.setChecked(self._pinned)
        self.pin_button.setText("Unpin baseline" if self._pinned else "Pin as baseline")
        self.pin_button.blockSignals(False)
        if self.results.result is not None:
            self.results.set_result(self.results.result, self.state.data, self._baseline, self._fresh)
            self._show_footer(self.results.result)

    def _on_selection(self, rows, current, source) -> None:
        """The results follow the shared selection (one highlight in the window, not two)."""
        self.like_button.setEnabled(current is not None)
        if source is self:
            return
        sm = self.view.selectionModel()
        res = self.results.result
        at = [] if res is None or current is None else np.flatnonzero(np.asarray(res.rows) == current)
        if len(at):
            self.view.selectRow(int(at[0]))
        else:
            sm.clearSelection()
            sm.setCurrentIndex(QModelIndex(), QItemSelectionModel.NoUpdate)

    # ------------------------------------------------------------ store
    def _on_data(self, data: StoreData | None) -> None:
        again = self.state.reloaded  # the same store read again: the query, its setting and baseline stay
        self.workers.cancel("query")
        self.workers.cancel("score")
        self.engine, self.engine_for = None, data
        self._touched, self._ranked = [], None  # rows may have moved: the next run is whole
        if again and self.query_key is not None:
            self._fill_combos(data, keep=True)
            self._rerun()
            return
        self.query_key = None
        self._ranks = self._baseline = None
        self._fresh = set()
        self.results.set_result(None, data, None)  # first: the old ranking's rows are not this data's
        self.pin_baseline(False)
        self._fill_combos(data, keep=again)
        if not again:  # another store: its own query starts empty (per-store state)
            self.text.clear()
            self.text.setPlaceholderText("Query text — Enter to run")
            self.legend.setText("")
        if data is not None and not again and data.store.meta("ga_weights"):
            # an imported Generative Agents store: start with the retrieval its agents used
            self.preset.setCurrentText("generative-agents")
        self.message.setText("")
        self._params_edited()  # the filters were reset to this store's lists: the state follows

    def _size_columns(self, compact: bool) -> None:
        """The columns beside the content at their normal or compact widths (never narrower
        than their header's text); the content column takes the rest."""
        h = self.view.horizontalHeader()
        self._compact = compact
        for name, w in (COMPACT_WIDTHS if compact else RESULT_WIDTHS).items():
            h.resizeSection(RESULT_COLUMNS.index(name), max(w, h.fontMetrics().horizontalAdvance(name) + 16))

    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.Resize and obj is self.view.viewport():
            compact = self.view.viewport().width() < COMPACT_BELOW
            if compact != self._compact:  # only when crossing: a column the user sized stays
                self._size_columns(compact)
        return False

    def _fit_columns(self, data: StoreData | None) -> None:
        """An agent column only where there are several agents to tell apart."""
        self.view.setColumnHidden(RESULT_COLUMNS.index("agent"), data is None or len(data.agents) < 2)

    def rows_visible(self) -> float:
        """How many result rows the view shows at its current size."""
        return self.view.viewport().height() / self.view.verticalHeader().defaultSectionSize()
    def _fill_combos(self, data: StoreData | None, keep: bool) -> None:
        """The agent and kind filters list this store's; `keep`: the chosen ones stay chosen."""
        for combo, items in ((self.agent, data.agents if data else []), (self.kind, data.kinds if data else [])):
            was = combo.currentText() if keep else "all"
            combo.blockSignals(True)
            combo.clear()
            combo.addItem("all")
            combo.addItems([i or "(none)" for i in items])
            combo.setCurrentIndex(max(0, combo.findText(was)))
            combo.blockSignals(False)

    def _on_rows(self, delta) -> None:
        """A live refresh: the engine is made again on the new arrays and the query runs again."""
        data = self.state.data
        self.engine = None
        known = {self.kind.itemText(i) for i in range(self.kind.count())} | \
            {self.agent.itemText(i) for i in range(self.agent.count())}
        for combo, names in ((self.agent, data.agents), (self.kind, data.kinds)):
            combo.blockSignals(True)
            combo.addItems([n or "(none)" for n in names if (n or "(none)") not in known])
            combo.blockSignals(False)
        if self.query_key is not None:
            self._fresh |= set(data.arrays.ids[delta.added].tolist())
            self._touched.append(np.concatenate([delta.changed, delta.added]))
            self._rerun_soon()

    def _rerun_soon(self) -> None:
        """The query again after a live refresh: one at a time (a running one is not cancelled:
        refreshes every half second could starve it), paced by its own cost (RERUN_SHARE)."""
        if self.workers.running("query"):
            self._rerun_pending = True
        elif not self._rerun_timer.isActive():
            self._rerun_timer.start(max(0, int((self._rerun_next - time.monotonic()) * 1000)))

    def _rerun(self) -> None:
        """The query again on new data; unless pinned or mid-adjustment, Δ shows what the write changed."""
        if self.query_key is None:  # (another store since it was asked for)
            return
        if not self._pinned and not self._adjusting and self._ranks is not None:
            self._baseline = self._ranks
        self._submit_query(self.query_key, rerun=True)

    def _engine(self, data: StoreData):
        """The engine for this store (made on the engine thread, once per open; once per step of
        the window's "as of" moment, on the arrays as of then, with the same query)."""
        if self.engine is None or self.engine_for is not data:
            self.engine = Engine(data.store, data.arrays)
            self.engine_for = data
        elif self.engine.arrays is not data.arrays:
            self.engine = self.engine.with_arrays(data.arrays)
        return self.engine

    # ------------------------------------------------------------ running
    def run_query(self) -> None:
        text = self.text.text().strip()
        if text:
            self._submit_query(("text", text))

    def query_selected(self) -> None:
        data, cur = self.state.data, self.state.current
        if data is not None and cur is not None:
            mid = data.arrays.ids[cur]
            self.text.setText("")
            self.text.setPlaceholderText(f"like memory {mid}: {data.previews[cur][:60]}")
            self._submit_query(("like", mid))

    def _submit_query(self, key, rerun: bool = False) -> None:
        """Run query `key`; `rerun`: the same query again on new data (after a write), keeping
        the baseline and the marks."""
        data = self.state.data
        if data is None:
            return
        self._text_timer.stop()
        self._score_timer.stop()  # this job scores the current setting itself
        params = self._asked = self.params()
        self._submitted_at = time.perf_counter()
        touched = np.concatenate(self._touched) if rerun and self._touched else None
        self._touched = []
        base = self._ranked if rerun and self._ranked is not None and self._ranked.result.params == params \
            and time.monotonic() - self._ranked.at < RERANK_S else None
        exclude = data.arrays.index_of(key[1]) if key[0] == "like" else None

        def job(task):
            t0 = time.monotonic()
            if base is not None and touched is not None:
                # only the rows the refresh touched are scored when none of them can enter the top k
                got = merged(base.result, data.store, data.arrays, touched, base.query_vector, base.ref,
                             base.clock_at, exclude)
                if got is not None:  # the next merge starts from it (same reference time, same age)
                    return got, None, base.query_vector, time.monotonic() - t0, dataclasses.replace(base, result=got)
            eng = self._engine(data)
            task.check()
            err = None
            try:
                eng.set_query(key[1]) if key[0] == "text" else eng.set_query(like=key[1])
            except Exception as e:  # noqa: BLE001 - e.g. EmbedderUnavailable; FTS-only presets still work
                err = str(e)
            task.check()
            try:
                result = eng.score(params)
            except Exception:
                if err is None:
                    raise
                result = None
            vec = eng.query_vector   # the map marks where the query sits
            ranked = None if result is None else _Ranked(result, eng.ref_time(params), eng.clock.at, vec,
                                                         time.monotonic())
            return result, err, vec, time.monotonic() - t0, ranked

        def done(out):
            result, err, vec, cost, self._ranked = out
            self._rerun_next = time.monotonic() + cost * (1 / RERUN_SHARE - 1)
            self.query_key = key
            self.state.query_text = key[1] if key[0] == "text" else None  # e.g. the Diff panel's top-k query
            self.message.setText(f"The query could not be embedded: {err}" if err else "")
            if not rerun:  # a new query: nothing to compare with yet
                self._ranks = self._baseline = None
                self._fresh = set()
                self.pin_baseline(False)
            if result is None:
                self.results.set_result(None, self.state.data, None)
                self.state.set_result(None)
            else:
                self._show(result, params, vec)
            self._rerun_if_pending()
        self.workers.cancel("score")
        self.workers.submit("query", job, on_done=done, on_error=self._failed, lane="engine")

    def rescore(self) -> None:
        """Re-rank the current query with the widgets' setting (the slider path)."""
        data = self.state.data
        if data is None or self.query_key is None:
            return
        params = self._asked = self.params()
        self._submitted_at = time.perf_counter()
        self.workers.submit("score", lambda task: self._engine(data).score(params),
                            on_done=lambda r: self._show(r, params, None),
                            on_error=self._failed, lane="engine")

    def _show(self, result, params, vec) -> None:
        data = self.state.data
        if result is None or data is None:
            return
        self.results.set_result(result, data, self._baseline, self._fresh)
        self._ranks = {m: i for i, m in enumerate(result.ids, 1)}
        self.shown_params = params
        self._show_footer(result)
        self.state.set_result(result, vec if vec is not None else self.state.query_vector)
        self._on_selection(self.state.selection, self.state.current, None)
        self.ranked.emit(result, time.perf_counter() - self._submitted_at)

    def _show_footer(self, result) -> None:
        exits = self.results.exits
        left = "" if not exits else "\nleft the results (rank in the baseline): " + ", ".join(
            f"{m[:10]} ({r})" for m, r in exits[:6]) + (f" and {len(exits) - 6} more" if len(exits) > 6 else "")
        base = "" if self._baseline is None else " · Δ vs pinned baseline" if self._pinned else \
            " · Δ vs before this adjustment"
        self.legend.setText(f"{len(result.ids)} of {count(result.candidates, 'candidate')}{base} · bar colours: "
                            + ", ".join(self.results.components) + left
                            + _clock_note(self.engine, result.params)  # the "now" that recency measures from
                            + "".join(("\n⚠ " if n.startswith("warning: ") else "\n") + n for n in result.notes))

    def _failed(self, err: Exception) -> None:
        self.message.setText(f"Query failed: {err}")
        self._ranked = None  # the rows touched meanwhile were not scored: the next run is whole
        self._rerun_if_pending()

    def _rerun_if_pending(self) -> None:
        if self._rerun_pending and self.query_key is not None:
            self._rerun_pending = False
            self._rerun_soon()

    def _result_clicked(self, index) -> None:
        if self.results.result is not None and index.isValid():
            self.state.select([self.results.row_of(index.row())], source=self)


def _clock_note(engine, params) -> str:
    """Issue 12 (clock): which "now" the ages of this ranking are measured from."""
    if params.as_of is not None or engine is None or getattr(engine, "clock", None) is None:
        return ""
    return f" · ages from the store's clock, {engine.clock.describe()}"
