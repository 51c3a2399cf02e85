"""Tools ▸ Consolidate…: preview decay (before -> after) and the soft-delete list, untick, apply.

The plan is made on a worker from the window's arrays (plan_consolidation reads only);
Apply performs memviz.reflect.undoable.Consolidate through ReflectTools.perform (undoable). Protected
memories never appear: the plan leaves them out and says how many it left alone.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from memviz.app.dialogs.buttons import action_and_close
from memviz.app.plain_text import plain_tooltip
from memviz.reflect import plan_consolidation
from memviz.reflect.consolidation import describe
from memviz.reflect.undoable import Consolidate
from memviz.store.clock import store_clock
from memviz.store.errors import StoreError

ALL = "(all agents)"


def _item(text, data=None, align=None) -> QTableWidgetItem:
    it = QTableWidgetItem(str(text))
    it.setFlags(Qt.ItemIsEnabled | Qt.ItemIsSelectable)
    if data is not None:
        it.setData(Qt.UserRole, data)
    if align is not None:
        it.setTextAlignment(align)
    return it


def _id_item(mid: str) -> QTableWidgetItem:
    it = _item(mid[:12] + ("…" if len(mid) > 12 else ""), mid)
    it.setToolTip(plain_tooltip(mid))
    return it


def _fit(t: QTableWidget) -> None:
    """Columns to their contents, except the last (content), which takes the remaining width."""
    for c in range(t.columnCount() - 1):
        t.resizeColumnToContents(c)


def _table(headers) -> QTableWidget:
    t = QTableWidget(0, len(headers))
    t.setHorizontalHeaderLabels(headers)
    t.verticalHeader().hide()
    t.setSelectionBehavior(QAbstractItemView.SelectRows)
    t.setEditTriggers(QAbstractItemView.NoEditTriggers)
    t.setWordWrap(False)
    t.verticalHeader().setDefaultSectionSize(t.fontMetrics().height() + 6)
    t.horizontalHeader().setSectionResizeMode(QHeaderView.Interactive)
    t.horizontalHeader().setStretchLastSection(True)
    return t


class ConsolidateDialog(QDialog):
    JOB = "consolidate-plan"

    def __init__(self, tools) -> None:
        super().__init__(tools.dialog_parent)
        self.tools, self.state, self.workers = tools, tools.state, tools.workers
        self.setWindowTitle("Consolidate")
        self.plan = None
        self.agent = QComboBox()
        data = self.state.data
        self.agent.addItem(ALL, None)
        for a in (data.agents if data is not None else []):
            self.agent.addItem(a or "(no agent)", a)
        self.agent.currentIndexChanged.connect(lambda *_: self.make_plan())
        self.summary = QLabel("Working out what decay would change …")
        self.summary.setTextFormat(Qt.PlainText)
        self.summary.setWordWrap(True)
        self.decay = _table(["id", "kind", "agent", "days since use", "confidence before → after", "content"])
        self.prune = _table(["soft-delete", "id", "kind", "agent", "confidence", "content"])
        self.prune.itemChanged.connect(self._ticked)
        for t in (self.decay, self.prune):
            t.itemClicked.connect(self._clicked)
        self.apply_button = QPushButton("Apply")
        self.apply_button.setEnabled(False)
        self.apply_button.clicked.connect(self.apply)

        def titled(text, w):
            box = QWidget()
            lay = QVBoxLayout(box)
            lay.setContentsMargins(0, 0, 0, 0)
            lay.addWidget(QLabel(text))
            lay.addWidget(w)
            return box

        split = QSplitter(Qt.Vertical)
        split.addWidget(titled("Decay (Ebbinghaus, facts and preferences)", self.decay))
        split.addWidget(titled("Below the confidence floor — untick what must stay", self.prune))
        self.clock = QLabel()  # ages are counted to the store's clock, not to the wall clock
        self.clock.setTextFormat(Qt.PlainText)
        if data is not None:
            c = store_clock(data.store, data.arrays)
            self.clock.setText(f"Clock: {c.describe()} (Tools ▸ Set store clock… changes it)")
        top = QHBoxLayout()
        top.addWidget(QLabel("Agent"))
        top.addWidget(self.agent, 1)
        top.addWidget(self.clock)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.summary)
        lay.addWidget(split, 1)
        lay.addLayout(action_and_close(self, self.apply_button))
        self.resize(820, 600)

    def make_plan(self) -> None:
        data = self.state.data
        if data is None:
            return
        store, arrays, agent = data.store, data.arrays, self.agent.currentData()
        self.apply_button.setEnabled(False)
        self.summary.setText("Working out what decay would change …")
        self.workers.submit(self.JOB,
                            lambda task: plan_consolidation(store, agent=agent, arrays=arrays, task=task),
                            on_done=self.show_plan, on_error=lambda e: self.summary.setText(f"Cannot plan: {e}"))

    def show_plan(self, plan) -> None:
        self.plan = plan
        data = self.state.data
        num = Qt.AlignRight | Qt.AlignVCenter
        self.decay.setRowCount(len(plan.decay))
        for r, d in enumerate(plan.decay):
            row = data.arrays.index_of(d.id) if data is not None else None
            preview = data.previews[row] if row is not None else ""
            for c, it in enumerate((_id_item(d.id), _item(d.kind), _item(d.agent), _item(f"{d.days:.1f}", align=num),
                                    _item(f"{d.before:.3g} → {d.after:.3g}", align=num), _item(preview))):
                self.decay.setItem(r, c, it)
        _fit(self.decay)
        self.prune.blockSignals(True)
        self.prune.setRowCount(len(plan.prune))
        for r, p in enumerate(plan.prune):
            box = QTableWidgetItem()
            box.setFlags(Qt.ItemIsEnabled | Qt.ItemIsUserCheckable | Qt.ItemIsSelectable)
            box.setCheckState(Qt.Checked if p.selected else Qt.Unchecked)
            box.setData(Qt.UserRole, p.id)
            self.prune.setItem(r, 0, box)
            content = " ".join(p.content.split())
            for c, it in enumerate((_id_item(p.id), _item(p.kind), _item(p.agent),
                                    _item(f"{p.confidence:.3g}", align=num),
                                    _item(content[:200])), 1):
                self.prune.setItem(r, c, it)
            self.prune.item(r, 5).setToolTip(plain_tooltip(p.content[:2000]))
        _fit(self.prune)
        self.prune.blockSignals(False)
        self._update_summary()

    def _update_summary(self) -> None:
        plan = self.plan
        self.summary.setText(describe(plan)[0].upper() + describe(plan)[1:] + ".")
        writable = not self.state.data.store.read_only
        self.apply_button.setEnabled(writable and bool(plan.decay or any(p.selected for p in plan.prune)))

    def _ticked(self, item: QTableWidgetItem) -> None:
        if self.plan is None or item.column() != 0:
            return
        self.plan.prune[item.row()].selected = item.checkState() == Qt.Checked
        self._update_summary()

    def _clicked(self, item: QTableWidgetItem) -> None:
        table = item.tableWidget()
        mid = table.item(item.row(), 0 if table is self.decay else 1).data(Qt.UserRole)
        if mid:
            self.state.select_ids([mid], source=self)

    def apply(self) -> None:
        try:
            action = Consolidate(self.plan)
        except StoreError as e:
            self.summary.setText(str(e))
            return
        if self.tools.perform(action):
            self.apply_button.setEnabled(False)
            self.summary.setText(f"Applied: {describe(self.plan)}. Edit ▸ Undo puts the values back.")
