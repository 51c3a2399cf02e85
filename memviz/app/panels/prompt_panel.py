"""Prompt view: what goes into the agent's prompt from memory under a token budget (HTM's
working memory, memviz.context.assemble), and why that and not the rest.

Budget (slider and box) and strategy (recent / important / balanced, or the query panel's
current ranking); the memories that fit in prompt order with cumulative-token bars, the cut
line, the first memories left out and why; protected memories pinned in. Below: the exact
text that would be sent, copyable and exportable (.txt, or .json with the whole plan).

Texts and token counts are read once per load off the GUI thread: first every text with the
labelled ≈ chars/4 estimate (quick), then the tokenizer's exact counts replace it. A live
refresh's rows (new memories, changed ones) are read and counted the same way, a few at a time,
while the view is shown; until they are, the plan leaves new memories out. The view follows the
window's "as of" moment (the arrays as of then; texts changed since shown as they were) and the
query panel's ranking (`state.result`). Assembling is a few numpy passes, so it runs on the GUI
thread on every change (paced after a live refresh).
"""
from __future__ import annotations

import json
import time

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPoint, QRect, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSlider,
    QSpinBox,
    QSplitter,
    QStyledItemDelegate,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from memviz.app.plots import style
from memviz.app.workers import PacedCall, Workers
from memviz.context import DEFAULT_BUDGET, STRATEGIES, TokenCounter, assemble, load_texts, report, result_ranking
from memviz.session.buffers import grow
from memviz.session.state import AppState, StoreData
from memviz.store.clock import store_clock

COLUMNS = ["#", "", "tokens", "cumulative", "score", "kind", "content"]
MAX_BUDGET = 1_000_000
SLIDER_STEPS = 1000
TEXT_MS = 120  # the assembled text (~0.5 MB at 128k tokens) is laid out when the plan settles


def budget_of(pos: int) -> int:
    """Slider position -> budget: logarithmic from 100 to MAX_BUDGET tokens."""
    return int(round(10 ** (2 + (np.log10(MAX_BUDGET) - 2) * pos / SLIDER_STEPS)))


def position_of(budget: int) -> int:
    b = min(max(int(budget), 100), MAX_BUDGET)
    return int(round((np.log10(b) - 2) / (np.log10(MAX_BUDGET) - 2) * SLIDER_STEPS))


class PlanModel(QAbstractTableModel):
    """The memories that went in (prompt order), a cut line, then the first ones left out."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.plan = None
        self.arrays = None
        self.previews = None
        self.n_in = 0

    def set_plan(self, plan, arrays, previews) -> None:
        self.beginResetModel()
        self.plan, self.arrays, self.previews = plan, arrays, previews
        self.n_in = 0 if plan is None else len(plan.rows)
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:
        if parent.isValid() or self.plan is None:
            return 0
        return self.n_in + 1 + len(self.plan.below)  # + the cut line

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if role == Qt.DisplayRole and orientation == Qt.Horizontal:
            return COLUMNS[section]
        return None

    def is_cut(self, i: int) -> bool:
        return i == self.n_in

    def row_of(self, i: int) -> int | None:
        """The memory (row of the arrays) on line i, None for the cut line."""
        if self.plan is None or i == self.n_in:
            return None
        return int(self.plan.rows[i]) if i < self.n_in else self.plan.below[i - self.n_in - 1].row

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid() or self.plan is None:
            return None
        i, col, p = index.row(), COLUMNS[index.column()], self.plan
        if self.is_cut(i):
            if role == Qt.DisplayRole and col == "#":  # spans the line (PromptPanel sets the span)
                return (f"✂ cut: {p.used:,} of {p.usable:,} usable tokens used (budget {p.budget:,} less the "
                        f"margin) · {len(p.rows):,} of {p.candidates:,} memories in")
            if role == Qt.ForegroundRole:
                return QColor(style.theme().cut)
            if role == Qt.BackgroundRole:
                return QColor(style.theme().cut_fill)
            return None
        r = self.row_of(i)
        inside = i < self.n_in
        drop = None if inside else p.below[i - self.n_in - 1]
        if role == Qt.DisplayRole:
            if col == "#":
                return str(i + 1) if inside else ""
            if col == "":
                return ("pinned" if p.pinned[i] else "in") if inside else drop.stage
            if col == "tokens":
                return f"{int(p.tokens[i]) if inside else drop.tokens:,}"
            if col == "cumulative":
                return None if inside else ""  # drawn by CumulativeBar
            if col == "score":
                s = float(p.score[i]) if inside else drop.score
                return "" if np.isnan(s) else f"{s:.3g}"
            if col == "kind":
                return self.arrays.kind[r]
            if col == "content":
                return self.previews[r] if inside else f"{drop.reason} — {self.previews[r]}"
        elif role == Qt.ToolTipRole and not inside:
            return drop.reason
        elif role == Qt.ForegroundRole:
            if not inside:
                return QColor(style.theme().muted)
            if p.pinned[i]:
                return QColor(style.theme().pin)
        elif role == Qt.TextAlignmentRole and col in ("#", "tokens", "score"):
            return int(Qt.AlignRight | Qt.AlignVCenter)
        return None


class CumulativeBar(QStyledItemDelegate):
    """The running total of tokens as a bar over the usable budget, with the number on it."""

    def paint(self, painter: QPainter, option, index) -> None:
        model: PlanModel = index.model()
        super().paint(painter, option, index)
        i = index.row()
        if model.plan is None or i >= model.n_in:
            return
        p = model.plan
        rect = option.rect.adjusted(2, 3, -2, -3)
        done = int(p.cumulative[i])
        w = int(rect.width() * min(done / max(p.usable, 1), 1.0))
        painter.save()
        painter.setPen(Qt.NoPen)
        t = style.theme()
        painter.setBrush(style.color(t.bar, 150))
        painter.drawRect(QRect(rect.left(), rect.top(), w, rect.height()))
        painter.setPen(QColor(t.ink))
        painter.drawText(rect, int(Qt.AlignRight | Qt.AlignVCenter), f"{done:,}")
        painter.restore()


class PromptPanel(QWidget):
    """assembled(plan, seconds): a new plan is on screen (tests and benchmarks wait on it)."""

    context_requested = Signal(list, QPoint)
    assembled = Signal(object, float)

    def __init__(self, state: AppState, workers: Workers, parent=None) -> None:
        super().__init__(parent)
        self.state, self.workers = state, workers
        self.plan = None
        self.content: np.ndarray | None = None   # full text per row of the loaded arrays
        self.tokens: np.ndarray | None = None
        self.counter: TokenCounter | None = None  # what `tokens` were counted with
        self._for: StoreData | None = None
        self._stale = False  # a refresh is owed for when the panel is shown
        self._shown = True
        self._owed: set[int] = set()     # rows a live refresh added or changed whose text is not read yet
        self._recount: set[int] = set()  # rows read while the exact counts were being made (counted again)
        self._live = PacedCall(self.refresh, self)  # after a live refresh: coalesced and paced
        self.budget_slider = QSlider(Qt.Horizontal)
        self.budget_slider.setRange(0, SLIDER_STEPS)
        self.budget = QSpinBox(minimum=1, maximum=MAX_BUDGET, singleStep=1000, suffix=" tokens")
        self.budget.setGroupSeparatorShown(True)
        self.strategy = QComboBox()
        self.strategy.addItems(list(STRATEGIES))
        self.strategy.setToolTip("balanced: importance × 1/(1 + age hours) · recent: newest first · "
                                 "important: importance first · query: the query panel's ranking")
        self.counting = style.ThemeLabel()
        self.summary = QLabel()
        self.summary.setTextFormat(Qt.PlainText)
        self.summary.setWordWrap(True)
        self.model = PlanModel(self)
        self.view = QTableView()
        self.view.setModel(self.model)
        self.view.setItemDelegateForColumn(COLUMNS.index("cumulative"), CumulativeBar(self.view))
        self.view.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SingleSelection)
        self.view.verticalHeader().setVisible(False)
        self.view.verticalHeader().setDefaultSectionSize(22)
        self.view.setWordWrap(False)
        h = self.view.horizontalHeader()
        for i, w in enumerate([44, 60, 56, 120, 72, 74]):
            h.resizeSection(i, w)
        h.setStretchLastSection(True)
        h.setSectionResizeMode(QHeaderView.Interactive)
        self.view.setContextMenuPolicy(Qt.CustomContextMenu)
        self.view.customContextMenuRequested.connect(
            lambda pos: self.context_requested.emit(self.state.selected_ids, self.view.viewport().mapToGlobal(pos)))
        self.text = QPlainTextEdit(readOnly=True)
        self.text.setPlaceholderText("The assembled context appears here.")
        self.cut_button = QPushButton("Go to the cut")
        self.cut_button.setToolTip("Scroll the list to the cut line and what fell out below it")
        self.copy_button = QPushButton("Copy")
        self.copy_button.setToolTip("Copy the assembled context, exactly as it would be sent")
        self.save_button = QPushButton("Save…")
        self.save_button.setToolTip("Save the context as .txt, or the whole plan as .json")

        top = QHBoxLayout()
        top.addWidget(QLabel("budget"))
        top.addWidget(self.budget_slider, 1)
        top.addWidget(self.budget)
        top.addWidget(QLabel("strategy"))
        top.addWidget(self.strategy)
        top.addWidget(self.cut_button)
        bottom = QWidget()
        bl = QVBoxLayout(bottom)
        bl.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        row.addWidget(QLabel("Assembled context (exact text sent)"))
        row.addStretch(1)
        row.addWidget(self.copy_button)
        row.addWidget(self.save_button)
        bl.addLayout(row)
        bl.addWidget(self.text, 1)
        split = QSplitter(Qt.Vertical)
        split.addWidget(self.view)
        split.addWidget(bottom)
        split.setSizes([300, 160])
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(top)
        lay.addWidget(self.counting)
        lay.addWidget(self.summary)
        lay.addWidget(split, 1)

        self._text_timer = QTimer(self, singleShot=True, interval=TEXT_MS,
                                  timeout=lambda: self.text.setPlainText(self.assembled_text()))
        self._set_budget(DEFAULT_BUDGET)
        self.budget_slider.valueChanged.connect(lambda pos: self._set_budget(budget_of(pos), refresh=True))
        self.budget.valueChanged.connect(lambda v: self._set_budget(v, refresh=True))
        self.strategy.currentIndexChanged.connect(lambda _i: self.refresh())
        self.cut_button.clicked.connect(self.show_cut)
        self.copy_button.clicked.connect(self.copy)
        self.save_button.clicked.connect(self.save_dialog)
        self.view.clicked.connect(self._clicked)
        state.data_changed.connect(self._on_data)
        state.rows_changed.connect(self._on_rows)
        state.as_of_changed.connect(lambda _t: self.refresh())
        state.result_changed.connect(lambda _r: self.strategy.currentText() == "query" and self.refresh())
        self._on_data(state.data)

    # ------------------------------------------------------------ budget
    def _set_budget(self, value: int, refresh: bool = False) -> None:
        for w in (self.budget, self.budget_slider):
            w.blockSignals(True)
        self.budget.setValue(int(value))
        self.budget_slider.setValue(position_of(value))
        for w in (self.budget, self.budget_slider):
            w.blockSignals(False)
        if refresh:
            self.refresh()

    # ------------------------------------------------------------ texts and token counts (off the GUI thread)
    def _on_data(self, data: StoreData | None) -> None:
        self.workers.cancel("prompt texts")
        self.workers.cancel("token count")
        self.workers.cancel("prompt rows")
        self._for, self.content, self.tokens, self.counter = data, None, None, None
        self._owed, self._recount = set(), set()
        self._text_timer.stop()
        self.plan = None  # until this store's texts are read
        if data is None:
            self.counting.setText("")
            self.refresh()
            return
        store, arrays = data.store, self.state.loaded_arrays
        self.counting.setText("reading the memories' texts…")

        def read(task):
            content, _tags = load_texts(store, arrays)
            task.check()
            estimate = TokenCounter(use_tokenizer=False)
            return content, estimate.count_many(content), estimate

        def exact(content):
            def job(task):
                counter = TokenCounter()
                return (counter.count_many(content), counter) if counter.exact else None
            return job

        def counted(out) -> None:
            if out is not None and self._for is data:
                tokens, counter = out
                # rows a live refresh brought while the tokenizer counted: counted by it now
                tail = self.content[len(tokens):]
                tokens = grow(tokens, counter.count_many(tail) if len(tail) else np.zeros(0, np.int64))
                for r in self._recount:
                    tokens[r] = counter.count(self.content[r])
                self.tokens, self.counter, self._recount = tokens, counter, set()
                self.refresh()

        def read_done(out) -> None:
            if self._for is not data:
                return
            self.content, self.tokens, self.counter = out
            self.refresh()
            self.workers.submit("token count", exact(self.content), on_done=counted, on_error=self._failed)
        self.workers.submit("prompt texts", read, on_done=read_done, on_error=self._failed)

    def _on_rows(self, delta) -> None:
        """A live refresh: the texts of new and changed rows (a rewrite) are read and counted off
        the GUI thread while the view is shown; the plan is made again (paced)."""
        if self._for is not self.state.data:
            return
        self._owed.update(delta.added.tolist())
        self._owed.update(delta.changed.tolist())
        self._read_owed()
        self._live.request()

    def _read_owed(self) -> None:
        """Read and count the texts of the rows owed, in one job at a time, while shown."""
        data = self._for
        if not self._owed or not self._shown or self.content is None or self.workers.running("prompt rows"):
            return
        rows = np.array(sorted(self._owed), np.int64)
        self._owed = set()
        store, ids, counter = data.store, self.state.loaded_arrays.ids[rows].tolist(), self.counter

        def read(task):
            got = {r["id"]: r["content"] for r in store.get_many(ids, fields=["content"])}
            texts = [got.get(m) or "" for m in ids]
            return texts, counter.count_many(texts)

        def done(out) -> None:
            if self._for is not data:
                return
            texts, counts = out
            if counter is not self.counter:  # the exact counts arrived meanwhile
                counts = self.counter.count_many(texts)
            n = int(rows[-1]) + 1
            if len(self.content) < n:
                self.content = grow(self.content, np.full(n - len(self.content), "", object))
            if len(self.tokens) < n:
                self.tokens = grow(self.tokens, np.zeros(n - len(self.tokens), self.tokens.dtype))
            self.content[rows] = np.array(texts, object)
            self.tokens[rows] = counts
            if self.workers.running("token count"):
                self._recount.update(rows.tolist())
            self._read_owed()
            self._live.request()

        def failed(err: Exception) -> None:
            self._owed.update(rows.tolist())  # read again with the next refresh
            self._failed(err)
        self.workers.submit("prompt rows", read, on_done=done, on_error=failed)

    def _failed(self, err: Exception) -> None:
        self.counting.setText(f"Could not read the texts or count tokens: {err}")

    def exact_counts(self) -> bool:
        return self.counter is not None and self.counter.exact

    # ------------------------------------------------------------ assembling
    def texts(self) -> np.ndarray | None:
        """Full text per row as of the moment shown (texts changed since then as they were)."""
        view = self.state.as_of_view
        if self.content is None or view is None or not view.content:
            return self.content
        out = self.content.copy()
        for r, t in view.content.items():
            if r < len(out):  # (rows a live refresh brought are read later)
                out[r] = t
        return out

    def _tokens_as_of(self) -> np.ndarray:
        view = self.state.as_of_view
        if view is None or not view.content:
            return self.tokens
        out = self.tokens.copy()
        for r, t in view.content.items():  # the few texts changed since T, counted as they were
            if r < len(out):
                out[r] = self.counter.count(t)
        return out

    def set_shown(self, shown: bool) -> None:
        """Connected to the dock's visibilityChanged (a tab behind another is not shown)."""
        self._shown = shown
        if shown:
            self._read_owed()
        if shown and self._stale:
            self.refresh()

    def refresh(self) -> None:
        """Assemble with the current budget, strategy and moment, and show it. While the panel
        is hidden (a tab behind another) it only remembers to, so a scrubber step costs it nothing."""
        data = self.state.data
        self._stale = not self._shown and data is not None
        if self._stale:
            return
        t0 = time.perf_counter()
        self.plan = None
        if data is None or self.tokens is None:
            self.model.set_plan(None, None, None)
            self.summary.setText("" if data is None else "counting tokens…")
            self.text.setPlainText("")
            return
        strategy = self.strategy.currentText()
        view = self.state.as_of_view
        arrays = data.arrays
        # the moment shown, else the store's own "now" (a simulation's clock), as recency measures it
        now = self.state.as_of if self.state.as_of is not None else store_clock(data.store, arrays).now()
        candidates = view.live if view is not None else np.isnan(arrays.valid_until)
        tokens = self._tokens_as_of()
        if len(tokens) < len(arrays):  # rows a live refresh brought, not read yet: left out meanwhile
            candidates = candidates & (np.arange(len(arrays)) < len(tokens))
            tokens = np.concatenate([tokens, np.zeros(len(arrays) - len(tokens), tokens.dtype)])
        ranking = None
        if strategy == "query":
            result = self.state.result
            if result is None or getattr(result, "all_scores", None) is None:
                self.model.set_plan(None, None, None)
                self.summary.setText("The query strategy fills the prompt with the query panel's ranking: "
                                     "run a query there first.")
                self.text.setPlainText("")
                return
            ranking = result_ranking(result)
        plan = assemble(arrays, tokens, now=now, strategy=strategy, budget=self.budget.value(),
                        candidates=candidates, ranking=ranking)
        self.plan = plan
        self.model.set_plan(plan, arrays, data.previews)
        self.view.clearSpans()
        self.view.setSpan(self.model.n_in, 0, 1, len(COLUMNS))  # the cut line across the list
        self._text_timer.start()  # a scrubbed or dragged plan: the long text once it settles
        self._say(plan)
        self.assembled.emit(plan, time.perf_counter() - t0)

    def _say(self, plan) -> None:
        c = self.counter
        self.counting.setText(f"tokens: {c.name}" + ("" if c.exact else " — an estimate; exact counts follow"))
        self.counting.set_pick(None if c.exact else lambda t: t.caution)
        pinned = int(plan.pinned.sum())
        when = "" if self.state.as_of is None else " · as of the moment the window shows"
        self.summary.setText(
            f"{len(plan.rows):,} of {plan.candidates:,} memories in · {plan.used:,} of {plan.usable:,} usable tokens "
            f"(budget {plan.budget:,} less {plan.budget - plan.usable:,} margin)"
            + (f" · {pinned} protected pinned" if pinned else "")
            + (f" · {len(plan.evicted):,} evicted" if len(plan.evicted) else "") + when
            + "".join(f"\n{n}" for n in plan.notes))

    def show_cut(self) -> None:
        """Scroll the list so the cut line and the memories below it are in view."""
        if self.plan is not None:
            self.view.scrollTo(self.model.index(self.model.rowCount() - 1, 0))
            self.view.scrollTo(self.model.index(max(self.model.n_in - 3, 0), 0), QAbstractItemView.PositionAtTop)

    # ------------------------------------------------------------ out
    def assembled_text(self) -> str:
        """The exact text that would be sent ('' before a plan exists)."""
        texts = self.texts()
        return "" if self.plan is None or texts is None else self.plan.text(texts)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.assembled_text())

    def save_dialog(self) -> None:
        if self.plan is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Save the assembled context", "context.txt",
                                              "Text (*.txt);;The whole plan as JSON (*.json)")
        if path:
            try:
                self.save(path)
            except OSError as e:
                self.summary.setText(f"Could not save {path}: {e}")

    def save(self, path: str) -> None:
        """.json: the whole plan (as `memviz context --json`); anything else: the text alone."""
        if path.lower().endswith(".json"):
            out = report(self.plan, self.state.data.arrays, self.texts(), self.counter, as_of=self.state.as_of)
            with open(path, "w", encoding="utf-8") as f:
                json.dump(out, f, ensure_ascii=False, indent=1)
        else:
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(self.assembled_text())

    def _clicked(self, index) -> None:
        r = self.model.row_of(index.row())
        if r is not None:
            self.state.select([r], source=self, current=r)
