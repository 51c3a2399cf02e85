"""Tools ▸ Reflect…, Consolidate… and LLM settings…: the actions and the importance meter of
one window.

`ReflectTools(state, workers, settings, perform, dialog_parent)` owns the actions Reflect…,
Consolidate…, LLM settings… and the importance meter; the window puts them in its menus,
toolbar and status bar. The dialogs (dialogs/reflect_dialog.py, consolidate_dialog.py) do the
work on a worker; writes go through `perform` (the edit controller's: the one History and undo
stack of the window), so Ctrl+Z retires written reflections / puts consolidated values back.
Retrieval for the evidence uses the state's parameters (`state.params`), the ones the query
panel shows.
"""
from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QSettings, Qt, Signal
from PySide6.QtGui import QAction, QColor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QToolButton, QWidget

from memviz.app.dialogs.llm_settings import LLMSettingsDialog
from memviz.app.dialogs.reflect_dialog import ReflectDialog
from memviz.app.plain_text import plain_tooltip
from memviz.app.plots.style import theme
from memviz.app.workers import Workers
from memviz.reflect import importance_status
from memviz.reflect.reflection import DEFAULT_THRESHOLD, THRESHOLD_META_KEY
from memviz.session.state import AppState
from memviz.store import iso
from memviz.store.errors import StoreError
from memviz.words import count


class ImportanceMeter(QWidget):
    """Status-bar meter: importance accumulated since the last reflection vs the threshold."""

    def __init__(self, reflect_action, parent=None) -> None:
        super().__init__(parent)
        self.bar = QProgressBar(maximumWidth=150, minimum=0, maximum=1000)
        self.bar.setTextVisible(True)
        self.suggest = QToolButton()
        self.suggest.setDefaultAction(reflect_action)
        self.suggest.setText("Reflect now?")
        self.suggest.setToolButtonStyle(Qt.ToolButtonTextOnly)
        self.suggest.hide()
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.caption = QLabel("importance since reflection")  # what the bar measures, without hovering
        lay.addWidget(self.caption)
        lay.addWidget(self.bar)
        lay.addWidget(self.suggest)
        self.status = None

    def show_status(self, st) -> None:
        self.status = st
        if st is None:
            self.hide()
            return
        frac = st.accumulated / st.threshold if st.threshold > 0 else 1.0
        self.bar.setValue(int(min(frac, 1.0) * 1000))
        self.bar.setFormat(f"{st.accumulated:g} / {st.threshold:g}")
        who = f" of {st.agent}" if st.agent else ""
        self.setToolTip(plain_tooltip(f"Importance of {count(st.count, 'memory')}{who} recorded since the last "
                                      f"reflection: {st.accumulated:g} (reflect at {st.threshold:g})"))
        self.suggest.setVisible(st.crossed)
        self.show()


class ReflectTools(QObject):
    """Owns the reflect/consolidate UI of one window: `reflect_action`, `consolidate_action`,
    `llm_action` and the importance `meter` (the window places them).

    error(title, text): something the user must see in a message box."""

    error = Signal(str, str)

    def __init__(self, state: AppState, workers: Workers, settings: QSettings,
                 perform: Callable[[object], object], dialog_parent: QWidget | None = None) -> None:
        super().__init__(dialog_parent)
        self.state, self.workers, self.settings = state, workers, settings
        self._perform = perform
        self.dialog_parent = dialog_parent
        self.dialog: ReflectDialog | None = None
        self.consolidate_dialog = None
        self.settings_dialog: LLMSettingsDialog | None = None
        self.reflect_action = QAction("&Reflect…", self)
        self.reflect_action.setToolTip("Propose reflections with the LLM, review them, write the accepted")
        self.reflect_action.triggered.connect(lambda *_: self.open_reflect())
        self.consolidate_action = QAction("&Consolidate…", self)
        self.consolidate_action.setToolTip("Apply decay and soft-delete what fell below the confidence floor")
        self.consolidate_action.triggered.connect(lambda *_: self.open_consolidate())
        self.llm_action = QAction("&LLM settings…", self)
        self.llm_action.triggered.connect(lambda *_: self.open_settings())
        self.meter = ImportanceMeter(self.reflect_action)
        self.meter_agent: str | None = None
        self._statuses: dict = {}  # agent -> ImportanceStatus of the data shown (two queries each)
        self.meter.hide()
        state.data_changed.connect(self._on_data)
        state.as_of_changed.connect(self._on_as_of)
        # a full scan of the agent's rows: re-read when the data or the current agent changes, not per click
        state.selection_changed.connect(
            lambda *a: self.current_agent() != self.meter_agent and self.refresh_meter(reread=False))
        self._on_data(state.data)

    # ------------------------------------------------------------ store
    @property
    def store(self):
        return None if self.state.data is None else self.state.data.store

    def _on_as_of(self, T) -> None:
        """Reflecting and consolidating write to the store as it is now: off while viewing the past."""
        store = self.store
        writable = store is not None and not store.read_only and not store.refuses("insert") and T is None
        for act in (self.reflect_action, self.consolidate_action):
            act.setEnabled(writable)
        if T is not None:
            self.reflect_action.setStatusTip(f"Not available while viewing the past (as of {iso(T)} UTC)")

    def _on_data(self, data) -> None:
        self._statuses = {}
        store = self.store
        refused = None if store is None or store.read_only else store.refuses("insert")
        writable = store is not None and not store.read_only and refused is None
        tip = "" if writable else f" ({refused or 'the store is not open for writing'})"
        self.reflect_action.setEnabled(writable)
        self.consolidate_action.setEnabled(writable)
        self.reflect_action.setStatusTip("Reflect with the LLM" + tip)
        self.refresh_meter(reread=False)  # the arrays were just read: no scan of the table

    def current_agent(self) -> str | None:
        """The agent of the current memory, else the one with the most memories."""
        data = self.state.data
        if data is None or not data.agents:
            return None
        cur = self.state.current
        return str(data.arrays.agent[cur]) if cur is not None else data.agents[0]

    def refresh_meter(self, reread: bool = True) -> None:
        """Show the current agent's status; `reread` asks the store itself (two scans of its table:
        seconds at a million rows), else the one computed earlier for this data, or one computed from
        the loaded arrays."""
        store, agent = self.store, self.current_agent()
        self.meter_agent = agent
        st = None
        if store is not None and agent is not None:
            if reread or agent not in self._statuses:
                try:
                    self._statuses[agent] = importance_status(store, agent,
                                                              arrays=None if reread else self.state.loaded_arrays)
                except (ValueError, StoreError):
                    self._statuses[agent] = None  # an agent with no live memories: nothing to show
            st = self._statuses[agent]
        self.meter.show_status(st)

    def threshold(self) -> float:
        store = self.store
        return DEFAULT_THRESHOLD if store is None else float(store.meta(THRESHOLD_META_KEY, DEFAULT_THRESHOLD))

    def set_threshold(self, value: float) -> None:
        """The store's own reflection threshold (memviz_meta), shared with `memviz reflect`."""
        store = self.store
        if store is None or float(value) == self.threshold():
            return
        try:
            store.set_meta(THRESHOLD_META_KEY, float(value))
        except StoreError as e:
            self.error.emit("Threshold not saved", str(e))
        self._statuses = {}  # every agent's status compares with the new threshold
        self.refresh_meter(reread=False)

    # ------------------------------------------------------------ writes
    def perform(self, action) -> bool:
        """Write `action` through the edit controller's `perform` (undoable, busy retries, errors
        shown, reload selecting what changed); True when it was written."""
        return self._perform(action) is not None

    # ------------------------------------------------------------ dialogs
    def open_reflect(self) -> None:
        if self.dialog is None:
            self.dialog = ReflectDialog(self, alarm=lambda: QColor(theme().alarm), caution=lambda: QColor(theme().caution))
        self.dialog.set_agents()
        self.dialog.show()
        self.dialog.raise_()

    def open_consolidate(self) -> None:
        from memviz.app.dialogs.consolidate_dialog import ConsolidateDialog
        if self.store is None:
            return
        if self.consolidate_dialog is not None:
            self.consolidate_dialog.close()
        self.consolidate_dialog = ConsolidateDialog(self)
        self.consolidate_dialog.show()
        self.consolidate_dialog.make_plan()

    def open_settings(self) -> LLMSettingsDialog:
        self.settings_dialog = LLMSettingsDialog(self.settings, self.workers, self.dialog_parent,
                                                 ok=lambda: QColor(theme().ok), alarm=lambda: QColor(theme().alarm))
        self.settings_dialog.open()
        return self.settings_dialog
