"""Memory table: every memory in a sortable, filterable, searchable model over the arrays.

The model holds one int array `order` (the rows shown, in display order); sorting picks the
shown rows from each column's stable order of all rows, made once, and searching is a pass over
the lower-cased previews, narrowed while the user types on (memviz.session.table_order), so
both stay within a few hundred milliseconds at 1M rows. Cells are formatted only when Qt asks
for them (the visible ones).
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QItemSelection, QItemSelectionModel, QModelIndex, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QTableView, QVBoxLayout, QWidget

from memviz.app.workers import PacedCall
from memviz.retrieval.rowmeta import load_row_meta
from memviz.session.refresh import grow
from memviz.session.state import AppState, StoreData
from memviz.session.table_order import ColumnOrders, TextSearch
from memviz.store import iso
from memviz.store.records import UNREADABLE_TIME

FLAG = "⚠"  # the column of rows memviz could not read as written (details in the detail panel)

COLUMNS = ["kind", "agent", "importance", "event time", "content", "confidence", "accesses", "protected",
           "status", "id", FLAG]
# the MemoryArrays column each column sorts by (content, status and the flag are worked out)
SORTED_BY = {"kind": "kind", "agent": "agent", "importance": "importance", "event time": "event_time",
             "confidence": "confidence", "accesses": "access_count", "protected": "protected", "id": "ids"}
# columns a live refresh's changed rows may have changed that move rows in or out of the table
FILTERED_BY = {"valid_until", "event_time", "kind", "preview"}
MAX_SELECTION_RUNS = 4000  # beyond this many separate runs the view shows the first ones only


class MemoryTableModel(QAbstractTableModel):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.data_: StoreData | None = None
        self.order = np.zeros(0, np.int64)
        self._lower: np.ndarray | None = None
        self._tags: list | None = None  # per row: its tags, read when a search asks for one (#tag)
        self._orders = ColumnOrders()   # per column, the stable order of all rows
        self._search = TextSearch()
        self._grey = QBrush(QColor(140, 140, 140))
        self._italic = QFont()
        self._italic.setItalic(True)

    def set_data(self, data: StoreData | None) -> None:
        self.beginResetModel()
        self.data_ = data
        self._orders.clear()
        self._search.clear()
        self._lower = None if data is None else np.array([p.lower() for p in data.previews], dtype=object)
        self._tags = None
        self.order = np.zeros(0, np.int64) if data is None else np.arange(data.n)
        self.endResetModel()

    def update_rows(self, delta) -> None:
        """A live refresh: the lower-case texts searched, for added and changed rows only."""
        self._orders.clear()   # values and rows changed: orders and matches are made again
        self._search.clear()
        prev = self.data_.previews
        add = np.array([prev[r].lower() for r in delta.added.tolist()] + [""], dtype=object)[:-1]
        self._lower = grow(self._lower, add, patch=True)  # a buffer with spare rows: no 100k-row copy
        for r in delta.changed.tolist():
            self._lower[r] = prev[r].lower()
        self._tags = None

    def set_order(self, order: np.ndarray) -> None:
        self.layoutAboutToBeChanged.emit()
        self.order = order
        self.layoutChanged.emit()

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.order)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if role == Qt.DisplayRole and orientation == Qt.Horizontal:
            return COLUMNS[section]
        return None

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid() or self.data_ is None:
            return None
        r = int(self.order[index.row()])
        a = self.data_.arrays
        col = COLUMNS[index.column()]
        if role == Qt.DisplayRole:
            if col == "kind":
                return a.kind[r]
            if col == "agent":
                return a.agent[r]
            if col == "importance":
                return f"{a.importance[r]:g}"
            if col == "event time":
                return UNREADABLE_TIME if np.isnan(a.event_time[r]) else iso(a.event_time[r])
            if col == "content":
                return self.data_.previews[r]
            if col == "confidence":
                return f"{a.confidence[r]:.2f}"
            if col == "accesses":
                return str(int(a.access_count[r]))
            if col == "protected":
                return "yes" if a.protected[r] else ""
            if col == "status":
                return "current" if np.isnan(a.valid_until[r]) else "retired " + iso(a.valid_until[r])[:10]
            if col == "id":
                return a.ids[r]
            if col == FLAG:
                return FLAG if _flags(a, r) else ""
        elif role == Qt.ToolTipRole and col == FLAG:
            return "; ".join(_flags(a, r)) or None
        elif role == Qt.ForegroundRole and not np.isnan(a.valid_until[r]):
            return self._grey
        elif role == Qt.FontRole and not np.isnan(a.valid_until[r]):
            return self._italic
        elif role == Qt.TextAlignmentRole and col in ("importance", "confidence", "accesses"):
            return int(Qt.AlignRight | Qt.AlignVCenter)
        return None

    def sort_key(self, column: int, rows: np.ndarray | None = None) -> np.ndarray:
        """The values column `column` sorts by, of every row (or of `rows`)."""
        a = self.data_.arrays
        col = COLUMNS[column]
        if col == "content":
            values = self.data_.previews
        elif col == "status":
            values = a.valid_until
        elif col == FLAG:
            values = flagged(a)
        else:
            values = getattr(a, SORTED_BY[col])
        values = values if rows is None else values[rows]
        return np.nan_to_num(values, nan=np.inf) if col == "status" else values

    def shown_in_order(self, column: int, shown: np.ndarray) -> np.ndarray:
        """The rows where `shown` is True, stably sorted by `column` ascending (what a stable
        argsort of their keys gives; from the column's order of all rows, made on first use)."""
        return self._orders.shown_in_order(column, lambda: self.sort_key(column), (self.data_, self.data_.arrays),
                                           shown)

    def search_mask(self, text: str, then: dict | None = None) -> np.ndarray:
        """Rows whose preview or id contains `text` (`#tag`: rows with that tag); `then`: {row: text}
        of the rows whose text was different at the moment shown (AsOfView.content), searched as it was."""
        if not text.strip() or self.data_ is None:
            return np.ones(0 if self.data_ is None else self.data_.n, bool)
        ids = self.data_.arrays.ids
        tag = text.strip().lower()
        if tag.startswith("#") and len(tag) > 1:  # a tag, e.g. #working-memory (HTM's working memory)
            if self._tags is None or len(self._tags) != len(ids):
                self._tags = [frozenset(t.lower() for t in ts)
                              for ts in load_row_meta(self.data_.store, self.data_.arrays.rowid).tags]
            return np.fromiter((tag[1:] in ts for ts in self._tags), bool, count=len(ids))
        mask = self._search.mask(self._lower, ids, text)
        if then:
            mask = mask.copy()  # the search's cache keeps the present's answer
            for r in then:
                mask[r] = tag in self.data_.previews[r].lower() or tag in ids[r]  # the as-of preview
        return mask


def flagged(a) -> np.ndarray:
    """Per row: memviz could not read something of it as written (the row reader's flags)."""
    out = a.bad_json | a.bad_text
    return out | a.bad_value if a.bad_value is not None else out


def _flags(a, r: int) -> list[str]:
    bad_value = a.bad_value is not None and a.bad_value[r]
    return [why for flag, why in ((a.bad_value is not None and bad_value, "a time or number cannot be read"),
                                  (a.bad_text[r], "text that is not valid UTF-8"),
                                  (a.bad_json[r], "a JSON column is malformed")) if flag]


class TablePanel(QWidget):
    """The memory table with a search box and a kind filter."""

    context_requested = Signal(list, QPoint)  # (ids, global position) for the window's context-menu hooks

    def __init__(self, state: AppState, parent=None) -> None:
        super().__init__(parent)
        self.state = state
        self.model = MemoryTableModel(self)
        self.search = QLineEdit(placeholderText="Search content or id, #tag for a tag…  (Ctrl+F)")
        self.search.setClearButtonEnabled(True)
        self.kind = QComboBox()
        self.count = QLabel()
        self.view = QTableView()
        self.view.setModel(self.model)
        self.view.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.view.setSortingEnabled(False)  # the model sorts itself with numpy (header clicks below)
        self.view.horizontalHeader().setSectionsClickable(True)
        self.view.horizontalHeader().setSortIndicatorShown(True)
        self.view.horizontalHeader().sectionClicked.connect(self._header_clicked)
        self.view.verticalHeader().setVisible(False)
        self.view.verticalHeader().setDefaultSectionSize(22)
        self.view.verticalHeader().setSectionResizeMode(QHeaderView.Fixed)
        self.view.setWordWrap(False)
        self.view.setContextMenuPolicy(Qt.CustomContextMenu)
        self.view.customContextMenuRequested.connect(
            lambda pos: self.context_requested.emit(self.state.selected_ids, self.view.viewport().mapToGlobal(pos)))
        h = self.view.horizontalHeader()
        for i, w in enumerate([76, 76, 80, 140, 360, 85, 75, 75, 120, 250, 28]):
            h.resizeSection(i, w)
        h.moveSection(COLUMNS.index(FLAG), 0)  # shown first; its logical index stays last
        # the text right after who wrote it: a narrow table still shows it (the numbers follow)
        h.moveSection(h.visualIndex(COLUMNS.index("content")), h.visualIndex(COLUMNS.index("agent")) + 1)
        h.setStretchLastSection(False)
        top = QHBoxLayout()
        top.addWidget(self.search, 1)
        top.addWidget(QLabel("kind"))
        top.addWidget(self.kind)
        top.addWidget(self.count)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addLayout(top)
        lay.addWidget(self.view)
        self._sort = (3, Qt.AscendingOrder)
        self._applying = False
        self._refilter_timer = QTimer(self, singleShot=True, interval=150, timeout=self.refilter)
        self._live = PacedCall(lambda: self.refilter(keep_top=self._live_top), self)  # coalesced and paced
        self._live_top: str | None = None
        self.search.textChanged.connect(lambda: self._refilter_timer.start())
        self.kind.currentIndexChanged.connect(lambda: self.refilter())
        self.view.selectionModel().selectionChanged.connect(self._view_selection_changed)
        state.data_changed.connect(self._on_data)
        state.rows_changed.connect(self._on_rows)
        state.selection_changed.connect(self._on_selection)
        state.time_filter_changed.connect(lambda _r: self.refilter())
        state.show_retired_changed.connect(lambda _s: self.refilter())
        state.as_of_changed.connect(lambda _t: self.refilter())  # rows and values as of the moment shown

    # ------------------------------------------------------------ state -> view
    def _on_data(self, data: StoreData | None) -> None:
        """Another store: search, kind filter and scroll start afresh (the sort is the user's
        habit and stays). The same store read again: all of them stay."""
        again = self.state.reloaded
        top = self._top_id() if again else None
        kind = self.kind.currentText() if again else "all"
        self.model.set_data(data)
        self.kind.blockSignals(True)
        self.kind.clear()
        self.kind.addItem("all")
        if data is not None:
            self.kind.addItems(data.kinds)
        self.kind.setCurrentIndex(max(0, self.kind.findText(kind)))
        self.kind.blockSignals(False)
        if not again:
            self.search.blockSignals(True)
            self.search.clear()
            self.search.blockSignals(False)
            self._refilter_timer.stop()
        self.refilter(keep_top=top)

    def _on_rows(self, delta) -> None:
        """A live refresh: new rows enter the filtered, sorted order (in the next event-loop turn,
        once for refreshes that come together); the row at the top of the viewport, the filters
        and the selection stay."""
        if not self._live.isActive():
            self._live_top = self._top_id()
        self.model.update_rows(delta)
        known = {self.kind.itemText(i) for i in range(self.kind.count())}
        self.kind.blockSignals(True)
        self.kind.addItems([k for k in self.state.data.kinds if k not in known])
        self.kind.blockSignals(False)
        if self._live.isActive() or not self._insert(delta):
            self._live.request()

    def _insert(self, delta) -> bool:
        """New rows into the sorted order where they belong (a binary search, not a sort of
        every row), when nothing else can move: False when a changed row's sorted or filtered
        value changed, or the window shows a past moment (then refilter)."""
        data = self.state.data
        col = COLUMNS[self._sort[0]]
        moved = FILTERED_BY | {{"content": "preview", "status": "valid_until"}.get(col, SORTED_BY.get(col))}
        if delta.fields & moved or self.state.as_of is not None or (col == FLAG and delta.fields):
            return False
        if len(delta.changed) and self._on_screen(delta.changed):
            self.view.viewport().update()  # e.g. a recall's count: cells drawn again, rows stay
        rows = delta.added
        if not len(rows):
            return True
        a = data.arrays
        keep = np.ones(len(rows), bool)
        if not self.state.show_retired:
            keep &= a.live[rows]
        if self.state.time_range is not None:
            lo, hi = self.state.time_range
            keep &= (a.event_time[rows] >= lo) & (a.event_time[rows] <= hi)
        if self.kind.currentIndex() > 0:
            keep &= a.kind[rows] == self.kind.currentText()
        text = self.search.text().strip().lower()
        if text:
            keep &= np.array([(text in self.model._lower[r]) or (text in a.ids[r]) for r in rows.tolist()], bool)
        rows = rows[keep]
        if len(rows):
            top = self._top_id()
            order = self.model.order
            descending = self._sort[1] == Qt.DescendingOrder
            asc = order[::-1] if descending else order
            key, new_key = self.model.sort_key(self._sort[0], asc), self.model.sort_key(self._sort[0], rows)
            by = np.argsort(new_key, kind="stable")  # new rows are the last rows: after equal keys, as the sort puts them
            rows, new_key = rows[by], new_key[by]
            at = np.searchsorted(key, new_key, side="right")
            asc = np.insert(asc, at, rows)
            self.model.set_order(asc[::-1].copy() if descending else asc)
            self._after_order(top)
        return True

    def _on_screen(self, rows: np.ndarray) -> bool:
        """Whether any of `rows` is in the viewport (a recall elsewhere repaints nothing)."""
        order = self.model.order
        first = self.view.rowAt(0)
        if first < 0 or not len(order):
            return False
        last = self.view.rowAt(self.view.viewport().height() - 1)
        return bool(np.isin(order[first:(last + 1 if last >= 0 else len(order))], rows).any())

    def _top_id(self) -> str | None:
        """The memory in the first row the viewport shows."""
        r = self.view.rowAt(0)
        order, data = self.model.order, self.state.data
        return None if r < 0 or r >= len(order) or data is None else data.arrays.ids[order[r]]

    def refilter(self, keep_top: str | None = None) -> None:
        """Filter and sort again; `keep_top`: the memory to keep at the top of the viewport (a
        refresh), instead of scrolling to the current row."""
        data = self.state.data
        if data is None:
            self.count.setText("")
            return
        mask = self.state.visible_mask()
        if self.kind.currentIndex() > 0:
            mask &= data.arrays.kind == self.kind.currentText()
        view = self.state.as_of_view
        if self.search.text().strip():
            mask &= self.model.search_mask(self.search.text(), view.content if view is not None else None)
        order = self.model.shown_in_order(self._sort[0], mask)
        if self._sort[1] == Qt.DescendingOrder:
            order = order[::-1]
        self.model.set_order(order)
        self.view.horizontalHeader().setSortIndicator(*self._sort)
        self._after_order(keep_top)

    def _after_order(self, keep_top: str | None) -> None:
        """The count, the selection and the scroll position for a new order."""
        data, order, view = self.state.data, self.model.order, self.state.as_of_view
        of = data.n if view is None else int(view.visible.sum())  # as of T: of the memories there then
        self.count.setText(f"{len(order):,} of {of:,}")
        self._on_selection(self.state.selection, self.state.current, None, scroll=keep_top is None)
        if keep_top is not None:
            r = data.arrays.index_of(keep_top)
            at = np.flatnonzero(order == r) if r is not None else []
            if len(at):
                self.view.scrollTo(self.model.index(int(at[0]), 0), QAbstractItemView.PositionAtTop)

    def _header_clicked(self, section: int) -> None:
        same = self._sort[0] == section and self._sort[1] == Qt.AscendingOrder
        self._sort = (section, Qt.DescendingOrder if same else Qt.AscendingOrder)
        self.refilter()

    def _on_selection(self, rows: np.ndarray, current, source, scroll: bool = True) -> None:
        if source is self:
            return
        order = self.model.order
        self._applying = True
        try:
            sm = self.view.selectionModel()
            if len(rows) == 0 or len(order) == 0:
                sm.clearSelection()
                return
            pos = np.flatnonzero(np.isin(order, rows))
            sel = QItemSelection()
            if len(pos):
                breaks = np.flatnonzero(np.diff(pos) != 1)
                starts = np.r_[pos[0], pos[breaks + 1]]
                ends = np.r_[pos[breaks], pos[-1]]
                last = self.model.columnCount() - 1
                for s, e in list(zip(starts, ends))[:MAX_SELECTION_RUNS]:
                    sel.select(self.model.index(int(s), 0), self.model.index(int(e), last))
            sm.select(sel, QItemSelectionModel.ClearAndSelect)
            if current is not None:
                at = np.flatnonzero(order == current)
                if len(at):
                    idx = self.model.index(int(at[0]), 0)
                    sm.setCurrentIndex(idx, QItemSelectionModel.NoUpdate)
                    if scroll:
                        self.view.scrollTo(idx)
        finally:
            self._applying = False

    # ------------------------------------------------------------ view -> state
    def _view_selection_changed(self, *_):
        if self._applying or self.state.data is None:
            return
        pos = np.array(sorted({i.row() for i in self.view.selectionModel().selectedRows()}), dtype=np.int64)
        rows = self.model.order[pos] if len(pos) else np.zeros(0, np.int64)
        cur = self.view.selectionModel().currentIndex()
        current = int(self.model.order[cur.row()]) if cur.isValid() and len(pos) and cur.row() in set(pos.tolist()) else -1
        self.state.select(rows, source=self, current=current)

    # ------------------------------------------------------------ for the window
    def focus_search(self) -> None:
        self.search.setFocus()
        self.search.selectAll()

    def shown_rows(self) -> np.ndarray:
        return self.model.order
