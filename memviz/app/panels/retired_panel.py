"""The "Retired" dock: superseded and soft-deleted memories with when and why, and Restore.

The list is `memviz.edits.retired(store)`, read again whenever the store data is reloaded
(an edit, an undo, the agent's write) — in the background, while the dock is shown; a hidden
dock (tabbed behind the table) only notes that it is stale.
Clicking a row selects that memory everywhere. A model over the list, so thousands of rows
cost nothing until they are scrolled into view. Restore and the enabled state go through the
edit controller it is given; its context menu is the window's, like every panel's
(`context_requested`).
"""
from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QItemSelection, QItemSelectionModel, QModelIndex, QPoint, Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHBoxLayout, QLabel, QPushButton, QTreeView, QVBoxLayout, QWidget

from memviz.app.plain_text import plain_tooltip
from memviz.app.workers import Workers
from memviz.edits import retired
from memviz.session.state import AppState
from memviz.words import count

LIMIT = 5000  # newest first; the count label says when there are more


class RetiredModel(QAbstractTableModel):
    HEADERS = ["retired (UTC)", "why", "kind", "id", "content"]

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.items: list = []

    def set_items(self, items: list) -> None:
        self.beginResetModel()
        self.items = items
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.items)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.HEADERS)

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation == Qt.Horizontal and role == Qt.DisplayRole:
            return self.HEADERS[section]
        return None

    def data(self, index, role=Qt.DisplayRole):
        m = self.items[index.row()]
        col = index.column()
        if role == Qt.UserRole:
            return m.id
        if role == Qt.DisplayRole:
            if col == 0:
                return m.retired_when
            if col == 1:
                return m.why + (f" — {m.note}" if m.note else "")
            if col == 4:
                return m.content.replace("\n", " ")[:300]
            return m.kind if col == 2 else m.id
        if role == Qt.ToolTipRole and col in (1, 4):
            return plain_tooltip(m.why if col == 1 else m.content[:2000])
        return None


class RetiredPanel(QWidget):
    context_requested = Signal(list, QPoint)

    def __init__(self, state: AppState, controller, workers: Workers, parent=None) -> None:
        super().__init__(parent)
        self.state, self.controller, self.workers = state, controller, workers
        self._row_of: dict[str, int] = {}
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
        self.model = RetiredModel(self)
        self.tree = QTreeView(rootIsDecorated=False, uniformRowHeights=True, allColumnsShowFocus=True)
        self.tree.setModel(self.model)
        self.tree.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.tree.setSelectionBehavior(QAbstractItemView.SelectRows)
        for col, w in enumerate((140, 300, 90, 150)):
            self.tree.setColumnWidth(col, w)
        self.tree.selectionModel().selectionChanged.connect(lambda *_a: self._chosen())
        self.tree.setContextMenuPolicy(Qt.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(
            lambda pos: self.context_requested.emit(self.chosen_ids(), self.tree.viewport().mapToGlobal(pos)))
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(top)
        lay.addWidget(self.tree, 1)
        state.data_changed.connect(lambda _d: self._data_changed())
        state.rows_changed.connect(lambda d: (len(d.retired) or len(d.restored)) and self._data_changed())
        state.selection_changed.connect(self._on_selection)
        state.as_of_changed.connect(self._on_as_of)
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

    @property
    def items(self) -> list:
        return self.model.items

    def row_of(self, memory_id: str) -> int | None:
        return self._row_of.get(memory_id)

    def _on_selection(self, rows, current, source) -> None:
        """Mark the retired memories among the window's selection (so Restore acts on them)."""
        if source is self:
            return
        self._mark(self.state.selected_ids)

    def _mark(self, ids) -> None:
        """Select these ids' rows in the list (only the selection's own rows: no pass over the list)."""
        sel = QItemSelection()
        last = self.model.columnCount() - 1
        for mid in ids:
            r = self._row_of.get(mid)
            if r is not None:
                sel.select(self.model.index(r, 0), self.model.index(r, last))
        sm = self.tree.selectionModel()
        sm.blockSignals(True)
        sm.select(sel, QItemSelectionModel.ClearAndSelect)
        sm.blockSignals(False)
        self.tree.viewport().update()
        self._update_button()

    def refresh(self) -> None:
        """Read the list in the background (it scans the audit log and the supersede links)."""
        self._stale = False
        data, store = self.state.data, self.controller.store
        if data is None or store is None:
            self._fill([])
            return
        self.workers.submit("retired", lambda _t: retired(store, limit=LIMIT), on_done=self._fill,
                            on_error=lambda e: self.count.setText(f"Could not read: {e}"))

    def _on_as_of(self, T) -> None:
        """As of T the list holds what was retired by then; restoring is an edit: not in the past."""
        self._update_button()
        self._data_changed()

    def _fill(self, items: list) -> None:
        data = self.state.data
        T = self.state.as_of
        if T is not None:
            items = [m for m in items if m.retired_at is not None and m.retired_at <= T]
        self.model.set_items(items)
        self._row_of = {m.id: r for r, m in enumerate(items)}
        total = 0 if data is None else data.counts["retired"]
        if T is not None:
            total = len(items)
        self.count.setText(count(total, "retired memory", "retired memories")
                           + (f" (newest {LIMIT:,} shown)" if total > LIMIT else "")
                           + ("" if T is None else " by the moment shown"))
        self._mark(self.state.selected_ids)

    def chosen_ids(self) -> list[str]:
        return [i.data(Qt.UserRole) for i in self.tree.selectionModel().selectedRows(0)]

    def _chosen(self) -> None:
        ids = self.chosen_ids()
        if ids:
            self.state.select_ids(ids, source=self)
        self._update_button()

    def _update_button(self) -> None:
        why = self.controller.read_only_reason()
        self.restore_button.setEnabled(not why and bool(self.chosen_ids()))
        self.restore_button.setToolTip(plain_tooltip(f"Not available — {why}") if why else
                                       "Make the chosen memories current again (Ctrl+Shift+R)")

    def restore_chosen(self) -> None:
        self.controller.run("restore", self.chosen_ids())
