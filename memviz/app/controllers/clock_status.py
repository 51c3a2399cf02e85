"""The store's clock in the window: the status bar's label and the Tools ▸ Set store clock…
action, which opens dialogs/clock_dialog.py's ClockDialog.

A change is recorded in the store when it is writable and the user asks for it, otherwise it
holds for this session (`store.clock_override`); either way the store is re-read
(`reload_requested`) so the query, the map's score colouring, the meter and consolidation
measure from the new "now".
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel

from memviz.app.dialogs.clock_dialog import ClockDialog
from memviz.app.plain_text import plain_tooltip
from memviz.session.state import AppState
from memviz.store import iso
from memviz.store.clock import Clock, store_clock
from memviz.store.errors import StoreError

AUTO = "auto"


class ClockStatus(QObject):
    """The status-bar label and the Set store clock… action of one window (the window places
    both). `error(title, text)` when a clock cannot be recorded; `reload_requested` after a
    change, so every panel re-reads the store and measures from the new "now"."""

    error = Signal(str, str)
    reload_requested = Signal()

    def __init__(self, state: AppState, dialog_parent=None) -> None:
        super().__init__(dialog_parent)
        self.state, self.dialog_parent = state, dialog_parent
        self.label = QLabel()
        self.label.setTextFormat(Qt.PlainText)
        self.action = QAction("Set store &clock…", self)
        self.action.triggered.connect(self.open_dialog)
        self.action.setStatusTip("The 'now' that recency, decay, consolidation and the importance meter measure from")
        state.data_changed.connect(self.refresh)
        self.refresh()

    def clock(self) -> Clock | None:
        data = self.state.data
        return None if data is None else store_clock(data.store, data.arrays)

    def refresh(self, *_) -> None:
        c = self.clock()
        self.action.setEnabled(c is not None)
        self.label.setVisible(c is not None)
        if c is not None:
            self.label.setText(f"clock {iso(c.now())[:16]} ({c.mode})")
            self.label.setToolTip(plain_tooltip(f"Ages are measured from {c.describe()}" + (f" — {c.source}" if c.source else "")
                                                + ".\nTools ▸ Set store clock… changes it."))

    def open_dialog(self) -> ClockDialog | None:
        data = self.state.data
        if data is None:
            return None
        dlg = ClockDialog(self.dialog_parent, data.store, data.arrays)
        dlg.accepted.connect(lambda: self._apply(dlg))
        dlg.open()
        return dlg

    def _apply(self, dlg: ClockDialog) -> None:
        try:
            dlg.apply()
        except StoreError as e:  # read-only, busy: shown, never a traceback
            self.error.emit("Cannot set the clock", str(e))
            return
        self.reload_requested.emit()
