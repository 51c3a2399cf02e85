"""Issue 19 case 13: memory text an agent or LLM wrote is shown as plain text everywhere,
tooltips included (Qt renders a tooltip as HTML whenever it looks like HTML)."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import Qt as GuiQt
from PySide6.QtGui import QTextDocument
from test_app_support import T0, build_store

from memviz.app.panels.reflect_panel import ProposalCard
from memviz.app.panels.retired_panel import RetiredModel
from memviz.app.plain_text import plain_tooltip
from memviz.app.window import MainWindow
from memviz.edits.retired import RetiredMemory
from memviz.reflect.reflection import Evidence, Proposal

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
