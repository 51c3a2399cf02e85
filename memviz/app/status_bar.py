"""The window's status bar: a message longer than the room left of the permanent widgets ends
in "…" at the right (QStatusBar cut it mid-word), and the whole message is its tooltip there.

QStatusBar draws its message itself in paintEvent; every message passes there, also the status
tips Qt shows from C++ (showMessage is not virtual), so the message is drawn here, elided.
`currentMessage()` stays the whole message. A message is plain text (QPainter.drawText), so a
memory's HTML shows as written; its tooltip goes through `plain_tooltip`.
"""
from __future__ import annotations

from PySide6.QtCore import QEvent, QRect, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QSizeGrip, QStatusBar, QStyle, QStyleOption, QToolTip, QWidget

from memviz.app.plain_text import plain_tooltip


class StatusBar(QStatusBar):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.messageChanged.connect(lambda text: self.setToolTip(plain_tooltip(text)))

    def _items(self) -> list[QWidget]:
        """The widgets shown in the bar (while a message is shown, QStatusBar hides all but the
        permanent ones)."""
        return [w for w in self.findChildren(QWidget, options=Qt.FindDirectChildrenOnly)
                if w.isVisible() and not w.isWindow() and not isinstance(w, QSizeGrip)]

    def message_rect(self) -> QRect:
        """Where the message is drawn: from the left to the first permanent widget (as QStatusBar)."""
        right = self.width() - 12
        for w in self.findChildren(QSizeGrip, options=Qt.FindDirectChildrenOnly):
            if w.isVisible():
                right = w.x()
        for w in self._items():
            right = min(right, w.x() - 2)
        return QRect(6, 0, max(right - 6, 0), self.height())

    def _one_line(self) -> str:
        return " ".join(self.currentMessage().splitlines())

    def shown_message(self) -> str:
        """The message as drawn: one line, ending in "…" where the room ends."""
        return self.fontMetrics().elidedText(self._one_line(), Qt.ElideRight, self.message_rect().width())

    def paintEvent(self, event) -> None:
        # QStatusBar.paintEvent, with the message elided
        p = QPainter(self)
        opt = QStyleOption()
        opt.initFrom(self)
        self.style().drawPrimitive(QStyle.PE_PanelStatusBar, opt, p, self)
        for w in self._items():
            frame = w.geometry().adjusted(-2, -1, 2, 1)
            if event.rect().intersects(frame):
                item = QStyleOption()
                item.rect, item.palette, item.state = frame, self.palette(), QStyle.State_None
                self.style().drawPrimitive(QStyle.PE_FrameStatusBarItem, item, p, w)
        if self.currentMessage():
            p.setPen(self.palette().windowText().color())
            p.drawText(self.message_rect(), Qt.AlignLeading | Qt.AlignVCenter | Qt.TextSingleLine, self.shown_message())

    def event(self, event) -> bool:
        if event.type() == QEvent.ToolTip:
            # the whole message, over the message and only where it is cut (a permanent widget
            # without a tooltip of its own hands the event on to the bar: none there)
            rect = self.message_rect()
            if self.currentMessage() and rect.contains(event.pos()) and self.shown_message() != self._one_line():
                QToolTip.showText(event.globalPos(), self.toolTip(), self, rect)
            else:
                QToolTip.hideText()
                event.ignore()
            return True
        return super().event(event)
