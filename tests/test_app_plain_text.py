"""Memory text an agent or LLM wrote is shown as plain text everywhere, tooltips included (Qt
renders a tooltip, an AutoText label or a message box as HTML whenever the text looks like
HTML, and pyqtgraph's legends and labels always do).

The window tests open a store whose every text field holds HTML (content, kind, agent, tags,
attribute keys and values, ids, sources, entities, embedding model, clock, audit notes, its
file path), drive the window through the places that show it, and then read back every text
on screen as Qt would render it: every widget's label, tooltip and title, every item model's
display and tooltip roles, every plot item's text and tooltip, the status bar, the tooltip
shown. A tag that vanished or an image that appeared is a leak."""
from __future__ import annotations

import gc
import json
import os
import re
import shutil

import numpy as np
import pytest
from fake_openai import reply_json
from PySide6.QtCore import QModelIndex, QPointF, QSettings, Qt
from PySide6.QtGui import Qt as GuiQt
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QApplication,
    QComboBox,
    QGraphicsTextItem,
    QGraphicsView,
    QGroupBox,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QPlainTextEdit,
    QStatusBar,
    QTabBar,
    QTextEdit,
    QToolTip,
)
from test_app_support import T0, build_store

import memviz.store as ms
from memviz.app.dialogs.edit_dialogs import ConflictDialog
from memviz.app.dialogs.reflect_dialog import ProposalCard
from memviz.app.panels.prompt_panel import CumulativeBar
from memviz.app.panels.query_panel import ResultBarDelegate
from memviz.app.panels.retired_panel import RetiredModel
from memviz.app.plain_text import plain_tooltip
from memviz.app.window import MainWindow
from memviz.edits.retired import RetiredMemory
from memviz.embed import default_embedder
from memviz.reflect import LLMSettings
from memviz.reflect.reflection import Evidence, Proposal
from memviz.store.clock import record_clock, simulated

HOSTILE = ["<b>bold</b> claim", "<img src='file:///etc/passwd'> look", "<a href='http://evil.example'>click</a> me",
           "line one\n<i>two</i> & three"]


def shown(tip: str) -> str:
    """What a tooltip displays: Qt reads it as rich text when it might be."""
    if not GuiQt.mightBeRichText(tip):
        return tip
    doc = QTextDocument()
    doc.setHtml(tip)
    return doc.toPlainText()


@pytest.mark.parametrize("text", HOSTILE)
def test_plain_tooltip_shows_the_text_as_written(qapp, text):
    assert shown(plain_tooltip(text)) == text
    assert "<b>" not in plain_tooltip(text) and "<img" not in plain_tooltip(text)


def test_reflect_evidence_tooltips_and_duplicate_line_are_plain(qtbot):
    ev = [Evidence(f"m{i}", t, "episode", 5.0, T0) for i, t in enumerate(HOSTILE)]
    p = Proposal("<b>why</b>?", "<img src=x> insight", [e.id for e in ev], ev, duplicate_of="memory <b>m0</b>")
    card = ProposalCard(1, p, lambda ids: None)
    qtbot.addWidget(card)
    for i, text in enumerate(HOSTILE):
        tip = card.evidence.item(i).toolTip()
        assert shown(tip) == text and "<img" not in tip and "<b>" not in tip
    assert card.duplicate.textFormat() == Qt.PlainText and card.duplicate.text() == "⚠ Duplicate of memory <b>m0</b>"
    assert card.text.textFormat() == Qt.PlainText


def test_retired_list_tooltips_are_plain(qapp):
    model = RetiredModel()
    model.items = [RetiredMemory("r1", HOSTILE[1], "fact", "ann", T0, "deleted", note="<b>n</b>")]
    for col in (1, 4):
        tip = model.data(model.index(0, col), Qt.ToolTipRole)
        assert "<img" not in tip and "<b>" not in tip
    assert shown(model.data(model.index(0, 4), Qt.ToolTipRole)) == HOSTILE[1]


def test_consolidate_dialog_tooltips_are_plain(qtbot, tmp_path):
    path = tmp_path / "mem.db"
    s = build_store(path)
    day = 86400
    s.insert_memories([{"id": "<b>x</b>", "kind": "fact", "agent": "alice", "content": HOSTILE[2],
                        "importance": 2, "event_time": T0 - 400 * day, "created_at": T0 - 400 * day,
                        "confidence": 0.06}])
    s.close()
    win = MainWindow(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat))
    win.map.auto_umap = False
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.opened, timeout=20000):
        win.open_path(str(path))
    win.reflect_tools.consolidate_action.trigger()
    dlg = win.reflect_tools.consolidate_dialog
    qtbot.waitUntil(lambda: dlg.plan is not None, timeout=20000)
    r = [p.id for p in dlg.plan.prune].index("<b>x</b>")
    assert shown(dlg.prune.item(r, 5).toolTip()) == HOSTILE[2] and "<a href" not in dlg.prune.item(r, 5).toolTip()
    assert shown(dlg.prune.item(r, 1).toolTip()) == "<b>x</b>"
    dlg.close()


# ------------------------------------------------------------------ a store that is all HTML
#: every text of the store holds <b>bold§…</b>: rendered as HTML, "bold§" shows without its tag ("§" ends a
#: word, so the map's region labels, words picked from the texts, never show the marker)
MARK = "bold§"
DAY = 86400


def html(name: str) -> str:
    """A store text: a bold tag and an image a rich-text renderer would load."""
    return f"<b>{MARK}{name}</b> <img src='file:///etc/passwd'>"


def hid(k) -> str:
    return f"<b>{MARK}i{k}</b>"  # 15 characters: status lines and undo labels show it whole


AGENTS = [html("agent-a"), html("agent-b")]
KINDS = [html("kind-a"), html("kind-b")]
TEXTS = ["Alice said she is allergic to peanuts and asked for a nut-free recipe.",
         "Alice asked for a vegetarian lasagna recipe for Saturday dinner.",
         "Alice mentioned her sister Maya is visiting from Lisbon next week.",
         "Bob is training for a half marathon in April and runs three times a week.",
         "Bob asked how to fix a flaky pytest that depends on the system clock.",
         "Bob's dog Pixel had a vet appointment about a sore paw.",
         "Alice prefers tea in the afternoon and coffee in the morning.",
         "Bob wants to learn Portuguese before his trip to Brazil.",
         "Alice's meals must avoid peanuts.",
         "Bob prepares for travel to Brazil."]
ENTITY = hid("e")


def build_html_store(folder) -> str:
    """Every text field of every memory holds HTML, written through the store's own API."""
    folder.mkdir(parents=True, exist_ok=True)
    path = str(folder / "mem.db")
    emb = default_embedder()
    contents = [f"{html(f'content{k}')} {t}" for k, t in enumerate(TEXTS)]
    vecs = emb.embed(contents)
    recs = []
    for k, (text, v) in enumerate(zip(contents, vecs)):
        derived = k >= 8  # the last two are derived from earlier ones (the graph, "Sources & derived")
        recs.append({"id": hid(k), "kind": KINDS[k % 2], "agent": AGENTS[k % 2] if k < 8 else AGENTS[0],
                     "content": text, "importance": 3 + k % 6, "event_time": T0 + k * 20 * 3600,
                     "created_at": T0 + k * 20 * 3600,
                     "tags": [html("tag"), "plain tag"], "attributes": {html("key"): html("value")},
                     "entity_ids": [ENTITY, html("ghost-entity")],
                     "source_ids": [hid(0), hid(2), html("ghost-source")] if derived else [],
                     "embedding": v, "embedding_model": emb.model})
    # one memory of another embedding model (the detail names it), and one old enough to be pruned
    recs.append({"id": hid("m"), "kind": KINDS[0], "agent": AGENTS[0], "content": f"{html('other-model')} tea",
                 "event_time": T0, "created_at": T0, "embedding": np.ones(8, np.float32), "embedding_model": html("model")})
    recs.append({"id": hid("old"), "kind": KINDS[1], "agent": AGENTS[0], "importance": 2,
                 "content": f"{html('old')} Alice once liked jazz.", "event_time": T0 - 400 * DAY,
                 "created_at": T0 - 400 * DAY, "confidence": 0.01,
                 "embedding": emb.embed_one("Alice once liked jazz."), "embedding_model": emb.model})
    s = ms.create(path)
    s.insert_memories(recs, actor=html("actor"), note=html("note"))
    new_text = f"{html('corrected')} Bob owns a dog named Pixel, a border collie."
    s.supersede(hid(5), new_text, embedding=emb.embed_one(new_text), embedding_model=emb.model,
                when=T0 + 200 * 3600, new_id_=hid("5b"), actor=html("actor"), note=html("note"))
    s.set_valid_until(hid(4), T0 + 210 * 3600, actor=html("actor"), note=html("note"))
    with s.transaction() as c:
        c.execute("INSERT INTO entities(id, canonical_name, type) VALUES (?, ?, ?)", (ENTITY, html("entity"), "person"))
    record_clock(s, simulated(T0 + 300 * 3600, html("clock")))
    s.close()
    return path


@pytest.fixture(scope="module")
def html_store(tmp_path_factory):
    # a folder whose name is HTML too: the path shows in the title, the status bar, messages
    return build_html_store(tmp_path_factory.mktemp("plain") / f"a<b>{MARK}path")


@pytest.fixture
def html_copy(tmp_path, html_store):
    """A copy each test may write to (edits), at a path holding HTML."""
    folder = tmp_path / f"c<b>{MARK}path"
    folder.mkdir()
    return str(shutil.copy(html_store, folder / "mem.db"))


# ------------------------------------------------------------------ reading back what is on screen
def rendered(text: str, fmt) -> str:
    """What the user sees of `text` shown in `fmt` (Qt's rule: AutoText is rich when it might be)."""
    if fmt == Qt.PlainText or (fmt == Qt.AutoText and not GuiQt.mightBeRichText(text)):
        return text
    doc = QTextDocument()
    doc.setHtml(text)
    return doc.toPlainText()


def leaked(seen: str) -> bool:
    """Store text read as HTML: a tag of the store's is gone (or shows escaped), or an image loaded."""
    return bool(re.search(rf"(?<!<b>){MARK}", seen)) or "\ufffc" in seen


PLAIN, AUTO = Qt.PlainText, Qt.AutoText
ROLES = ((Qt.DisplayRole, PLAIN), (Qt.ToolTipRole, AUTO), (Qt.StatusTipRole, PLAIN), (Qt.WhatsThisRole, AUTO))
#: the project's delegates, which paint no text (bars); Qt's own paint DisplayRole as plain text
BAR_DELEGATES = (ResultBarDelegate, CumulativeBar)


def _columns(model, parent=QModelIndex()) -> int:
    try:
        return model.columnCount(parent)
    except TypeError:  # PySide6: a QAbstractListModel's columnCount is private (one column)
        return 1


def _model_texts(model, where):
    for orientation, n in ((Qt.Horizontal, _columns(model)), (Qt.Vertical, model.rowCount())):
        for s in range(n):
            for role, fmt in ROLES[:2]:
                v = model.headerData(s, orientation, role)
                if isinstance(v, str):
                    yield f"{where} header {s}", v, fmt
    todo = [QModelIndex()]
    while todo:
        parent = todo.pop()
        for r in range(model.rowCount(parent)):
            for c in range(_columns(model, parent)):
                ix = model.index(r, c, parent)
                for role, fmt in ROLES:
                    v = model.data(ix, role)
                    if isinstance(v, str):
                        yield f"{where} ({r}, {c}) role {int(role)}", v, fmt
                if c == 0 and model.rowCount(ix):
                    todo.append(ix)


def _where(w) -> str:
    names, p = [], w
    while p is not None and len(names) < 4:
        names.append(type(p).__name__ + (f"[{p.objectName()}]" if p.objectName() else ""))
        p = p.parentWidget()
    return " < ".join(names)


def texts_on_screen():
    """(where, text, format) of every text the application's widgets, models and plots hold."""
    models = set()
    for w in QApplication.allWidgets():
        if not w.window().isVisible():
            continue   # an earlier test's closed window, waiting to be deleted: not on screen
        where = _where(w)
        yield f"{where} tooltip", w.toolTip(), AUTO
        yield f"{where} what's this", w.whatsThis(), AUTO
        yield f"{where} status tip", w.statusTip(), PLAIN
        yield f"{where} title", w.windowTitle(), PLAIN
        if isinstance(w, QLabel):
            yield f"{where} text", w.text(), w.textFormat()
        elif isinstance(w, (QTextEdit, QPlainTextEdit)):
            yield f"{where} document", w.toPlainText(), PLAIN  # what the document shows, however it was set
            yield f"{where} placeholder", w.placeholderText(), PLAIN
        elif isinstance(w, QLineEdit):
            yield f"{where} text", w.text(), PLAIN
            yield f"{where} placeholder", w.placeholderText(), PLAIN
        elif isinstance(w, QAbstractButton):
            yield f"{where} text", w.text(), PLAIN
        elif isinstance(w, QGroupBox):
            yield f"{where} title", w.title(), PLAIN
        elif isinstance(w, QStatusBar):
            yield f"{where} message", w.currentMessage(), PLAIN
        if isinstance(w, QTabBar):
            for i in range(w.count()):
                yield f"{where} tab {i}", w.tabText(i), PLAIN
                yield f"{where} tab {i} tooltip", w.tabToolTip(i), AUTO
        if isinstance(w, QMenu) and w.toolTipsVisible():
            for a in w.actions():
                yield f"{where} action {a.text()!r} tooltip", a.toolTip(), AUTO
        if isinstance(w, QComboBox) and id(w.model()) not in models:  # its items, popup or not (agents, kinds)
            models.add(id(w.model()))
            yield from _model_texts(w.model(), f"{where} items")
        if isinstance(w, QAbstractItemView) and not isinstance(w, QHeaderView) and w.model() is not None:
            model = w.model()
            for c in range(_columns(model)):
                d = w.itemDelegateForColumn(c) or w.itemDelegate()
                assert isinstance(d, BAR_DELEGATES) or type(d).__module__.startswith("PySide6."), \
                    f"{where} column {c}: {type(d).__name__} may paint HTML; add it here once it paints plain text"
            if id(model) not in models:
                models.add(id(model))
                yield from _model_texts(model, f"{where} {type(model).__name__}")
        if isinstance(w, QGraphicsView) and w.scene() is not None:
            for item in w.scene().items():
                yield f"{where} {type(item).__name__} tooltip", item.toolTip(), AUTO
                if isinstance(item, QGraphicsTextItem):  # a pyqtgraph TextItem, LabelItem or legend label
                    yield f"{where} {type(item).__name__} text", item.toPlainText(), PLAIN
    if QToolTip.isVisible():
        yield "the tooltip shown", QToolTip.text(), AUTO


class Leaks:
    """Collects the store texts that showed as rich text, over the steps of a test."""

    def __init__(self) -> None:
        self.found: dict[str, str] = {}
        self.store_texts = 0

    def look(self, step: str) -> None:
        # No collection during the walk: collecting an earlier test's window (a Python wrapper that
        # owns its widgets) would delete widgets the walk holds pointers to (a crash in CI's order).
        gc.disable()
        try:
            for where, text, fmt in texts_on_screen():
                if not text or (MARK not in text and "passwd" not in text):
                    continue
                self.store_texts += 1
                seen = rendered(text, fmt)
                if leaked(seen):
                    self.found.setdefault(where, f"{step}: {text[:120]!r} shows as {seen[:120]!r}")
        finally:
            gc.enable()

    def check(self, at_least: int = 1) -> None:
        assert self.store_texts >= at_least, "the walk saw no store text: it checked nothing"
        assert not self.found, "store text rendered as rich text:\n" + "\n".join(
            f"  {w}: {s}" for w, s in sorted(self.found.items()))


def _select(win, mid):
    win.state.select_ids([mid])
    assert win.detail.shown_id == mid


def _hover(panel, row):
    """Move the pointer over the point of array row `row` in a scatter panel."""
    i = int(np.flatnonzero(panel.rows == row)[0])
    panel._pointer_left = False
    panel._mouse_moved((panel.vb.mapViewToScene(QPointF(panel.x[i], panel.y[i])),))
    assert panel.hover.isVisible()


def _settled(win) -> bool:
    """The last write is read, and the map has placed its new rows (a panel racing the map's
    placing is not what these tests look at)."""
    data = win.state.data
    return not any(win.workers.running(j) for j in ("refresh", "reload", "place")) and \
        win.map.coords is not None and len(win.map.coords) == data.n


def _written(qtbot, win, n):
    qtbot.waitUntil(lambda: win.undo_stack.count() == n and _settled(win), timeout=20000)


def test_a_store_all_html_shows_as_plain_text_everywhere(qtbot, make_window, html_copy):
    win = make_window(html_copy, size=(1400, 900), graph=True)
    leaks = Leaks()
    leaks.look("opened")
    a = win.state.data.arrays
    assert set(a.agent) == set(AGENTS) and MARK in win.statusBar().currentMessage()  # "Opened <path>"

    # the detail of memories with sources, entities (one missing), a supersede chain, a retired one
    for mid in (hid(8), hid(5), hid("5b"), hid(4), hid("m")):
        _select(win, mid)
        for tab in range(win.detail.tabs.count()):
            win.detail.tabs.setCurrentIndex(tab)
        leaks.look(f"detail of {mid}")

    # a text query and a query by example: the results and their tooltips
    q = win.query
    q.text.setText("peanuts recipe")
    with qtbot.waitSignal(q.ranked, timeout=20000):
        q.run_query()
    assert q.results.rowCount() > 0
    leaks.look("text query")
    _select(win, hid(1))
    with qtbot.waitSignal(q.ranked, timeout=20000):
        q.query_selected()
    leaks.look("query by example")

    # the plots: hover labels, the map's legend by kind and by agent, region labels, the timeline's lanes
    for by in ("kind", "agent"):
        win.map.color_by.setCurrentText(by)
        win.timeline.lanes.setCurrentText(by)
        leaks.look(f"coloured by {by}")
    win.map.labels_button.setChecked(True)
    qtbot.waitUntil(lambda: bool(win.map.label_items), timeout=20000)
    for panel in (win.map, win.timeline, win.graph):
        _hover(panel, a.index_of(hid(8)))
        leaks.look(f"hover on the {type(panel).__name__}")

    # the prompt view, what falls below its cut and why (before any edit: it does not follow a live
    # refresh yet, so it is hidden again before the edits)
    win.docks["prompt"].raise_()
    win.prompt.set_shown(True)
    qtbot.waitUntil(lambda: win.prompt.plan is not None, timeout=20000)
    win.prompt.budget.setValue(200)  # most memories fall below the cut, with why
    qtbot.waitUntil(lambda: win.prompt.plan.budget == 200 and len(win.prompt.plan.below) > 0, timeout=20000)
    leaks.look("prompt view")
    win.docks["table"].raise_()
    win.prompt.set_shown(False)

    # the past, and diffs of two moments and of two agents (before any edit too: an as-of view does
    # not follow a live refresh either)
    d = win.diff
    win.as_of_bar.go_to(T0 + 205 * 3600)  # hid(5) corrected, hid(4) not retired yet
    _select(win, hid(5))
    leaks.look("as of a past moment")
    d.from_the_scrubber()
    with qtbot.waitSignal(d.compared, timeout=20000):
        d.compare()
    leaks.look("diff of two moments")
    win.as_of_bar.go_to(None)
    d.mode.setCurrentIndex(2)
    with qtbot.waitSignal(d.compared, timeout=20000):
        d.compare()
    d.tree.setCurrentItem(d.tree.topLevelItem(0).child(0))
    leaks.look("diff of two agents")

    # edits: the correction dialog shows the old text, the undo button names the memory
    _select(win, hid(6))
    win.edits.run("correct", [hid(6)])
    dlg = win.edits.dialog
    assert dlg.old_text.toPlainText().startswith(html("content6"))
    leaks.look("correct dialog")
    dlg.new_text.setPlainText(f"{html('new')} Alice prefers green tea.")
    dlg.accept()
    _written(qtbot, win, 1)
    win.edits.run("delete", [hid(7)])
    _written(qtbot, win, 2)
    assert MARK in win.toolbar_undo.toolTip()
    leaks.look("after a correction and a soft-delete")
    win.edits.run("tags", [hid(3)])
    assert MARK in win.edits.dialog.tags.text()
    leaks.look("tags dialog")
    win.edits.dialog.reject()

    # an edit refused with a message quoting the id (nothing to change), then a real conflict
    win.edits.run("importance", [hid(3)])
    win.edits.dialog.accept()  # the same importance
    box = win.edits.dialog
    assert box.windowTitle() == "Edit not written" and hid(3) in box.text()
    leaks.look("edit refused")
    box.close()
    other = ms.open(html_copy)
    other.update_rows({hid(3): {"importance": 9.0}})
    other.close()
    win.edits.run("importance", [hid(3)])
    win.edits.dialog.spin.setValue(1.0)
    win.edits.dialog.accept()
    qtbot.waitUntil(lambda: isinstance(win.edits.dialog, ConflictDialog), timeout=10000)
    leaks.look("conflict dialog")
    win.edits.dialog.current_button.click()

    # the retired list
    win.retired.set_shown(True)
    qtbot.waitUntil(lambda: hid(7) in [m.id for m in win.retired.items], timeout=20000)
    leaks.look("retired list")

    # the check (findings quote the ghost ids), the clock, consolidation
    check = win.check_store()
    qtbot.waitUntil(lambda: check.report is not None, timeout=30000)
    assert MARK in check.status.text()  # the path
    win.reflect_tools.consolidate_action.trigger()
    cons = win.reflect_tools.consolidate_dialog
    qtbot.waitUntil(lambda: cons.plan is not None, timeout=20000)
    assert hid("old") in [p.id for p in cons.plan.prune]
    clock = win.clock_status.open_dialog()
    assert MARK in win.clock_status.label.toolTip()
    leaks.look("check, clock and consolidate dialogs")
    for w in (check, cons, clock):
        w.close()
    leaks.check(at_least=1000)


def test_reflection_with_an_llm_quoting_html_is_plain(qtbot, make_window, html_copy, fake_openai):
    from memviz.app.dialogs.llm_settings import save_llm_settings
    win = make_window(html_copy)
    save_llm_settings(win.settings, LLMSettings(base_url=fake_openai.base_url, chat_model=html("llm"),
                                                max_retries=0, timeout=5))
    fake_openai.push(reply_json({"questions": [f"What does {html('question')} avoid?"]}),
                     reply_json({"insights": [{"insight": f"{html('insight')} Alice avoids peanuts.",
                                               "evidence": [1, 2, 99]}]}))
    _select(win, hid(0))
    leaks = Leaks()
    leaks.look("the importance meter")
    assert MARK in win.reflect_tools.meter.toolTip()
    win.reflect_action.trigger()
    dlg = win.reflect_tools.dialog
    qtbot.waitUntil(dlg.isVisible)
    dlg.agent.setCurrentIndex(dlg.agent.findData(AGENTS[0]))
    dlg.questions.setValue(1)
    dlg.evidence_k.setValue(3)
    dlg.propose_button.click()
    qtbot.waitUntil(lambda: len(dlg.cards) == 1, timeout=20000)
    card = dlg.cards[0]
    assert MARK in card.text.text() and card.evidence.count() == 2
    leaks.look("proposals")
    card.accept_box.setChecked(True)
    before = win.state.data.n
    dlg.write_button.click()
    qtbot.waitUntil(lambda: win.state.data.n == before + 1, timeout=20000)
    leaks.look("reflection written")
    dlg.close()
    leaks.check(at_least=100)


def test_paths_and_open_errors_holding_html_are_plain(qtbot, make_window, html_copy, tmp_path):
    win = make_window(html_copy)  # remembered in the recent list
    bad = os.path.join(os.path.dirname(html_copy), f"x<b>{MARK}bad.db")
    with open(bad, "wb") as f:
        f.write(b"<b>" + MARK.encode() + b"not a store</b>" * 100)
    with qtbot.waitSignal(win.open_failed, timeout=20000):
        win.open_path(bad)
    assert win.error_box is not None and MARK in win.error_box.text()
    leaks = Leaks()
    leaks.look("open failed")
    # a second window starts on the start page, with the recent stores
    second = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat))
    qtbot.addWidget(second)
    second.show()
    assert second.start_page.recent.count() >= 1
    leaks.look("start page")
    leaks.check(at_least=50)


def test_an_import_report_quoting_html_is_plain(qtbot, make_window, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMVIZ_DATA_DIR", str(tmp_path / "userdata"))
    win = make_window()
    folder = tmp_path / f"i<b>{MARK}dump"
    folder.mkdir()
    src = folder / "dump.jsonl"
    lines = [json.dumps({"id": hid(i), "content": f"{html(f'import{i}')} about the garden", "kind": KINDS[0],
                         "agent": AGENTS[0]}) for i in range(4)]
    lines[2] = f'{{"id": "{hid(2)}", "content": "{html("broken")}'  # a malformed line, quoted in the report
    src.write_text("\n".join(lines) + "\n")
    dlg = win.show_import(str(src))
    qtbot.addWidget(dlg)
    dlg.output.setText(str(folder / "out.db"))
    with qtbot.waitSignal(win.opened, timeout=60000):
        dlg.import_button.click()
    assert MARK in dlg.details.toPlainText()
    leaks = Leaks()
    leaks.look("import report")
    leaks.check(at_least=10)
