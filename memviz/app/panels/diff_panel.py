"""Diff panel: what changed between two moments of the open store, between the open store and
another store file, or between two agents in the open store (memviz.context.diff).

Lists memories added, retired, corrected (old → new text side by side below the list),
importance / protection / tag changes, reflections gained with their evidence, and, given a
query, how its top k moved. Selecting a change selects its memories everywhere. A diff runs
off the GUI thread (bench/time_travel.py measures it).
"""
from __future__ import annotations

import os
import time

from PySide6.QtCore import QDateTime, QPoint, Qt, QTimeZone, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDateTimeEdit,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

import memviz.frameworks as frameworks
import memviz.store as ms
from memviz.app.workers import Workers
from memviz.context import diff_agents, diff_moments, diff_stores, heading
from memviz.session.state import AppState, StoreData

EVIDENCE = Qt.UserRole + 1  # item data: the line lists a reflection's evidence
MODES = ("two moments of this store", "this store and another store file", "two agents in this store")


def _text(v) -> str:
    if v is None:
        return ""
    if isinstance(v, (list, tuple)):
        return ", ".join(str(x) for x in v)
    return str(v)


class DiffPanel(QWidget):
    """compared(diff, seconds): a diff is on screen (tests wait on it)."""

    context_requested = Signal(list, QPoint)
    compared = Signal(object, float)

    def __init__(self, state: AppState, workers: Workers, parent=None) -> None:
        super().__init__(parent)
        self.state, self.workers = state, workers
        self.diff = None
        self.mode = QComboBox()
        self.mode.addItems(list(MODES))
        # moments
        self.t1 = self._date_box()
        self.t2 = self._date_box()
        self.to_now = QCheckBox("now", checked=True)
        self.t2.setEnabled(False)
        self.from_scrubber = QPushButton("From the scrubber")
        self.from_scrubber.setToolTip("Compare the moment the window shows with now")
        moments = QWidget()
        ml = QGridLayout(moments)
        ml.setContentsMargins(0, 0, 0, 0)
        ml.addWidget(QLabel("from"), 0, 0)
        ml.addWidget(self.t1, 0, 1)
        ml.addWidget(self.from_scrubber, 0, 2)
        ml.addWidget(QLabel("to"), 1, 0)
        ml.addWidget(self.t2, 1, 1)
        ml.addWidget(self.to_now, 1, 2)
        # another store
        self.other = QLineEdit(placeholderText="another store file (.db)")
        self.choose = QPushButton("Choose…")
        other = QWidget()
        ol = QHBoxLayout(other)
        ol.setContentsMargins(0, 0, 0, 0)
        ol.addWidget(self.other, 1)
        ol.addWidget(self.choose)
        # two agents
        self.agent_a, self.agent_b = QComboBox(), QComboBox()
        agents = QWidget()
        al = QHBoxLayout(agents)
        al.setContentsMargins(0, 0, 0, 0)
        al.addWidget(self.agent_a, 1)
        al.addWidget(QLabel("vs"))
        al.addWidget(self.agent_b, 1)
        self.pages = QStackedWidget()
        for w in (moments, other, agents):
            self.pages.addWidget(w)
        self.query = QLineEdit(placeholderText="query (optional): how its top k changed")
        self.query.setClearButtonEnabled(True)
        self.run_button = QPushButton("Compare")
        self.message = QLabel()
        self.message.setTextFormat(Qt.PlainText)
        self.message.setWordWrap(True)
        self.tree = QTreeWidget(headerLabels=["change", "memory", "before", "after"])
        self.tree.setColumnWidth(0, 260)
        self.tree.setColumnWidth(1, 120)
        self.tree.setColumnWidth(2, 160)
        self.tree.setUniformRowHeights(True)
        self.tree.setContextMenuPolicy(Qt.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(
            lambda pos: self.context_requested.emit(self.state.selected_ids, self.tree.viewport().mapToGlobal(pos)))
        self.before = QPlainTextEdit(readOnly=True, placeholderText="before")
        self.after = QPlainTextEdit(readOnly=True, placeholderText="after")
        sides = QSplitter(Qt.Horizontal)
        sides.addWidget(self.before)
        sides.addWidget(self.after)
        split = QSplitter(Qt.Vertical)
        split.addWidget(self.tree)
        split.addWidget(sides)
        split.setSizes([300, 120])
        top = QHBoxLayout()
        top.addWidget(self.mode, 1)
        top.addWidget(self.run_button)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(top)
        lay.addWidget(self.pages)
        lay.addWidget(self.query)
        lay.addWidget(self.message)
        lay.addWidget(split, 1)

        self.mode.currentIndexChanged.connect(self.pages.setCurrentIndex)
        self.to_now.toggled.connect(lambda on: self.t2.setEnabled(not on))
        self.from_scrubber.clicked.connect(self.from_the_scrubber)
        self.choose.clicked.connect(self._choose_other)
        self.run_button.clicked.connect(self.compare)
        self.query.returnPressed.connect(self.compare)
        self.tree.currentItemChanged.connect(lambda item, _old: self._chosen(item))
        state.data_changed.connect(self._on_data)
        state.result_changed.connect(lambda _r: self._follow_query())
        self._auto_query = ""
        self._on_data(state.data)

    @staticmethod
    def _date_box() -> QDateTimeEdit:
        box = QDateTimeEdit(displayFormat="yyyy-MM-dd HH:mm:ss 'UTC'", calendarPopup=True)
        box.setTimeZone(QTimeZone.utc())
        return box

    @staticmethod
    def _set_date(box: QDateTimeEdit, T: float) -> None:
        box.setDateTime(QDateTime.fromSecsSinceEpoch(int(T), QTimeZone.utc()))

    def _on_data(self, data: StoreData | None) -> None:
        self.workers.cancel("diff")
        self.diff = None
        self.tree.clear()
        self.message.setText("")
        for combo in (self.agent_a, self.agent_b):
            combo.clear()
            combo.addItems(data.agents if data is not None else [])
        if data is not None and len(data.agents) > 1:
            self.agent_b.setCurrentIndex(1)
        self.run_button.setEnabled(data is not None)
        if data is not None:
            lo, hi = data.store.time_span()
            if lo is not None:
                self._set_date(self.t1, lo + (hi - lo) / 2)
                self._set_date(self.t2, hi)

    def _follow_query(self) -> None:
        """The query box shows the query panel's current text unless the user typed another."""
        text = self.state.query_text or ""
        if text and self.query.text() in ("", self._auto_query):
            self.query.setText(text)
            self._auto_query = text

    def from_the_scrubber(self) -> None:
        """Compare the moment the window shows (its scrubber) with now."""
        if self.state.as_of is not None:
            self._set_date(self.t1, self.state.as_of)
        self.to_now.setChecked(True)
        self.mode.setCurrentIndex(0)

    def _choose_other(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Another memory store", "",
                                              "Memory stores (*.db *.sqlite *.sqlite3);;All files (*)")
        if path:
            self.other.setText(path)
            self.mode.setCurrentIndex(1)

    # ------------------------------------------------------------ running
    def compare(self) -> None:
        data = self.state.data
        if data is None:
            return
        mode = self.mode.currentIndex()
        query = self.query.text().strip() or None
        p = self.state.params
        preset, k = p.preset, p.k
        store = data.store
        if mode == 0:
            t1 = float(self.t1.dateTime().toSecsSinceEpoch())
            t2 = None if self.to_now.isChecked() else float(self.t2.dateTime().toSecsSinceEpoch())
            timeline = self.state.timeline()

            def job(task):
                return diff_moments(store, timeline, t1, t2, query=query, preset=preset, k=k)
        elif mode == 1:
            path = self.other.text().strip()
            if not path:
                self.message.setText("Choose the store file to compare with.")
                return
            arrays = self.state.loaded_arrays

            def job(task):
                if not os.path.exists(path):
                    raise ValueError(f"no such file: {path}")
                with frameworks.open_source(path, read_only=True) as other:
                    return diff_stores(store, other, arrays_a=arrays, query=query, preset=preset, k=k)
        else:
            a, b = self.agent_a.currentText(), self.agent_b.currentText()
            if not a or not b or a == b:
                self.message.setText("Choose two different agents.")
                return
            arrays, view = self.state.loaded_arrays, self.state.as_of_view

            def job(task):
                return diff_agents(store, arrays, a, b, view=view)
        self.message.setText("comparing…")
        t0 = time.perf_counter()
        self.workers.submit("diff", job, on_done=lambda d: self._show(d, time.perf_counter() - t0),
                            on_error=self._failed)

    def _failed(self, err: Exception) -> None:
        text = str(err) if isinstance(err, (ValueError, OSError, ms.StoreError)) else f"{type(err).__name__}: {err}"
        self.message.setText(f"Could not compare: {text}")

    def _show(self, diff, seconds: float) -> None:
        self.diff = diff
        self.tree.clear()
        self.before.clear()
        self.after.clear()
        groups: dict[str, QTreeWidgetItem] = {}
        counts = diff.counts()
        for c in diff.changes:
            top = groups.get(c.kind)
            if top is None:
                top = groups[c.kind] = QTreeWidgetItem([heading(c.kind, counts[c.kind])])
                top.setFlags(Qt.ItemIsEnabled)
                self.tree.addTopLevelItem(top)
            item = QTreeWidgetItem([c.summary, ", ".join(c.ids), _text(c.before)[:200], _text(c.after)[:200]])
            item.setData(0, Qt.UserRole, c)
            if c.evidence:  # a reflection gained: its evidence below it (choosing that line selects the evidence)
                ev = QTreeWidgetItem([f"evidence: {len(c.evidence)} memories", ", ".join(c.evidence)])
                ev.setData(0, Qt.UserRole, c)
                ev.setData(0, EVIDENCE, True)
                item.addChild(ev)
            top.addChild(item)
        for top in groups.values():
            top.setExpanded(top.childCount() <= 25)  # long groups stay folded: the rare kinds show first
        total = len(diff.changes)
        self.message.setText(f"{diff.a_label} → {diff.b_label}: {total:,} change{'s' * (total != 1)} "
                             f"({seconds:.2f} s)" + "".join(f"\nnote: {n}" for n in diff.notes))
        self.compared.emit(diff, seconds)

    def _chosen(self, item: QTreeWidgetItem | None) -> None:
        """A change: its memories selected everywhere, its before/after side by side."""
        if item is None:
            return
        change = item.data(0, Qt.UserRole)
        if change is None:
            return
        ids = list(change.evidence if item.data(0, EVIDENCE) else change.ids)
        self.before.setPlainText(_text(change.before))
        self.after.setPlainText(_text(change.after))
        if ids:
            self.state.select_ids(ids, source=self)
