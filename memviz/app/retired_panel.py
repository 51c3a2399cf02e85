"""The "Retired" dock: superseded and soft-deleted memories with when and why, and Restore.

The list is `memviz.edits.retired(store)`, read again whenever the store data is reloaded
(an edit, an undo, the agent's write) — while the dock is shown; a hidden dock (tabbed behind
the table) only notes that it is stale, since reading it scans the audit log and provenance.
Clicking a row selects that memory everywhere.
"""
from __future__ import annotations

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView, QHBoxLayout, QLabel, QPushButton, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget,
)

from memviz.edits import retired
from memviz.store import iso

from .state import AppState

LIMIT = 5000  # newest first; the count label says when there are more


class RetiredPanel(QWidget):
    context_requested = Signal(list, QPoint)

    def __init__(self, state: AppState, controller, parent=None) -> None:
        super().__init__(parent)
        self.state, self.controller = state, controller
        self.items: list = []
        self._item_of: dict[str, QTreeWidgetItem] = {}
        self._stale = True
        self._shown = False  # the dock's visibility (a tab behind the table is not shown)
        self.count = QLabel()
        self.count.setTextFormat(Qt.PlainText)
        self.restore_button = QPushButton("Restore")
        self.restore_button.setToolTip("Make the chosen memories current again (Ctrl+Shift+R)")
        self.restore_button.clicked.connect(self.restore_chosen)
        top = QHBoxLayout()
        top.addWidget(self.count, 1)
        top.addWidget(self.restore_button)
        self.tree = QTreeWidget(headerLabels=["retired (UTC)", "why", "kind", "id", "content"], rootIsDecorated=False)
        self.tree.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.tree.setUniformRowHeights(True)
        for col, w in enumerate((140, 300, 90, 150)):
            self.tree.setColumnWidth(col, w)
        self.tree.itemSelectionChanged.connect(self._chosen)
        self.tree.setContextMenuPolicy(Qt.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(
            lambda pos: self.context_requested.emit(self.chosen_ids(), self.tree.viewport().mapToGlobal(pos)))
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(top)
        lay.addWidget(self.tree, 1)
        self.context_requested.connect(lambda ids, pos: controller.window.show_context_menu(ids, pos))
        state.data_changed.connect(lambda _d: self._data_changed())
        state.selection_changed.connect(self._on_selection)
        self._data_changed()

    def _data_changed(self) -> None:
        self._stale = True
        if self._shown:
            self.refresh()

    def set_shown(self, shown: bool) -> None:
        """Connected to the dock's visibilityChanged: a stale list is read when it comes into view."""
        self._shown = shown
        if shown and self._stale:
            self.refresh()

    def _on_selection(self, rows, current, source) -> None:
        """Mark the retired memories among the window's selection (so Restore acts on them)."""
        if source is self:
            return
        self.tree.blockSignals(True)
        self.tree.clearSelection()
        for mid in self.state.selected_ids:  # only the selection's own rows: no pass over the whole list
            item = self._item_of.get(mid)
            if item is not None:
                item.setSelected(True)
        self.tree.blockSignals(False)
        self._update_button()

    def refresh(self) -> None:
        self._stale = False
        data = self.state.data
        keep = set(self.state.selected_ids)
        self.tree.clear()
        self._item_of = {}
        store = self.controller.store
        self.items = [] if data is None or store is None else retired(store, limit=LIMIT)
        total = 0 if data is None else data.counts["retired"]
        self.count.setText(f"{total:,} retired memories" + (f" (newest {LIMIT:,} shown)" if total > LIMIT else ""))
        self.tree.blockSignals(True)
        for m in self.items:
            text = m.content.replace("\n", " ")
            item = QTreeWidgetItem([iso(m.retired_at), m.why + (f" — {m.note}" if m.note else ""), m.kind, m.id,
                                    text[:300]])
            item.setData(0, Qt.UserRole, m.id)
            self._item_of[m.id] = item
            item.setToolTip(4, text[:2000])
            item.setToolTip(1, m.why)
            self.tree.addTopLevelItem(item)
            item.setSelected(m.id in keep)
        self.tree.blockSignals(False)
        self._update_button()

    def chosen_ids(self) -> list[str]:
        return [i.data(0, Qt.UserRole) for i in self.tree.selectedItems()]

    def _chosen(self) -> None:
        ids = self.chosen_ids()
        if ids:
            self.state.select_ids(ids, source=self)
        self._update_button()

    def _update_button(self) -> None:
        why = self.controller.read_only_reason()
        self.restore_button.setEnabled(not why and bool(self.chosen_ids()))
        self.restore_button.setToolTip(f"Not available — {why}" if why else
                                       "Make the chosen memories current again (Ctrl+Shift+R)")

    def restore_chosen(self) -> None:
        self.controller.run("restore", self.chosen_ids())
