"""Memory table: every memory in a sortable, filterable, searchable model over the arrays.

The model holds one int array `order` (the rows shown, in display order); sorting picks the
shown rows from each column's stable order of all rows, made once, and searching is a numpy
pass over the lower-cased previews and ids, narrowed while the user types on
(memviz.session.table_order), so both stay within a few hundred milliseconds at 1M rows. From
BACKGROUND_ROWS rows on they run in a worker (the newest request wins, the search box never
waits), and right after a store opens a worker makes the search buffers and every column's
order, so the first search and the first click on a header find them made; a header whose
order is still being made says so. Cells are formatted only when Qt asks for them (the visible ones).
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QItemSelection, QItemSelectionModel, QModelIndex, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QTableView, QVBoxLayout, QWidget

from memviz.app.plots import style
from memviz.app.workers import PacedCall, Workers
from memviz.retrieval.rowmeta import load_row_meta
from memviz.session.state import AppState, StoreData
from memviz.session.table_order import MOVED_MAX, ColumnOrders, TextSearch, insert_sorted
from memviz.store import iso
from memviz.store.records import UNREADABLE_TIME

FLAG = "⚠"  # the column of rows memviz could not read as written (details in the detail panel)

COLUMNS = ["kind", "agent", "importance", "event time", "content", "confidence", "accesses", "protected",
           "status", "id", FLAG]
# the MemoryArrays column each column sorts by (content, status and the flag are worked out)
SORTED_BY = {"kind": "kind", "agent": "agent", "importance": "importance", "event time": "event_time",
             "confidence": "confidence", "accesses": "access_count", "protected": "protected", "id": "ids"}
MAX_SELECTION_RUNS = 4000  # beyond this many separate runs the view shows the first ones only
BACKGROUND_ROWS = 50_000   # from this many rows on, searches and sorts run in a worker
# the orders made ahead after a store opens: the texts first (the slow ones), then the numbers
AHEAD = ["content", "id", "agent", "kind", "event time", "importance", "confidence", "accesses", "status",
         "protected", FLAG]


class MemoryTableModel(QAbstractTableModel):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.data_: StoreData | None = None
        self.order = np.zeros(0, np.int64)
        self._tags: list | None = None  # per row: its tags, read when a search asks for one (#tag)
        self._orders = ColumnOrders()   # per column, the stable order of all rows
        self._search = TextSearch()     # the lower-cased previews and ids, searched
        self.preparing: int | None = None  # the column whose order a worker is making for the view
        self._italic = QFont()
        self._italic.setItalic(True)

    def set_data(self, data: StoreData | None) -> None:
        self.beginResetModel()
        self.data_ = data
        self._orders.clear()
        if data is None:
            self._search.reset(np.zeros(0, object), np.zeros(0, object))
        else:
            self._search.reset(data.previews, data.arrays.ids)  # lower-cased when first searched, or ahead
        self._tags = None
        self.preparing = None
        self.order = np.zeros(0, np.int64) if data is None else np.arange(data.n)
        self.endResetModel()

    def update_rows(self, delta) -> None:
        """A live refresh: the orders of all rows are kept (added rows are merged in on next use,
        changed ones moved where their new value puts them), the texts searched are told which
        rows came and changed."""
        keep = {c for c in range(len(COLUMNS)) if not key_fields(COLUMNS[c]) & delta.fields}
        self._orders.rows_changed((self.data_, self.data_.arrays), keep, delta.changed)
        self._search.rows_changed(self.data_.previews, self.data_.arrays.ids, delta.added, delta.changed)
        self._tags = None

    def set_preparing(self, column: int | None) -> None:
        if column != self.preparing:
            self.preparing = column
            self.headerDataChanged.emit(Qt.Horizontal, 0, len(COLUMNS) - 1)

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
            return COLUMNS[section] + (" …" if section == self.preparing else "")
        if role == Qt.ToolTipRole and orientation == Qt.Horizontal and section == self.preparing:
            return "Sorting every memory by this column…"
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
            return QColor(style.theme().muted)  # retired: muted text of the palette now
        elif role == Qt.FontRole and not np.isnan(a.valid_until[r]):
            return self._italic
        elif role == Qt.TextAlignmentRole and col in ("importance", "confidence", "accesses"):
            return int(Qt.AlignRight | Qt.AlignVCenter)
        return None

    def sort_key(self, column: int, rows: np.ndarray | None = None, data: StoreData | None = None) -> np.ndarray:
        """The values column `column` sorts by, of every row (or of `rows`), of `data` (the model's)."""
        data = self.data_ if data is None else data
        a = data.arrays
        col = COLUMNS[column]
        if col == "content":
            values = data.previews
        elif col == "status":
            values = a.valid_until
        elif col == FLAG:
            values = flagged(a)
        else:
            values = getattr(a, SORTED_BY[col])
        values = values if rows is None else values[rows]
        return np.nan_to_num(values, nan=np.inf) if col == "status" else values

    def _orders_of(self, column: int, data: StoreData) -> tuple:
        return column, lambda: self.sort_key(column, data=data), (data, data.arrays)

    def order_ready(self, column: int, data: StoreData) -> bool:
        """The column's order of all rows of `data` is made (showing it is instant)."""
        col, _, source = self._orders_of(column, data)
        return self._orders.ready(col, source, data.n)

    def shown_in_order(self, column: int, shown: np.ndarray, data: StoreData | None = None,
                       task=None) -> np.ndarray | None:
        """The rows where `shown` is True, stably sorted by `column` ascending (what a stable
        argsort of their keys gives; from the column's order of all rows, made on first use).
        None: rows came while it ran (a newer request follows)."""
        return self._orders.shown_in_order(*self._orders_of(column, self.data_ if data is None else data), shown,
                                           task)

    def filtered_order(self, data: StoreData, shown: np.ndarray, text: str, then: dict | None, column: int,
                       task=None) -> np.ndarray | None:
        """The rows where `shown` is True whose text matches `text` (search_mask), in `column`'s
        stable ascending order; any thread (a worker past BACKGROUND_ROWS). None: stale."""
        if text.strip():
            mask = self.search_mask(text, then, data, task)
            if mask is None or len(mask) != len(shown):
                return None
            shown = shown & mask
        return self.shown_in_order(column, shown, data, task)

    def prepare(self, data: StoreData, first: int, task) -> None:
        """The search buffers, then every column's order (`first` first), made ahead (a worker)."""
        self._search.prepare(task.part(0.0, 0.3))
        columns = [first] + [COLUMNS.index(c) for c in AHEAD if COLUMNS.index(c) != first]
        for i, column in enumerate(columns):
            task.progress(0.3 + 0.7 * i / len(columns), f"table: sorting by {COLUMNS[column]}")
            self._orders.order(*self._orders_of(column, data), data.n, task)

    def matches(self, text: str, rows: np.ndarray) -> np.ndarray:
        """Per row of `rows`: its preview (lower-cased) or its id contains `text` (a few rows; a live refresh's)."""
        return self._search.contains(text.strip().lower(), rows)

    def search_mask(self, text: str, then: dict | None = None, data: StoreData | None = None,
                    task=None) -> np.ndarray | None:
        """Rows whose preview or id contains `text` (`#tag`: rows with that tag); `then`: {row: text}
        of the rows whose text was different at the moment shown (AsOfView.content), searched as it
        was. None: the rows changed while it ran."""
        data = self.data_ if data is None else data
        if not text.strip() or data is None:
            return np.ones(0 if data is None else data.n, bool)
        ids = data.arrays.ids
        tag = text.strip().lower()
        if tag.startswith("#") and len(tag) > 1:  # a tag, e.g. #working-memory (HTM's working memory)
            tags = self._tags
            if tags is None or len(tags) != len(ids):
                tags = self._tags = [frozenset(t.lower() for t in ts)
                                     for ts in load_row_meta(data.store, data.arrays.rowid).tags]
            return np.fromiter((tag[1:] in ts for ts in tags), bool, count=len(ids))
        mask = self._search.mask(text, task)
        if mask is None or len(mask) != len(ids):
            return None
        if then:
            mask = mask.copy()  # the search's cache keeps the present's answer
            for r in then:
                mask[r] = tag in data.previews[r].lower() or tag in ids[r]  # the as-of preview
        return mask


def key_fields(col: str) -> set[str]:
    """The MemoryArrays columns the table column `col` sorts by (sort_key)."""
    return {"content": {"preview"}, "status": {"valid_until"}, FLAG: {"bad_json", "bad_text", "bad_value"}}.get(
        col, {SORTED_BY.get(col)})


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

    def __init__(self, state: AppState, workers: Workers | None = None, parent=None) -> None:
        super().__init__(parent)
        self.state = state
        self.workers = workers  # None: everything on the calling thread (a panel on its own)
        self.model = MemoryTableModel(self)
        self.search = QLineEdit(placeholderText="Search content or id, #tag for a tag…  (Ctrl+F)")
        self.search.setClearButtonEnabled(True)
        self.kind = QComboBox()
        self.count = QLabel(textFormat=Qt.PlainText)  # an error may quote the search or the store
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
        # a refresh's rows enter the order in a later event-loop turn than the refresh's own (the
        # panels' work for one refresh is spread over turns: input and paints come between),
        # coalesced and paced
        self._live = PacedCall(self._live_update, self)
        self._live_top: str | None = None
        self._owed: list = []  # deltas whose rows are not in the order yet
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
        if data is not None and self._in_background(data):   # made ahead, so the first search and click are instant
            # (a failure here meets the search or sort that needs the same thing, which reports it)
            self.workers.submit("table ahead", lambda task: self.model.prepare(data, self._sort[0], task),
                                on_done=lambda _r: None, on_error=lambda _e: None, lane="table")
        elif self.workers is not None:
            self.workers.cancel("table ahead")
        self.refilter(keep_top=top)

    def _in_background(self, data: StoreData) -> bool:
        return self.workers is not None and data.n >= BACKGROUND_ROWS

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
        self._owed.append(delta)
        self._live.request()

    def _live_update(self) -> None:
        """The rows of the refreshes since the last update into the order (`_insert`, one delta
        after the other), or, when that cannot be done, filtered and sorted again."""
        owed, self._owed = self._owed, []
        if not owed:
            return  # (a refilter took them meanwhile)
        busy = self.workers is not None and self.workers.running("table")  # its order misses these rows
        if busy or not all(self._insert(delta) for delta in owed):
            self.refilter(keep_top=self._live_top)  # (every row: the deltas left are in it)

    def _insert(self, delta) -> bool:
        """New rows into the sorted order where they belong, and changed rows whose sorted or
        filtered value changed moved to where they belong now (a binary search each, not a sort
        of every row). False when the window shows a past moment, a tag is searched for, or too
        many rows moved: then refilter."""
        col = COLUMNS[self._sort[0]]
        text = self.search.text().strip().lower()
        moved = delta.changed if delta.fields & (self._filtered_by() | key_fields(col)) else delta.changed[:0]
        if self.state.as_of is not None or len(moved) > MOVED_MAX \
                or (text.startswith("#") and len(text) > 1 and (len(delta.added) or len(delta.changed))):
            return False
        if len(delta.changed) and self._on_screen(delta.changed):
            self.view.viewport().update()  # e.g. a recall's count: cells drawn again, rows stay
        rows = np.concatenate([delta.added, moved])
        if not len(rows):
            return True
        self._show_count()
        a = self.state.data.arrays
        keep = self.state.visible_mask(rows)  # (as_of is None here)
        if self.kind.currentIndex() > 0:
            keep &= a.kind[rows] == self.kind.currentText()
        if text:
            keep &= self.model.matches(text, rows)
        order = self.model.order
        descending = self._sort[1] == Qt.DescendingOrder
        asc = order[::-1] if descending else order
        if len(moved):
            asc = asc[~np.isin(asc, moved)]
        if len(moved) or keep.any():
            top = self._top_id()
            asc = insert_sorted(asc, rows[keep], self.model.sort_key(self._sort[0]))
            self.model.set_order(asc[::-1].copy() if descending else asc)
            self._after_order(top)
        return True

    def _filtered_by(self) -> set[str]:
        """The MemoryArrays columns the table's filters read now (a change in them may move a row in or out)."""
        out = set()
        if not self.state.show_retired:
            out.add("valid_until")
        if self.state.time_range is not None:
            out.add("event_time")
        if self.kind.currentIndex() > 0:
            out.add("kind")
        if self.search.text().strip():
            out.add("preview")
        return out

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
        self._owed = []  # (the rows of every refresh so far are filtered and sorted here)
        if data is None:
            self.count.setText("")
            return
        mask = self.state.visible_mask()
        if self.kind.currentIndex() > 0:
            mask &= data.arrays.kind == self.kind.currentText()
        view = self.state.as_of_view
        text, then, sort = self.search.text(), view.content if view is not None else None, self._sort
        if not self._in_background(data) or (not text.strip() and self.model.order_ready(sort[0], data)):
            if self.workers is not None:
                self.workers.cancel("table")   # an older request must not land after this one
            self._show(self.model.filtered_order(data, mask, text, then, sort[0]), sort, keep_top)
            return
        self.model.set_preparing(None if self.model.order_ready(sort[0], data) else sort[0])
        self.count.setText("searching…" if text.strip() else "sorting…")
        self.view.horizontalHeader().setSortIndicator(*sort)
        self.workers.submit("table", lambda task: self.model.filtered_order(data, mask, text, then, sort[0], task),
                            on_done=lambda order: self._show(order, sort, keep_top), on_error=self._failed,
                            lane="table")

    def _show(self, order: np.ndarray | None, sort: tuple, keep_top: str | None) -> None:
        """A filtered order (ascending by `sort`'s column) into the view; None: stale, a newer one follows."""
        self.model.set_preparing(None)
        if order is None or self.state.data is None:
            return
        if sort[1] == Qt.DescendingOrder:
            order = order[::-1]
        self.model.set_order(order)
        self.view.horizontalHeader().setSortIndicator(*sort)
        self._after_order(keep_top)

    def _failed(self, error: Exception) -> None:
        self.model.set_preparing(None)
        self.count.setText(f"search failed: {error}")

    def _show_count(self) -> None:
        """'shown of memories': the second figure moves with every live refresh, even when no new
        row passes the filters."""
        data, view = self.state.data, self.state.as_of_view
        of = data.n if view is None else int(view.visible.sum())  # as of T: of the memories there then
        self.count.setText(f"{len(self.model.order):,} of {of:,}")

    def _after_order(self, keep_top: str | None) -> None:
        """The count, the selection and the scroll position for a new order."""
        self._show_count()
        self._on_selection(self.state.selection, self.state.current, None, scroll=keep_top is None)
        if keep_top is not None:
            r = self.state.data.arrays.index_of(keep_top)
            at = np.flatnonzero(self.model.order == r) if r is not None else []
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
