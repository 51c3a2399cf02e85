"""What the window shows while no store is open (at launch without one, after a file that
could not be opened): what to do, instead of empty axes and buttons that do nothing.

The window lays it over the dock area and hides it once a store is shown. It only asks:
open_requested (File ▸ Open…), sample_requested, import_requested, recent_chosen(path)."""
from __future__ import annotations

import os

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPushButton, QVBoxLayout, QWidget

from memviz.app.plain_text import plain_tooltip
from memviz.app.plots import style


class StartPage(QFrame):
    open_requested = Signal()
    sample_requested = Signal()
    import_requested = Signal()
    recent_chosen = Signal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("start_page")
        self.setAutoFillBackground(True)
        self.setFrameShape(QFrame.NoFrame)
        title = QLabel("No memory store is open")
        font = title.font()
        font.setPointSizeF(font.pointSizeF() * 1.6)
        font.setBold(True)
        title.setFont(font)
        self.note = QLabel("Open a store (.db), import another system's agent memory, or look around in the sample.")
        self.note.setTextFormat(Qt.PlainText)
        self.note.setWordWrap(True)
        self.problem = style.ThemeLabel(pick=lambda t: t.alarm, wrap=True)  # plain text: a path or an error
        self.problem.hide()
        self.open_button = QPushButton("Open a store…")
        self.sample_button = QPushButton("Open the sample store")
        self.import_button = QPushButton("Import…")
        self.open_button.setDefault(True)
        buttons = QHBoxLayout()
        for b in (self.open_button, self.sample_button, self.import_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        self.recent_title = QLabel("Recent stores")
        self.recent = QListWidget()
        self.recent.itemActivated.connect(lambda item: self.recent_chosen.emit(item.data(Qt.UserRole)))
        self.recent.itemClicked.connect(lambda item: self.recent_chosen.emit(item.data(Qt.UserRole)))
        self.open_button.clicked.connect(self.open_requested)
        self.sample_button.clicked.connect(self.sample_requested)
        self.import_button.clicked.connect(self.import_requested)
        inner = QVBoxLayout()
        inner.setSpacing(10)
        for w in (title, self.note, self.problem):
            inner.addWidget(w)
        inner.addLayout(buttons)
        inner.addSpacing(8)
        inner.addWidget(self.recent_title)
        inner.addWidget(self.recent)
        column = QWidget()
        column.setMaximumWidth(640)
        column.setLayout(inner)
        lay = QHBoxLayout(self)
        lay.addStretch(1)
        lay.addWidget(column, 4)
        lay.addStretch(1)
        lay.setAlignment(column, Qt.AlignVCenter)

    def set_recent(self, paths: list[str]) -> None:
        """The recent stores that still exist, newest first."""
        self.recent.clear()
        for p in paths:
            if os.path.exists(p):
                item = QListWidgetItem(f"{os.path.basename(p)}    {os.path.dirname(p)}")
                item.setData(Qt.UserRole, p)
                item.setToolTip(plain_tooltip(p))
                self.recent.addItem(item)
        has = self.recent.count() > 0
        rows = self.recent.sizeHintForRow(0) if has else 0
        self.recent.setFixedHeight(min(220, rows * self.recent.count() + 2 * self.recent.frameWidth() + 4))
        self.recent_title.setVisible(has)
        self.recent.setVisible(has)

    def set_problem(self, text: str | None) -> None:
        """Why the last store did not open (None: nothing went wrong)."""
        self.problem.setText(text or "")
        self.problem.setVisible(bool(text))
