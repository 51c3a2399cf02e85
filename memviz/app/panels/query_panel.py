"""Query panel: the widgets of live retrieval. What is asked, the engine, the ranking and its
baseline live in `memviz.session.query.QueryModel` (Qt-free); the retrieval parameters in the
AppState (`state.params`): a widget's edit writes them there and the widgets follow any change
made elsewhere (two-way binding), and the ranking follows `state.params_changed`, whoever
changed them.

Embedding the query (Engine.set_query) is the costly step and runs once per query text;
every slider move only re-scores (Engine.score). Both run as "engine"-lane jobs (one
thread, so the engine is never used concurrently); a new setting cancels the pending
one, so a dragged slider yields a stream of fresh rankings and never a queue of stale
ones. The results table shows rank, rank change against the model's baseline, score and a
stacked bar of the weighted components (ResultBarDelegate); entries ("in") and exits (listed
under the table) count as changes too. Another module adds a column with
`results.add_column(ResultColumn(...))`; actions on result rows come from the window's
context providers (the table's context menu asks for the selected ids), actions on the selected
results with keys that work while the results have the focus from `add_result_actions`, and a
row under them from `add_below_results` (the judging marks bar) and one under the sliders from
`add_below_settings` (the quality readout). The preset list holds every
preset's defaults and the parameter sets saved with the store (`set_parameter_choices`).

After any write (the agent's or the user's) the current query runs again on the new data,
same text or example, same setting, paced by its own cost (a `workers.PacedCall`); memories
written since the query was run are marked "★ new" when they enter the results.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

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
from memviz.app.plots import style
from memviz.app.workers import PacedCall, Workers
from memviz.retrieval import preset_params
from memviz.retrieval.presets import ParameterSet, parameter_sets, preset
from memviz.session.judging import describe
from memviz.session.query import Outcome, Query, QueryModel
from memviz.session.state import AppState, StoreData
from memviz.store import iso
from memviz.words import count

# a live refresh runs the query again in at most this share of the time (its own cost paces it)
RERUN_SHARE = 0.1
COMPACT_BELOW = 560   # px of results view: narrower than this, the columns beside the content shrink
WEIGHT_MAX = 5.0      # slider range of α, β, γ
SLIDER_STEPS = 500
DEBOUNCE_MS = 20      # coalesce slider moves; the engine lane drops stale settings anyway
ADJUST_IDLE_MS = 1500  # setting changes closer than this are one adjustment (one baseline)
_RIGHT = int(Qt.AlignRight | Qt.AlignVCenter)


def component_color(name: str, i: int) -> QColor:
    return QColor(style.theme().component(name, i))


@dataclasses.dataclass(frozen=True)
class ResultColumn:
    """A column of the results table. `cell(model, i, row)`: what result `i` shows (`row`: its
    row in the arrays), computed once per ranking; `width`/`compact`: starting widths (px) in a
    wide and a narrow view; `tip`: the header's tooltip; `whole_tip`: the cell's text is its own
    tooltip (where the column cuts it); `color(text)`: a foreground colour or None."""

    name: str
    cell: Callable[[ResultsModel, int, int], object]
    width: int = 60
    compact: int = 50
    tip: str | None = None
    right: bool = False
    whole_tip: bool = False
    color: Callable[[str], QColor | None] | None = None


def _delta_color(d: str) -> QColor | None:
    """▲ up, ▼ down, anything else (in, ★ new) in the theme's colour for new entries."""
    if not d:
        return None
    t = style.theme()
    return QColor(t.up if d.startswith("▲") else t.down if d.startswith("▼") else t.new)


#: the built-in columns, in order; the content column, last, takes what the others leave
COLUMNS = (
    ResultColumn("rank", lambda m, i, r: str(i + 1), 32, 28, right=True),
    ResultColumn("Δ", lambda m, i, r: m.delta[i], 34, 28, "Change of rank since the previous setting", right=True,
                 color=_delta_color),
    ResultColumn("score", lambda m, i, r: f"{float(m.result.score[i]):.4f}", 54, 52, right=True),
    ResultColumn("why", lambda m, i, r: None, 80, 50, "The score's weighted components as a stacked bar (relevance, "
                 "recency, importance); hover a bar for its numbers"),
    ResultColumn("kind", lambda m, i, r: m.data_.arrays.kind[r], 66, 72, whole_tip=True),
    ResultColumn("agent", lambda m, i, r: m.data_.arrays.agent[r], 74, 62, whole_tip=True),
    ResultColumn("content", lambda m, i, r: m.data_.previews[r], whole_tip=True),
)
RESULT_COLUMNS = [c.name for c in COLUMNS]


class ResultsModel(QAbstractTableModel):
    """The ranking on screen. Its cells are formatted once per result (`data` only looks them
    up: a repaint asks ~500 times); a result with as many rows as the last one is put in place
    (dataChanged: no reset, no relayout), as every scrubber step and slider move gives."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.columns: list[ResultColumn] = list(COLUMNS)
        self.result = None
        self.data_: StoreData | None = None
        self.delta: list[str] = []
        self.exits: list[tuple[str, int]] = []  # (id, rank in the baseline) of memories that left the results
        self.components: list[str] = []
        self.bar_max = 1.0
        self._cells: list[list] = []            # per row: the DisplayRole of each column

    def add_column(self, column: ResultColumn, before: str = "content") -> int:
        """Show `column` before the column named `before`; its position."""
        at = self.column_of(before)
        self.beginInsertColumns(QModelIndex(), at, at)
        self.columns.insert(at, column)
        self._format()
        self.endInsertColumns()
        return at

    def column_of(self, name: str) -> int:
        return next(i for i, c in enumerate(self.columns) if c.name == name)

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
            self.dataChanged.emit(self.index(0, 0), self.index(before - 1, len(self.columns) - 1))
        else:
            self.endResetModel()

    def reformat(self) -> None:
        """Format the cells again: a column's values changed without a new ranking (the grades)."""
        if self.result is None or not len(self.result.ids):
            return
        self._format()
        self.dataChanged.emit(self.index(0, 0), self.index(len(self.result.ids) - 1, len(self.columns) - 1))

    def _format(self) -> None:
        self._cells = []
        if self.result is None:
            return
        for i, r in enumerate(np.asarray(self.result.rows, np.int64).tolist()):
            self._cells.append([c.cell(self, i, r) for c in self.columns])

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() or self.result is None else len(self.result.ids)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation == Qt.Horizontal and role == Qt.DisplayRole:
            return self.columns[section].name
        if orientation == Qt.Horizontal and role == Qt.ToolTipRole:
            return self.columns[section].tip
        return None

    def row_of(self, i: int) -> int:
        return int(self.result.rows[i])

    def contributions(self, i: int) -> list[tuple[str, float]]:
        return [(k, float(v[i])) for k, v in self.result.weighted.items()]

    def data(self, index, role=Qt.DisplayRole):
        if not self._cells or not index.isValid():
            return None
        column, text = self.columns[index.column()], self._cells[index.row()][index.column()]
        if role == Qt.DisplayRole:
            return text
        if role == Qt.ToolTipRole and column.whole_tip:
            return plain_tooltip(text)  # the whole text where the column cuts it
        if role == Qt.ForegroundRole and column.color is not None:
            return column.color(text)
        if role == Qt.TextAlignmentRole and column.right:
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
    """The query's widgets over a `QueryModel` (`model`). ranked(result, seconds): a new
    ranking is shown (benchmarks and tests wait on it); the setting it was made with is
    `shown_params`."""

    context_requested = Signal(list, QPoint)
    ranked = Signal(object, float)

    def __init__(self, state: AppState, workers: Workers, parent=None) -> None:
        super().__init__(parent)
        self.state, self.workers = state, workers
        self.model = QueryModel(state)
        self._loading = False
        self._submitted_at = 0.0

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
        self.view.setItemDelegateForColumn(self.results.column_of("why"), ResultBarDelegate(self.view))
        self.view.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.view.verticalHeader().setVisible(False)
        self.view.verticalHeader().setDefaultSectionSize(22)
        self.view.setWordWrap(False)
        h = self.view.horizontalHeader()
        h.setMinimumSectionSize(24)
        self._compact: bool | None = None
        self._size_columns(False)
        self.view.viewport().installEventFilter(self)
        self.results.columnsInserted.connect(lambda *_: self._size_columns(bool(self._compact)))  # add_column
        h.setStretchLastSection(True)  # the content column takes what the others leave
        h.setSectionResizeMode(QHeaderView.Interactive)
        self.view.setColumnHidden(self.results.column_of("agent"), True)
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
        for r, (name, part, w) in enumerate((("α relevance", "relevance", self.alpha), ("β recency", "recency", self.beta),
                                             ("γ importance", "importance", self.gamma)), 1):
            lab = style.ThemeLabel(name, lambda t, part=part: t.component(part, 0), bold=True)
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
        self.below_settings = QVBoxLayout()  # rows other parts add under the setting (add_below_settings)
        self.below_settings.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(self.below_settings)
        lay.addWidget(self.message)
        lay.addWidget(self.view, 1)
        self.below_results = QVBoxLayout()   # rows other parts add under the results (add_below_results)
        self.below_results.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(self.below_results)
        foot = QHBoxLayout()
        foot.addWidget(self.legend, 1)
        foot.addWidget(self.pin_button)
        lay.addLayout(foot)


        self._score_timer = QTimer(self, singleShot=True, interval=DEBOUNCE_MS, timeout=self.rescore)
        self._text_timer = QTimer(self, singleShot=True, interval=500, timeout=self.run_query)
        self._adjust_timer = QTimer(self, singleShot=True, interval=ADJUST_IDLE_MS, timeout=self.end_adjustment)
        # a live refresh's rerun: one at a time, paced by its own cost
        self._rerun = PacedCall(self._rerun_now, self, share=RERUN_SHARE, max_ms=60_000)
        self._rerun_pending = False   # a refresh came while the query ran: once more when it is in
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
        self._following = False  # the view is being set to the shared selection (not the user's move)
        self.view.selectionModel().currentRowChanged.connect(self._current_moved)
        state.data_changed.connect(self._on_data)
        state.data_changed.connect(self._fit_columns)
        state.rows_changed.connect(self._on_rows)
        state.params_changed.connect(self._on_params)
        state.selection_changed.connect(self._on_selection)
        self._fill_presets()

    @property
    def query_key(self) -> Query | None:
        """The query of the ranking on screen."""
        return self.model.query

    @property
    def shown_params(self):
        """The setting of the ranking on screen."""
        return self.model.shown_params

    # ------------------------------------------------------------ widgets <-> state.params
    def _fill_presets(self) -> None:
        self.set_parameter_choices(parameter_sets())

    def set_parameter_choices(self, choices: list[ParameterSet]) -> None:
        """The preset list: each preset's defaults (by the preset's name), then the parameter sets
        saved with the store (judge.stored.parameter_choices), chosen like a preset."""
        self._choices = []
        for ps in choices:
            try:
                ps.params()
            except ValueError:  # a set saved for a preset not installed here (a plugin's)
                continue
            self._choices.append(ps)
        presets = {ps.name for ps in self._choices if ps.name == ps.preset}
        self.preset.blockSignals(True)
        self.preset.clear()
        for ps in self._choices:
            builtin = ps.name == ps.preset and ps.name in presets
            self.preset.addItem(ps.name if builtin or ps.name not in presets else f"{ps.name} (saved)")
            tip = ps.description if builtin else f"saved {ps.preset} setting: {describe(ps.params())}" + (
                f"\n{ps.description}" if ps.description else "")
            self.preset.setItemData(self.preset.count() - 1, plain_tooltip(tip), Qt.ToolTipRole)
        self.preset.blockSignals(False)
        self._show_params(self.state.params)

    def _choice_of(self, p) -> int:
        """The preset list's entry for `p`: a saved parameter set holding exactly its setting, else
        its preset's own entry."""
        for i, ps in enumerate(self._choices):
            if ps.name != ps.preset and ps.preset == p.preset:
                try:
                    mine = ps.params()
                except ValueError:
                    continue
                if all(getattr(mine, f) == getattr(p, f) for f in preset(p.preset).settings):
                    return i
        return next((i for i, ps in enumerate(self._choices) if ps.name == ps.preset == p.preset), -1)

    def _chosen_preset(self) -> str:
        i = self.preset.currentIndex()
        return self._choices[i].preset if 0 <= i < len(self._choices) else self.state.params.preset

    def _show_params(self, p) -> None:
        """Make every widget show `p` (the state's parameters), without writing them back."""
        self._loading = True
        try:
            self.preset.blockSignals(True)
            self.preset.setCurrentIndex(self._choice_of(p))
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
        name = self._chosen_preset()
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
        i = self.preset.currentIndex()
        self._load_params(self._choices[i].params() if 0 <= i < len(self._choices) else preset_params(self._chosen_preset()))
        self._params_edited()

    def _params_edited(self, *_):
        """A widget was edited: its setting becomes the state's (the ranking follows from there)."""
        if not self._loading:
            self.state.set_params(self._widget_params(), source=self)

    def _on_params(self, params, source) -> None:
        if source is not self:
            self._show_params(params)
        self.model.setting_changed()
        self._adjust_timer.start()
        asked = self.model.asked
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
        self.model.end_adjustment()

    def pin_baseline(self, on: bool = True) -> None:
        """Pin the ranking on screen as the baseline (off: back to "before the current adjustment")."""
        self._show_pinned(self.model.pin(on))
        if self.results.result is not None:
            self._show_ranking(self.results.result)

    def _show_pinned(self, pinned: bool) -> None:
        self.pin_button.blockSignals(True)
        self.pin_button.setChecked(pinned)
        self.pin_button.setText("Unpin baseline" if pinned else "Pin as baseline")
        self.pin_button.blockSignals(False)

    def _on_selection(self, rows, current, source) -> None:
        """The results follow the shared selection (one highlight in the window, not two)."""
        self.like_button.setEnabled(current is not None)
        if source is self:
            return
        sm = self.view.selectionModel()
        res = self.results.result
        at = [] if res is None or current is None else np.flatnonzero(np.asarray(res.rows) == current)
        self._following = True
        try:
            if len(at):
                self.view.selectRow(int(at[0]))
            else:
                sm.clearSelection()
                sm.setCurrentIndex(QModelIndex(), QItemSelectionModel.NoUpdate)
        finally:
            self._following = False

    # ------------------------------------------------------------ store
    def _on_data(self, data: StoreData | None) -> None:
        again = self.state.reloaded  # the same store read again: the query, its setting and baseline stay
        self.workers.cancel("query")
        self.workers.cancel("score")
        if self.model.store_read(data, again):
            self._fill_combos(data, keep=True)
            self._rerun_now()
            return
        self.results.set_result(None, data, None)  # first: the old ranking's rows are not this data's
        self._show_pinned(False)
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
        for i, c in enumerate(self.results.columns[:-1]):
            h.resizeSection(i, max(c.compact if compact else c.width, h.fontMetrics().horizontalAdvance(c.name) + 16))

    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.Resize and obj is self.view.viewport():
            compact = self.view.viewport().width() < COMPACT_BELOW
            if compact != self._compact:  # only when crossing: a column the user sized stays
                self._size_columns(compact)
        return False

    def _fit_columns(self, data: StoreData | None) -> None:
        """An agent column only where there are several agents to tell apart."""
        self.view.setColumnHidden(self.results.column_of("agent"), data is None or len(data.agents) < 2)

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
        """A live refresh: new agents and kinds join the filters, and the query runs again."""
        data = self.state.data
        known = {self.kind.itemText(i) for i in range(self.kind.count())} | \
            {self.agent.itemText(i) for i in range(self.agent.count())}
        for combo, names in ((self.agent, data.agents), (self.kind, data.kinds)):
            combo.blockSignals(True)
            combo.addItems([n or "(none)" for n in names if (n or "(none)") not in known])
            combo.blockSignals(False)
        if self.model.rows_changed(delta):
            self._rerun_soon()

    def _rerun_soon(self) -> None:
        """The query again after a live refresh: one at a time (a running one is not cancelled:
        steady refreshes could starve it), paced by its own cost (RERUN_SHARE)."""
        if self.workers.running("query"):
            self._rerun_pending = True
        else:
            self._rerun.request()

    def _rerun_now(self) -> None:
        if self.model.query is not None:  # (another store since it was asked for)
            self._submit_query(self.model.query, rerun=True)

    # ------------------------------------------------------------ running
    def run_query(self) -> None:
        text = self.text.text().strip()
        if text:
            self._submit_query(Query("text", text))

    def run(self, query: Query) -> None:
        """Ask `query` (a text, or like a memory) as if typed or chosen (a judged query, marks kept
        for another query)."""
        data = self.state.data
        if data is None:
            return
        if query.kind == "text":
            self.text.setText(query.value)
        else:
            i = data.arrays.index_of(query.value)
            self.text.setText("")
            self.text.setPlaceholderText(f"like memory {query.value}" + ("" if i is None else f": {data.previews[i][:60]}"))
        self._submit_query(query)

    def result_ids_in_focus(self) -> list[str]:
        """The ids of the selected results while the results have the focus (keys act on them,
        however the rows were selected), else []."""
        res = self.results.result
        if res is None or not self.view.hasFocus():
            return []
        return [str(res.ids[i.row()]) for i in self.view.selectionModel().selectedRows()]

    def show_column(self, name: str, shown: bool) -> None:
        """Show or hide an added column (the grades, shown while the user judges)."""
        self.view.setColumnHidden(self.results.column_of(name), not shown)

    def add_result_actions(self, actions) -> None:
        """Actions on the selected results whose keys work while the results have the focus."""
        for a in actions:
            a.setShortcutContext(Qt.WidgetWithChildrenShortcut)
            self.view.addAction(a)

    def add_below_settings(self, widget: QWidget) -> None:
        """A row under the sliders (the judged set's quality readout)."""
        self.below_settings.addWidget(widget)

    def add_below_results(self, widget: QWidget) -> None:
        """A row under the results (the marks bar)."""
        self.below_results.addWidget(widget)

    def query_selected(self) -> None:
        data, cur = self.state.data, self.state.current
        if data is not None and cur is not None:
            mid = data.arrays.ids[cur]
            self.text.setText("")
            self.text.setPlaceholderText(f"like memory {mid}: {data.previews[cur][:60]}")
            self._submit_query(Query("like", mid))

    def _submit_query(self, query: Query, rerun: bool = False) -> None:
        """Run `query`; `rerun`: the same query again on new data (after a write), keeping the
        baseline and the marks."""
        if self.state.data is None:
            return
        self._text_timer.stop()
        self._score_timer.stop()  # this job scores the current setting itself
        params = self.state.params
        self._submitted_at = time.perf_counter()
        job = self.model.query_job(query, rerun)

        def done(out: Outcome) -> None:
            self._rerun.took(out.cost)
            self.model.query_done(query, out, rerun)
            self.message.setText(out.error[:1].upper() + out.error[1:] if out.error else "")  # it says what failed
            if not rerun:
                self._show_pinned(False)
            if out.result is None:
                self.results.set_result(None, self.state.data, None)
                self.state.set_result(None)
            else:
                self._show(out.result, params, out.query_vector)
            self._rerun_if_pending()
        self.workers.cancel("score")
        self.workers.submit("query", job, on_done=done, on_error=self._failed, lane="engine")

    def rescore(self) -> None:
        """Re-rank the current query with the widgets' setting (the slider path)."""
        if self.state.data is None or self.model.query is None:
            return
        params = self.state.params
        self._submitted_at = time.perf_counter()
        self.workers.submit("score", self.model.score_job(), on_done=lambda r: self._show(r, params, None),
                            on_error=self._failed, lane="engine")

    def _show(self, result, params, vec) -> None:
        if result is None or self.state.data is None:
            return
        self._show_ranking(result)
        self.model.shown(result, params)
        self.state.set_result(result, vec if vec is not None else self.state.query_vector)
        self._on_selection(self.state.selection, self.state.current, None)
        self.ranked.emit(result, time.perf_counter() - self._submitted_at)

    def _show_ranking(self, result) -> None:
        """The table and the legend of `result` against the model's baseline."""
        m = self.model
        self.results.set_result(result, self.state.data, m.baseline, m.fresh)
        exits = self.results.exits
        left = "" if not exits else "\nleft the results (rank in the baseline): " + ", ".join(
            f"{mid[:10]} ({r})" for mid, r in exits[:6]) + (f" and {len(exits) - 6} more" if len(exits) > 6 else "")
        self.legend.setText(f"{len(result.ids)} of {count(result.candidates, 'candidate')}{m.baseline_text()} · "
                            "bar colours: " + ", ".join(self.results.components) + left
                            + _clock_note(m.engine, result.params)  # the "now" that recency measures from
                            + "".join(("\n⚠ " if n.startswith("warning: ") else "\n") + n for n in result.notes))

    def _failed(self, err: Exception) -> None:
        self.message.setText(f"Query failed: {err}")
        self.model.failed()
        self._rerun_if_pending()

    def _rerun_if_pending(self) -> None:
        if self._rerun_pending and self.model.query is not None:
            self._rerun_pending = False
            self._rerun_soon()

    def _current_moved(self, index, _previous) -> None:
        """The arrow keys through the results select each one in every panel, as a click does."""
        if not self._following:
            self._result_clicked(index)

    def _result_clicked(self, index) -> None:
        if self.results.result is not None and index.isValid():
            self.state.select([self.results.row_of(index.row())], source=self)


def _clock_note(engine, params) -> str:
    """Which "now" the ages of this ranking are measured from."""
    if params.as_of is not None or engine is None:
        return ""
    return f" · ages from the store's clock, {engine.clock.describe()}"
