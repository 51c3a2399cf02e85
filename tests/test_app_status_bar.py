"""The status bar's message: one longer than the room left of the permanent widgets ends in "…"
(QStatusBar cut it mid-word: "… not saved yet (Ctrl+S s"), the whole message is its tooltip
there, and `currentMessage()` is the whole message. A message is plain text."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, QPoint, Qt
from PySide6.QtGui import QHelpEvent, QImage, QPainter, QTextDocument
from PySide6.QtWidgets import QApplication, QToolTip
from test_app_support import build_store

from memviz.app.plain_text import plain_tooltip

pytestmark = pytest.mark.qt

LONG = ("Corrected 427c3f60 <b>bold</b> <img src='x'>: a new memory supersedes it; the old one is kept, retired, "
        "and the change is not saved yet (Ctrl+S saves it, Ctrl+Z takes it back)")


@pytest.fixture(scope="module")
def store_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("status") / "mem.db"
    build_store(path).close()
    return str(path)


def as_shown(tooltip: str) -> str:
    """The text a tooltip shows (Qt reads it as HTML)."""
    doc = QTextDocument()
    doc.setHtml(tooltip)
    return doc.toPlainText()


def message_pixels(bar, text: str | None = None) -> list[str]:
    """The pixels of the bar's message area as grabbed, or (with `text`) as that text would be
    drawn there by itself, in the bar's font and text colour."""
    img = bar.grab().toImage()
    rect = bar.message_rect()
    if text is not None:
        bg = img.pixelColor(rect.left(), 1)
        img = QImage(img.size(), img.format())
        img.fill(bg)
        p = QPainter(img)
        p.setFont(bar.font())
        p.setPen(bar.palette().windowText().color())
        p.drawText(rect, Qt.AlignLeading | Qt.AlignVCenter | Qt.TextSingleLine, text)
        p.end()
    return [img.pixelColor(x, y).name() for x in range(rect.left(), rect.right()) for y in range(img.height())]


def hover(qtbot, bar, pos: QPoint) -> str:
    """What a tooltip shows after the pointer rests at `pos` in the bar ("" for none): the event
    goes to the widget there and on to its parents, as Qt sends it."""
    QToolTip.hideText()
    qtbot.waitUntil(lambda: not QToolTip.isVisible(), timeout=5000)  # (it fades out)
    target = bar.childAt(pos) or bar
    local = target.mapFrom(bar, pos) if target is not bar else pos
    QApplication.sendEvent(target, QHelpEvent(QEvent.ToolTip, local, bar.mapToGlobal(pos)))
    return as_shown(QToolTip.text()) if QToolTip.isVisible() else ""


def settled(qtbot, win) -> None:
    """The bar as it stays: the store's model said, no job's progress beside the message."""
    qtbot.waitUntil(lambda: win.status_model.text() and not win.progress.isVisible()
                    and win.statusBar().message_rect().width() > 100, timeout=20000)


def test_a_long_message_ends_in_an_ellipsis_and_its_tooltip_is_the_whole_message(qtbot, make_window, store_file):
    win = make_window(store_file, size=(1100, 700))
    bar = win.statusBar()
    bar.showMessage(LONG)
    settled(qtbot, win)
    assert bar.currentMessage() == LONG
    rect = bar.message_rect()
    first_permanent = min(w.x() for w in (win.status_model, win.status_ro, win.clock_status.label) if w.isVisible())
    assert 0 < rect.right() < first_permanent  # the room is left of the permanent widgets
    shown = bar.shown_message()
    assert shown.endswith("…") and LONG.startswith(shown[:-1]) and len(shown) < len(LONG)
    assert shown.startswith("Corrected 427c3f60 <b>bold</b>")  # plain text: the tags as written
    assert bar.fontMetrics().horizontalAdvance(shown) <= rect.width()
    # drawn so: the text up to "…", not the whole message cut where the room ends
    drawn = message_pixels(bar)
    assert drawn == message_pixels(bar, shown) and drawn != message_pixels(bar, LONG)
    assert as_shown(bar.toolTip()) == LONG and bar.toolTip() == plain_tooltip(LONG)
    # the tooltip over the message; none over a permanent widget that has no tooltip of its own
    assert hover(qtbot, bar, QPoint(rect.left() + 20, bar.height() // 2)) == LONG
    model = win.status_model
    assert model.isVisible() and not model.toolTip()
    assert hover(qtbot, bar, model.geometry().center()) == ""
    # narrower: cut sooner, still whole in currentMessage
    win.resize(900, 700)
    qtbot.waitUntil(lambda: len(bar.shown_message()) < len(shown), timeout=5000)
    assert bar.shown_message().endswith("…") and bar.currentMessage() == LONG


def test_a_short_message_is_drawn_whole_and_a_cleared_one_leaves_the_bar(qtbot, make_window, store_file):
    win = make_window(store_file, size=(1100, 700))
    bar = win.statusBar()
    settled(qtbot, win)
    bar.showMessage("Saved")
    assert bar.shown_message() == "Saved" and bar.currentMessage() == "Saved"
    assert hover(qtbot, bar, QPoint(bar.message_rect().left() + 5, bar.height() // 2)) == ""
    bar.showMessage("two\nlines")  # one line in the bar, as QStatusBar drew it
    assert bar.shown_message() == "two lines" and bar.currentMessage() == "two\nlines"
    bar.clearMessage()
    assert bar.currentMessage() == "" and bar.toolTip() == ""
    qtbot.waitUntil(lambda: win.status_counts.isVisible(), timeout=5000)  # the bar's own widgets are back
