"""Tools ▸ Reflect…: propose reflections with the LLM on a worker, review, write the accepted.

`ReflectTools(state, workers, settings, perform, dialog_parent)` owns the actions Reflect…,
Consolidate…, LLM settings… and the importance meter; the window puts them in its menus,
toolbar and status bar. Writes go through `perform` (the edit controller's: the one History
and undo stack of the window), so Ctrl+Z retires written reflections / puts consolidated
values back. Retrieval for the evidence uses the state's parameters (`state.params`), the
ones the query panel shows.
"""
from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QSettings, Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from memviz.app.dialogs.llm_settings import LLMSettingsDialog, load_llm_settings
from memviz.app.plain_text import plain_tooltip
from memviz.app.workers import Workers
from memviz.reflect import LLMClient, ReflectError, ReflectionConfig, Reflector, engine_retriever, importance_status
from memviz.reflect.reflection import DEFAULT_THRESHOLD, THRESHOLD_META_KEY
from memviz.reflect.undoable import AcceptReflections
from memviz.session.state import AppState
from memviz.store import iso
from memviz.store.errors import StoreError, user_message
from memviz.tasks import Cancelled, Task
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
            self.dialog = ReflectDialog(self)
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
        self.settings_dialog = LLMSettingsDialog(self.settings, self.workers, self.dialog_parent)
        self.settings_dialog.open()
        return self.settings_dialog


class ProposalCard(QGroupBox):
    """One proposed reflection: accept box, question, text (plain), cited evidence (clickable)."""

    def __init__(self, n: int, proposal, select_ids) -> None:
        super().__init__(f"Proposal {n}")
        self.proposal = proposal
        self.accept_box = QCheckBox("Accept")
        self.accept_box.setChecked(bool(proposal.decision))
        self.accept_box.toggled.connect(lambda on: proposal.accept() if on else proposal.reject())
        question = QLabel(f"Question: {proposal.question}")
        question.setTextFormat(Qt.PlainText)
        question.setWordWrap(True)
        question.setStyleSheet("color: #555; font-style: italic;")
        self.text = QLabel(proposal.content)
        self.text.setTextFormat(Qt.PlainText)  # LLM output is untrusted: never rich text
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextSelectableByMouse)
        f = self.text.font()
        f.setPointSizeF(f.pointSizeF() * 1.1)
        self.text.setFont(f)
        self.evidence = QListWidget()
        self.evidence.setToolTip("Click a memory to select it in the other panels")
        for e in proposal.cited:
            it = QListWidgetItem(f"{e.id[:12]}  [{e.kind}, importance {e.importance:g}]  {e.content}")
            it.setData(Qt.UserRole, e.id)
            it.setToolTip(plain_tooltip(e.content))
            self.evidence.addItem(it)
        self.evidence.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)  # long texts elide; tooltip has all
        self.evidence.setTextElideMode(Qt.ElideRight)
        rows = max(1, min(len(proposal.cited), 5))
        self.evidence.setFixedHeight(self.evidence.sizeHintForRow(0) * rows + 2 * self.evidence.frameWidth() + 4)
        self.evidence.itemClicked.connect(lambda it: select_ids([it.data(Qt.UserRole)]))
        ev_label = QLabel(f"Evidence cited ({len(proposal.cited)} of {len(proposal.evidence)} offered):")
        if proposal.dropped_citations:
            ev_label.setText(ev_label.text()[:-1] + f"; {count(len(proposal.dropped_citations), 'unknown id')} dropped:")
        top = QHBoxLayout()
        top.addWidget(self.text, 1)
        top.addWidget(self.accept_box, 0, Qt.AlignTop)
        lay = QVBoxLayout(self)
        lay.addWidget(question)
        self.duplicate = QLabel(f"⚠ Duplicate of {proposal.duplicate_of}" if proposal.duplicate_of else "")
        self.duplicate.setTextFormat(Qt.PlainText)
        self.duplicate.setStyleSheet("color: #8a5a00;")
        self.duplicate.setVisible(bool(proposal.duplicate_of))
        lay.addWidget(self.duplicate)
        lay.addLayout(top)
        lay.addWidget(ev_label)
        lay.addWidget(self.evidence)


class ReflectDialog(QDialog):
    """Non-modal: Propose (worker, progress, Cancel) -> cards -> Write accepted (undoable)."""

    JOB = "reflect"

    def __init__(self, tools: ReflectTools) -> None:
        super().__init__(tools.dialog_parent)
        self.tools, self.state, self.workers = tools, tools.state, tools.workers
        self.setWindowTitle("Reflect")
        self.run = None
        self.reflector = None
        self.task: Task | None = None  # the running Propose job
        self.cards: list[ProposalCard] = []

        self.agent = QComboBox()
        self.questions = QSpinBox(minimum=1, maximum=10, value=3)
        self.evidence_k = QSpinBox(minimum=1, maximum=50, value=10)
        self.threshold = QSpinBox(minimum=1, maximum=1_000_000, value=int(DEFAULT_THRESHOLD))
        self.threshold.setToolTip("Suggest reflecting once the importance recorded since the last reflection "
                                  "reaches this (saved in the store)")
        self.threshold.editingFinished.connect(lambda: tools.set_threshold(self.threshold.value()))
        self.llm_label = QLabel()
        self.llm_label.setTextFormat(Qt.PlainText)
        settings_btn = QPushButton("LLM settings…")
        settings_btn.clicked.connect(lambda: tools.open_settings().finished.connect(lambda *_: self._show_llm()))
        self.propose_button = QPushButton("Propose reflections")
        self.propose_button.setDefault(True)
        self.propose_button.clicked.connect(self.propose)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.hide()
        self.progress = QProgressBar(maximum=1000)
        self.progress.hide()
        self.message = QLabel()
        self.message.setTextFormat(Qt.PlainText)
        self.message.setWordWrap(True)
        self.problems = QLabel()
        self.problems.setTextFormat(Qt.PlainText)
        self.problems.setWordWrap(True)
        self.problems.setStyleSheet("color: #8a5a00;")
        self.problems.hide()
        self.cards_box = QWidget()
        self.cards_layout = QVBoxLayout(self.cards_box)
        self.cards_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.NoFrame)
        scroll.setWidget(self.cards_box)
        self.write_button = QPushButton("Write accepted")
        self.write_button.setEnabled(False)
        self.write_button.clicked.connect(self.write)
        close = QPushButton("Close")
        close.clicked.connect(self.close)

        top = QHBoxLayout()
        top.addWidget(QLabel("Agent"))
        top.addWidget(self.agent, 1)
        top.addWidget(QLabel("Questions"))
        top.addWidget(self.questions)
        top.addWidget(QLabel("Evidence per question"))
        top.addWidget(self.evidence_k)
        top.addWidget(QLabel("Suggest at"))
        top.addWidget(self.threshold)
        llm = QHBoxLayout()
        llm.addWidget(self.llm_label, 1)
        llm.addWidget(settings_btn)
        run = QHBoxLayout()
        run.addWidget(self.propose_button)
        run.addWidget(self.progress, 1)
        run.addWidget(self.cancel_button)
        bottom = QHBoxLayout()
        bottom.addStretch(1)
        bottom.addWidget(self.write_button)
        bottom.addWidget(close)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addLayout(llm)
        lay.addLayout(run)
        lay.addWidget(self.message)
        lay.addWidget(self.problems)
        lay.addWidget(scroll, 1)
        lay.addLayout(bottom)
        self.resize(760, 640)
        self.workers.finished.connect(self._job_ended)
        self._show_llm()

    def _show_llm(self) -> None:
        s = load_llm_settings(self.tools.settings)
        self.llm_label.setText(f"LLM: {s.chat_model} at {s.base_url}")

    def set_agents(self) -> None:
        data = self.state.data
        agents = list(data.agents) if data is not None else []
        current = self.tools.current_agent()
        self.agent.clear()
        for a in agents:
            self.agent.addItem(a or "(no agent)", a)
        if current in agents:
            self.agent.setCurrentIndex(agents.index(current))
        self.threshold.setValue(int(round(self.tools.threshold())))
        store = self.tools.store
        self.threshold.setEnabled(store is not None and not store.read_only)

    def _say(self, text: str, error: bool = False) -> None:
        self.message.setText(text)
        self.message.setStyleSheet("color: #b00; font-weight: bold;" if error else "")

    def _busy(self, on: bool) -> None:
        self.propose_button.setEnabled(not on)
        self.cancel_button.setVisible(on)
        self.progress.setVisible(on)
        n = sum(c.accept_box.isChecked() and c.accept_box.isEnabled() for c in self.cards)
        self.write_button.setText(f"Write {n} accepted" if n else "Write accepted")
        self.write_button.setEnabled(not on and self.run is not None and n > 0)

    def _clear(self) -> None:
        for c in self.cards:
            c.setParent(None)
            c.deleteLater()
        self.cards = []
        self.run = None
        self.problems.hide()

    # ------------------------------------------------------------ propose
    def propose(self) -> None:
        store = self.tools.store
        if store is None:
            return
        self._clear()
        try:
            llm = LLMClient(load_llm_settings(self.tools.settings))
        except ReflectError as e:
            self._say(str(e), error=True)
            return
        agent = self.agent.currentData()
        config = ReflectionConfig(questions=self.questions.value(), evidence=self.evidence_k.value())
        params = self.state.params  # the retrieval setting the query panel shows

        def job(task):
            reflector = Reflector(store, llm, agent=agent, config=config,
                                  retriever=engine_retriever(store, agent=agent, params=params))
            return reflector, reflector.propose(task)

        self.progress.setRange(0, 0)
        self._busy(True)
        self._say(f"Asking {llm.settings.chat_model} …")
        self.task = self.workers.submit(self.JOB, job, on_done=self._proposed, on_error=self._failed,
                                        on_progress=self._progress)

    def _progress(self, fraction: float, text: str) -> None:
        self.progress.setRange(0, 1000)
        self.progress.setValue(int(fraction * 1000))
        self._say(text)

    def cancel(self) -> None:
        self.workers.cancel(self.JOB)

    def _job_ended(self, name: str) -> None:
        if name == self.JOB and self.task is not None and self.task.cancelled:
            self.task = None
            self._busy(False)
            self._say(str(Cancelled()))  # "Cancelled; nothing was written."

    def _failed(self, err: Exception) -> None:
        self.task = None
        self._busy(False)
        text = user_message(err, (ReflectError,))
        self._say(f"{text}\nNothing was written.", error=True)

    def _proposed(self, out) -> None:
        self.task = None
        self.reflector, self.run = out
        run = self.run
        for n, p in enumerate(run.proposals, 1):
            card = ProposalCard(n, p, lambda ids: self.state.select_ids(ids, source=self))
            card.accept_box.toggled.connect(lambda *_: self._busy(False))
            self.cards.append(card)
            self.cards_layout.insertWidget(self.cards_layout.count() - 1, card)
        if run.problems:
            self.problems.setText("Notes: " + "; ".join(run.problems))
            self.problems.show()
        self._busy(False)
        n = len(run.proposals)
        self._say(f"{n} reflection{'s' if n != 1 else ''} proposed by {run.model} for {run.agent or 'the agent'} "
                  "— tick the ones to keep, then Write accepted." if n else
                  "The LLM proposed no usable reflection; nothing was written.", error=not n)

    # ------------------------------------------------------------ write
    def write(self) -> None:
        if self.run is None:
            return
        for c in self.cards:
            (c.proposal.accept if c.accept_box.isChecked() else c.proposal.reject)()
        try:
            action = AcceptReflections(self.reflector, self.run)
        except StoreError as e:
            self._say(str(e), error=True)
            return
        if self.tools.perform(action):
            done = [c for c in self.cards if c.proposal.written_id]
            for c in self.cards:
                c.accept_box.setEnabled(False)
                if c.proposal.written_id:
                    c.setTitle(c.title() + " — written")
            self.write_button.setEnabled(False)
            self._say(f"Wrote {len(done)} reflection{'s' if len(done) != 1 else ''} (Edit ▸ Undo retires them).")


__all__ = ["ReflectTools", "ReflectDialog", "ProposalCard", "ImportanceMeter"]
