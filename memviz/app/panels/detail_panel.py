"""Detail panel: the current memory in full, as plain text only.

Memory content comes from agents and LLMs: it is never interpreted as HTML or rich text
(plain-text widgets and labels with Qt.PlainText everywhere). Sources, derived memories and
the supersede chain are clickable and select that memory everywhere.
"""
from __future__ import annotations

import json
import math
from collections import defaultdict

from PySide6.QtCore import QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import (
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from memviz.app.plain_text import plain_label
from memviz.app.plots import style
from memviz.session.state import AppState, StoreData
from memviz.store import iso
from memviz.words import count

_TIME_FIELDS = ("event_time", "created_at", "valid_until", "last_accessed")
_FIELDS = ("id", "agent", "kind", "importance", "event_time", "created_at", "valid_until", "confidence",
           "decay_rate", "access_count", "last_accessed", "protected", "embedding_model", "embedding",
           "entity_ids", "tags", "attributes", "source_ids")


#: characters shown at once; a longer text (an agent once stored 10 MB) is laid out only on
#: "show all", in steps, so selecting it never blocks the window
PREFIX_CHARS = 20_000
STEP_CHARS = 100_000


def _size(text: str) -> str:
    n = len(text.encode("utf-8", "replace"))
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def _fmt(field: str, value) -> str:
    if field in _TIME_FIELDS:
        return "" if value is None else f"{iso(value)} UTC  ({value})"
    if field == "embedding":
        return "none" if value is None else f"{len(value) // 4} float32 values"
    if isinstance(value, (dict, list)):
        text = json.dumps(value, ensure_ascii=False)
        return (json.dumps(value, ensure_ascii=False, indent=1) if len(text) > 70 else text) if value else "—"
    return "" if value is None else str(value)


class Links:
    """Provenance indexed both ways: derived-from, derived, superseded-by, supersedes."""

    def __init__(self, data: StoreData | None) -> None:
        self.sources, self.derived = defaultdict(list), defaultdict(list)
        self.newer, self.older = {}, {}
        self.missing = defaultdict(list)
        if data is None:
            return
        for d, s in data.provenance.sources:
            self.sources[d].append(s)
            self.derived[s].append(d)
        for new, old in data.provenance.supersedes:
            self.newer[old] = new
            self.older[new] = old
        for frm, miss, what in data.provenance.dangling:
            self.missing[frm].append((miss, what))

    def chain(self, mid: str) -> list[str]:
        """Oldest first: every version of this memory linked by supersedes."""
        seen, first = {mid}, mid
        while first in self.older and self.older[first] not in seen:
            first = self.older[first]
            seen.add(first)
        out, cur = [first], first
        while cur in self.newer and self.newer[cur] not in out:
            cur = self.newer[cur]
            out.append(cur)
        return out


class DetailPanel(QWidget):
    context_requested = Signal(list, QPoint)

    def __init__(self, state: AppState, parent=None) -> None:
        super().__init__(parent)
        self.state = state
        self._links: Links | None = None
        self.shown_id: str | None = None
        self.title = plain_label()
        f = self.title.font()
        f.setBold(True)
        self.title.setFont(f)
        self.problems = style.ThemeLabel(pick=lambda t: t.alarm, wrap=True, selectable=True)  # in either scheme
        self.content = QPlainTextEdit(readOnly=True)
        self.content.setPlaceholderText("Select a memory to see it here.")
        self.show_all = QPushButton()
        self.show_all.clicked.connect(self._show_all)
        self._rest = ""  # what "show all" still has to add
        self._filling = QTimer(self, singleShot=True, interval=0)
        self._filling.timeout.connect(self._fill_step)
        self.fields = QTreeWidget(headerLabels=["field", "value"], rootIsDecorated=False)
        self.fields.setColumnWidth(0, 120)
        self.fields.setWordWrap(True)
        self.related = QTreeWidget(headerLabels=["memory", "kind", "content"])
        self.related.setColumnWidth(0, 190)
        self.related.itemActivated.connect(self._open_item)
        self.related.itemClicked.connect(self._open_item)
        self.history = QTreeWidget(headerLabels=["when (UTC)", "action", "by", "change"], rootIsDecorated=False)
        self.history.setColumnWidth(0, 150)
        tabs = QTabWidget()
        tabs.addTab(self.fields, "Fields")
        tabs.addTab(self.related, "Sources && derived")
        tabs.addTab(self.history, "History")
        self.tabs = tabs
        split = QSplitter(Qt.Vertical)
        top = QWidget()
        top_lay = QVBoxLayout(top)
        top_lay.setContentsMargins(0, 0, 0, 0)
        top_lay.addWidget(self.content, 1)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.show_all)
        top_lay.addLayout(row)
        split.addWidget(top)
        split.addWidget(tabs)
        split.setSizes([140, 260])
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.title)
        lay.addWidget(self.problems)
        lay.addWidget(split, 1)
        self.setContextMenuPolicy(Qt.CustomContextMenu)
        self.customContextMenuRequested.connect(
            lambda pos: self.context_requested.emit([self.shown_id] if self.shown_id else [], self.mapToGlobal(pos)))
        state.data_changed.connect(self._on_data)
        state.rows_changed.connect(self._on_rows)
        state.selection_changed.connect(self._on_selection)
        state.as_of_changed.connect(lambda _t: self._on_selection(state.selection, state.current, None))
        self._clear()

    def _on_data(self, data) -> None:
        self._links = None  # built on first use: reading provenance is not on the open path
        if not self.state.reloaded:
            self.shown_id = None

    def _on_rows(self, delta) -> None:
        """A live refresh: the memory shown is shown again if it changed, at the same scroll."""
        if delta.links:
            self._links = None
        data, cur = self.state.data, self.state.current
        if cur is not None and self.shown_id == data.arrays.ids[cur] and \
                (cur in set(delta.changed.tolist()) or delta.links):
            self.show_memory(self.shown_id, len(self.state.selection))

    @property
    def links(self) -> Links:
        if self._links is None:
            self._links = Links(self.state.data)
        return self._links

    def _on_selection(self, rows, current, source) -> None:
        data = self.state.data
        if data is None or current is None:
            self._clear()
            return
        self.show_memory(data.arrays.ids[current], len(rows))
        show_as_of(self, self.state.as_of_view, current)

    def _clear(self) -> None:
        self.shown_id = None
        self.title.setText("No memory selected")
        self.problems.hide()
        self._set_content("")
        self.fields.clear()
        self.related.clear()
        self.history.clear()

    def show_memory(self, mid: str, n_selected: int = 1) -> None:
        """Show memory `mid`; shown again (after a refresh) the content keeps its scroll position."""
        store = self.state.data.store
        rec = store.get(mid)
        if rec is None:
            self._clear()
            return
        again = mid == self.shown_id
        scroll = self.content.verticalScrollBar().value() if again else 0
        self.shown_id = mid
        status = "current" if rec["valid_until"] is None else "retired"
        more = f"   ({n_selected:,} selected)" if n_selected > 1 else ""
        self.title.setText(f"{rec['kind']} · {rec['agent'] or '(no agent)'} · importance {rec['importance']:g} · "
                           f"{status}{' · protected' if rec['protected'] else ''}{more}")
        broken = self.state.data.store.missing_entities(rec["entity_ids"])  # shown as broken links
        problems = rec["problems"] + [f"entity_ids names entities that do not exist: {', '.join(broken)}"] * bool(broken)
        self.problems.setText("\n".join("⚠ " + p for p in problems))
        self.problems.setVisible(bool(problems))
        if not (again and self.content.toPlainText() == rec["content"][:PREFIX_CHARS]):
            self._set_content(rec["content"])  # the same text is left as it is: "show all" and the scroll stay
        self.content.verticalScrollBar().setValue(scroll)
        self.fields.clear()
        for f in _FIELDS:
            self.fields.addTopLevelItem(QTreeWidgetItem([f, _fmt(f, rec.get(f))]))
        self._fill_related(mid, broken)
        self.history.clear()
        for h in store.history(mid):
            change = h["after"] if h["action"] != "insert" else {}
            before = h["before"] or {}
            parts = [f"{k}: {_change(k, before.get(k))} → {_change(k, v)}" for k, v in (change or {}).items()]
            self.history.addTopLevelItem(QTreeWidgetItem(
                [iso(h["at"]), h["action"], h["actor"] or "", "; ".join(parts) + (f"  ({h['note']})" if h["note"] else "")]))

    def _set_content(self, text: str) -> None:
        """The first PREFIX_CHARS at once; the rest only on "show all"."""
        self._filling.stop()
        self._rest = text[PREFIX_CHARS:]
        self.content.setPlainText(text[:PREFIX_CHARS])
        self.show_all.setText(f"show all ({_size(text)})")
        self.show_all.setVisible(bool(self._rest))

    def _show_all(self) -> None:
        self.show_all.setEnabled(False)
        self._fill_step()

    def _fill_step(self) -> None:
        """Append the next STEP_CHARS, then let the event loop run before the next step. Each
        step starts a new paragraph: Qt lays a paragraph out whole on every change, so adding to
        one 10 MB line is quadratic. The break falls on a space where there is one, so a wrapped
        view looks the same; copying gives a line break there."""
        cut = len(self._rest) if len(self._rest) <= STEP_CHARS else self._rest.rfind(" ", STEP_CHARS // 2, STEP_CHARS) + 1
        cut = cut or STEP_CHARS
        part, self._rest = self._rest[:cut], self._rest[cut:]
        cursor = QTextCursor(self.content.document())
        cursor.movePosition(QTextCursor.End)
        if part and not part.startswith("\n") and not self.content.document().lastBlock().text() == "":
            cursor.insertBlock()
        cursor.insertText(part)
        if self._rest:
            self._filling.start()
        else:
            self.show_all.hide()
            self.show_all.setEnabled(True)

    def _fill_related(self, mid: str, broken_entities=()) -> None:
        data, view = self.state.data, self.state.as_of_view
        exists = self.state.exists_mask()
        self.related.clear()

        def group(title: str, ids: list[str], missing: list[str] = (), chain: bool = False) -> None:
            later = [] if view is None else [i for i in ids if (r := data.arrays.index_of(i)) is not None
                                             and not exists[r]]
            ids = [i for i in ids if i not in set(later)]  # as of T: the links of the memories there then
            if chain and len(ids) < 2:
                ids = []  # a chain of one is no chain
            top = QTreeWidgetItem([f"{title} ({len(ids) + len(missing)})"])
            top.setFlags(Qt.ItemIsEnabled)
            self.related.addTopLevelItem(top)
            for i in ids:
                r = data.arrays.index_of(i)
                item = QTreeWidgetItem([i, data.arrays.kind[r] if r is not None else "",
                                        data.previews[r] if r is not None else ""])
                item.setData(0, Qt.UserRole, i)
                if i == mid:
                    f = item.font(0)
                    f.setBold(True)
                    item.setFont(0, f)
                top.addChild(item)
            for i in missing:
                item = QTreeWidgetItem([i, "missing", "broken link: no memory with this id"])
                item.setForeground(2, Qt.red)
                top.addChild(item)
            if later:
                note = QTreeWidgetItem(["", "", f"{count(len(later), 'memory', 'memories')} created after "
                                                f"{iso(view.T)} UTC not shown"])
                note.setFlags(Qt.ItemIsEnabled)
                note.setForeground(2, Qt.gray)
                top.addChild(note)
            top.setExpanded(True)

        missing = self.links.missing.get(mid, [])
        group("Derived from", self.links.sources.get(mid, []), [m for m, w in missing if w == "source"])
        group("Derived into", self.links.derived.get(mid, []))
        chain = self.links.chain(mid)
        group("Supersede chain (oldest first)", chain if len(chain) > 1 else [],
              [m for m, w in missing if w == "supersedes"], chain=True)
        if broken_entities:
            top = QTreeWidgetItem([f"Entities not found ({len(broken_entities)})"])
            top.setFlags(Qt.ItemIsEnabled)
            self.related.addTopLevelItem(top)
            for e in broken_entities:
                item = QTreeWidgetItem([e, "entity", "broken link: no entity with this id"])
                item.setForeground(2, Qt.red)
                top.addChild(item)
            top.setExpanded(True)

    def _open_item(self, item: QTreeWidgetItem, _col: int = 0) -> None:
        mid = item.data(0, Qt.UserRole)
        if mid and mid != self.shown_id:
            self.state.select_ids([mid], source=None)


def _change(field: str, v) -> str:
    """One side of an audited change; times as UTC dates (an undo of a delete reads as such)."""
    return iso(v) if field in _TIME_FIELDS and isinstance(v, (int, float)) else _short(v)


def _short(v) -> str:
    if isinstance(v, (bytes, bytearray)):
        return f"<{len(v)} bytes>"
    s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
    return s if len(s) <= 80 else s[:77] + "…"


# ------------------------------------------------------------------ as of (time travel)
_AS_OF_FIELDS = ("agent", "kind", "importance", "event_time", "created_at", "valid_until", "confidence",
                 "decay_rate", "access_count", "last_accessed", "protected")


def show_as_of(panel: DetailPanel, view, row: int | None) -> None:
    """Turn what `panel` shows of memory `row` into the memory as it was at `view.T`: its fields
    and text then, no history after T; a memory created later shows the version of its supersede
    chain that was there (a correction made after T shows the old text)."""
    if view is None or row is None or panel.shown_id is None:
        return
    a = view.arrays
    mid = a.ids[row]
    note = ""
    if not view.visible[row]:
        then = [m for m in panel.links.chain(mid) if (r := a.index_of(m)) is not None and view.visible[r]]
        if not then:
            panel._clear()
            panel.title.setText(f"As of {iso(view.T)} UTC: {mid} did not exist yet (created {iso(a.created_at[row])})")
            return
        row = a.index_of(then[-1])
        panel.show_memory(then[-1])
        note = f" · the version then of {mid}"
    retired = not math.isnan(a.valid_until[row])
    panel.title.setText(f"As of {iso(view.T)} UTC · {a.kind[row]} · {a.agent[row] or '(no agent)'} · importance "
                        f"{a.importance[row]:g} · {'retired' if retired else 'current'}"
                        f"{' · protected' if a.protected[row] else ''}{note}")
    if row in view.content:
        panel._set_content(view.content[row])
    values = {f: getattr(a, f)[row] for f in _AS_OF_FIELDS}
    values = {f: (None if isinstance(v, float) and math.isnan(v) else v.item() if hasattr(v, "item") else v)
              for f, v in values.items()}
    if row in view.tags:
        values["tags"] = view.tags[row]
    for i in range(panel.fields.topLevelItemCount()):
        item = panel.fields.topLevelItem(i)
        if item.text(0) in values:
            item.setText(1, _fmt(item.text(0), values[item.text(0)]))
    then = iso(view.T)
    for i in reversed(range(panel.history.topLevelItemCount())):
        if panel.history.topLevelItem(i).text(0) > then:  # ISO times compare as text
            panel.history.takeTopLevelItem(i)
