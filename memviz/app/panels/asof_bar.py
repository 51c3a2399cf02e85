"""The window's one "as of" control: a scrubber over the store's history, a date box, Now,
and a play control that replays the store's growth.

It only sets `AppState.set_as_of(T)`; every panel follows `state.as_of_changed` and shows
the store as it was at T (memviz.context.Timeline: the store itself is not touched). The
slider's right end is "now". A dragged slider is coalesced (SCRUB_MS) so a step is never
queued behind a stale one. While the past is shown the bar says so, and why edits are off.
"""
from __future__ import annotations

import time

import numpy as np
from PySide6.QtCore import QDateTime, Qt, QTimer, QTimeZone, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QComboBox, QDateTimeEdit, QHBoxLayout, QLabel, QSlider, QToolButton, QWidget

from memviz.app.plots import style
from memviz.edits.applicable import past_refusal
from memviz.session.state import AppState

STEPS = 1000          # slider positions over the store's history (the last one is "now")
SCRUB_MS = 0          # slider moves coalesce in the next event-loop turn (no delay: stale ones are dropped)
PLAY_MS = 50          # a replay frame
SPEEDS = {"whole history in 10 s": 10.0, "in 30 s": 30.0, "in 1 min": 60.0, "in 3 min": 180.0}


class AsOfBar(QWidget):
    """stepped(T, seconds): the panels show T, updated in `seconds` (benchmarks and tests)."""

    stepped = Signal(object, float)

    def __init__(self, state: AppState, parent=None) -> None:
        super().__init__(parent)
        self.state = state
        self.span: tuple[float, float] | None = None   # first and last creation time of the store
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setMinimumWidth(120)  # shares its row with the edit toolbar on a small screen
        self.slider.setRange(0, STEPS)
        self.slider.setValue(STEPS)
        self.slider.setToolTip("Drag to see the store as it was at that moment; the right end is now")
        self.date = QDateTimeEdit(displayFormat="yyyy-MM-dd HH:mm:ss 'UTC'", calendarPopup=True)
        self.date.setTimeZone(QTimeZone.utc())
        self.date.setToolTip("The moment shown (UTC); type a date and press Enter")
        self.now_button = QToolButton(text="Now")
        self.now_button.setToolTip("Show the store as it is now (edits are possible again)")
        self.play_button = QToolButton(text="▶ Play", checkable=True)
        self.play_button.setToolTip("Replay the store's growth from its first memory")
        self.speed = QComboBox()
        self.speed.addItems(list(SPEEDS))
        self.info = style.ThemeLabel()
        lay = QHBoxLayout(self)
        lay.setContentsMargins(4, 0, 4, 0)
        title = QLabel("As of")
        bold = QFont(title.font())  # a font, not a style sheet: a styled label keeps its first scheme's colour
        bold.setBold(True)
        title.setFont(bold)
        for w in (title, self.slider):
            lay.addWidget(w, 3 if w is self.slider else 0)
        for w in (self.date, self.now_button, self.play_button, self.speed):
            lay.addWidget(w)
        lay.addWidget(self.info, 2)
        self._pending: float | None = None
        self._play_from: tuple[float, float] = (0.0, 0.0)  # (clock, moment) the replay counts from
        self._play_speed = self.speed.currentText()
        self._played: float | None = None  # the moment the replay last showed
        self._scrub = QTimer(self, singleShot=True, interval=SCRUB_MS, timeout=self._apply_pending)
        self._play = QTimer(self, interval=PLAY_MS, timeout=self._play_frame)
        self.slider.valueChanged.connect(self._slider_moved)
        self.date.editingFinished.connect(lambda: self.go_to(float(self.date.dateTime().toSecsSinceEpoch())))
        self.now_button.clicked.connect(lambda: self.go_to(None))
        self.play_button.toggled.connect(self._play_toggled)
        state.data_changed.connect(self._on_data)
        state.rows_changed.connect(self._on_rows)
        state.as_of_changed.connect(self._on_as_of)
        self._on_data(state.data)

    # ------------------------------------------------------------ store
    def _on_data(self, data) -> None:
        self._set_span()
        self._on_as_of(self.state.as_of)

    def _on_rows(self, delta) -> None:
        """A live refresh: new memories move the span's end and the count of the moment shown
        (the date box is left alone while the user types in it)."""
        if len(delta.added):
            self._set_span(delta.added)
        if self._scrub.isActive():  # a moment the user scrubbed to is about to be shown
            self._say(self.state.as_of)
        else:
            self._on_as_of(self.state.as_of, keep_date=self.date.hasFocus())

    def _set_span(self, added: np.ndarray | None = None) -> None:
        """The moments the slider spans: the store's creation times (None: nothing to step).
        `added`: rows a live refresh appended, which widen the span (no pass over every row)."""
        was, self.span = self.span, None
        if self.state.data is not None:
            created = self.state.loaded_arrays.created_at
            created = created[added] if added is not None and was is not None else created
            created = created[np.isfinite(created)]
            if len(created):
                lo, hi = float(created.min()), float(created.max())
                self.span = (lo, hi) if added is None or was is None else (min(was[0], lo), max(was[1], hi))
            elif added is not None:
                self.span = was
        for w in (self.slider, self.date, self.play_button, self.speed):
            w.setEnabled(self.span is not None)
        if self.span is None:
            self._play.stop()

    # ------------------------------------------------------------ slider <-> moment
    def moment_at(self, pos: int) -> float | None:
        """The moment slider position `pos` stands for (None: now)."""
        if self.span is None or pos >= STEPS:
            return None
        lo, hi = self.span
        return lo + (hi - lo) * pos / (STEPS - 1)

    def position_of(self, T: float | None) -> int:
        if self.span is None or T is None:
            return STEPS
        lo, hi = self.span
        if T >= hi:
            return STEPS - 1
        return int(round(max(T - lo, 0.0) / max(hi - lo, 1e-9) * (STEPS - 1)))

    def _slider_moved(self, pos: int) -> None:
        self._pending = self.moment_at(pos)
        self._scrub.start()

    def _apply_pending(self) -> None:
        self.go_to(self._pending)

    def go_to(self, T: float | None) -> None:
        """Show the store as of T (None: now); every panel follows."""
        t0 = time.perf_counter()
        self.state.set_as_of(T)
        self.stepped.emit(T, time.perf_counter() - t0)

    def _on_as_of(self, T, keep_date: bool = False) -> None:
        for w in (self.slider, self.date):
            w.blockSignals(True)
        if not self.slider.isSliderDown():
            self.slider.setValue(self.position_of(T))
        shown = T if T is not None else (self.span[1] if self.span else time.time())
        if not keep_date:
            self.date.setDateTime(QDateTime.fromSecsSinceEpoch(int(shown), QTimeZone.utc()))
        for w in (self.slider, self.date):
            w.blockSignals(False)
        self.now_button.setEnabled(T is not None)
        self._say(T)

    def _say(self, T) -> None:
        """The line beside the bar: now, or how many memories existed at T."""
        view = self.state.as_of_view
        if T is None or view is None:
            self.info.setText("now" if self.span else "")
            self.info.setToolTip("")
            self.info.set_pick(None)
            self.info.setFont(self.font())
            return
        n, then = self.state.data.n, int(view.visible.sum())
        self.info.setText(f"viewing the past: {then:,} of {n:,} memories existed · edits off")
        self.info.setToolTip(past_refusal(T))
        self.info.set_pick(lambda t: t.alarm)
        bold = QFont(self.font())
        bold.setBold(True)
        self.info.setFont(bold)

    # ------------------------------------------------------------ replay
    def _play_toggled(self, on: bool) -> None:
        if not on:
            self._play.stop()
            self.play_button.setText("▶ Play")
            return
        if self.span is None:
            self.play_button.setChecked(False)
            return
        self.play_button.setText("❚❚ Pause")
        if self.state.as_of is None:  # from the first memory
            self.go_to(self.span[0])
        self._play_from, self._play_speed = (time.monotonic(), self.state.as_of), self.speed.currentText()
        self._played = self.state.as_of
        self._play.start()

    def _play_frame(self) -> None:
        """One frame: the moment the replay's clock has reached, so the whole history takes the
        chosen time however long the panels take to draw a frame (a slow frame skips moments, it
        never slows the replay); at the end the window is back at now."""
        lo, hi = self.span
        now = time.monotonic()
        if self.state.as_of != self._played or self._play_speed != self.speed.currentText():
            # moved by hand meanwhile, or another speed: the replay goes on from here
            self._play_from = (now, self.state.as_of if self.state.as_of is not None else lo)
            self._play_speed = self.speed.currentText()
        started, T0 = self._play_from
        T = max(T0 + (hi - lo) * (now - started) / SPEEDS[self._play_speed], T0 + 1.0)
        if T >= hi:
            self.play_button.setChecked(False)
            self.go_to(None)
        else:
            self.go_to(T)
            self._played = self.state.as_of
