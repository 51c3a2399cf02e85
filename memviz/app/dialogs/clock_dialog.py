"""Tools ▸ Set store clock…: the dialog that changes the store's clock (memviz.store.clock
holds the rules; this is only their face; app/controllers/clock_status.py opens it).

A change is recorded in the store when it is writable and the user asks for it, otherwise it
holds for this session (`store.clock_override`); either way the store is re-read so the
query, the map's score colouring, the meter and consolidation measure from the new "now".
"""
from __future__ import annotations

from PySide6.QtCore import QDateTime, Qt, QTimeZone
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QDateTimeEdit,
    QDialog,
    QDialogButtonBox,
    QGridLayout,
    QLabel,
    QRadioButton,
    QVBoxLayout,
)

from memviz.app.plain_text import plain_tooltip
from memviz.store import iso
from memviz.store.clock import NEWEST, SIMULATED, WALL, Clock, newest_time, record_clock, store_clock

AUTO = "auto"


class ClockDialog(QDialog):
    """Choose the store's clock: automatic, wall, newest memory, or a fixed time."""

    def __init__(self, parent, store, arrays=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Store clock")
        self.store = store
        current = store_clock(store, arrays)
        self.newest = newest_time(store, arrays)
        intro = QLabel("Recency, decay, consolidation and the importance meter measure ages from the store's "
                       f"clock.\nIn force now: {current.describe()}" + (f" — {current.source}" if current.source else ""))
        intro.setTextFormat(Qt.PlainText)
        intro.setWordWrap(True)
        self.choices = QButtonGroup(self)
        self.buttons: dict[str, QRadioButton] = {}
        labels = {
            AUTO: "Automatic: the recorded clock, else the newest memory's time when it is long past, else the wall clock",
            WALL: "Wall clock (a live agent writing now)",
            NEWEST: "Newest memory: " + (iso(self.newest) + " UTC" if self.newest is not None else "(no memories)"),
            SIMULATED: "This time (a simulation's or a past moment):",
        }
        for key, text in labels.items():
            b = QRadioButton(text)
            self.buttons[key] = b
            self.choices.addButton(b)
        self.buttons[NEWEST].setEnabled(self.newest is not None)
        self.when = QDateTimeEdit(displayFormat="yyyy-MM-dd HH:mm:ss 'UTC'", calendarPopup=True)
        self.when.setTimeZone(QTimeZone.utc())
        self.when.setDateTime(QDateTime.fromSecsSinceEpoch(int(current.now()), QTimeZone.utc()))
        self.when.dateTimeChanged.connect(lambda *_: self.buttons[SIMULATED].setChecked(True))
        overridden = store.clock_override is not None
        self.buttons[current.mode if overridden or current.mode != NEWEST else AUTO].setChecked(True)
        self.record = QCheckBox("Record in the store (otherwise for this session only)")
        self.record.setChecked(not store.read_only)
        self.record.setEnabled(not store.read_only)
        if store.read_only:
            self.record.setToolTip(plain_tooltip(f"The store is read-only: {store.read_only_reason}"))
        grid = QGridLayout()
        for r, key in enumerate((AUTO, WALL, NEWEST)):
            grid.addWidget(self.buttons[key], r, 0, 1, 2)
        grid.addWidget(self.buttons[SIMULATED], 3, 0)
        grid.addWidget(self.when, 3, 1)
        box = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        box.accepted.connect(self.accept)
        box.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(intro)
        lay.addLayout(grid)
        lay.addWidget(self.record)
        lay.addWidget(box)

    def chosen(self) -> Clock | None:
        """The clock chosen (None: automatic)."""
        if self.buttons[WALL].isChecked():
            return Clock(WALL, None, "chosen")
        if self.buttons[NEWEST].isChecked():
            return Clock(NEWEST, self.newest, "chosen")
        if self.buttons[SIMULATED].isChecked():
            return Clock(SIMULATED, float(self.when.dateTime().toSecsSinceEpoch()), "chosen")
        return None

    def apply(self) -> None:
        """Put the choice in force: written to the store, or held for this session."""
        clock = self.chosen()
        if self.record.isChecked() and not self.store.read_only:
            self.store.clock_override = None
            record_clock(self.store, clock)
        else:
            self.store.clock_override = clock
