"""Tools ▸ Reflect…: propose reflections with the LLM on a worker, review them as cards, write
the accepted (undoable, through the tools' `perform`). Opened by
app/controllers/reflect_tools.py `ReflectTools`."""
from __future__ import annotations

from PySide6.QtCore import Qt
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
    QVBoxLayout,
    QWidget,
)

from memviz.app.dialogs.buttons import action_and_close
from memviz.app.dialogs.llm_settings import load_llm_settings
from memviz.app.plain_text import plain_tooltip
from memviz.app.tinted import Colour, TintedLabel
from memviz.reflect import LLMClient, ReflectError, ReflectionConfig, Reflector, engine_retriever
from memviz.reflect.reflection import DEFAULT_THRESHOLD
from memviz.reflect.undoable import AcceptReflections
from memviz.store.errors import StoreError, user_message
from memviz.tasks import Cancelled, Task
from memviz.words import count


class ProposalCard(QGroupBox):
    """One proposed reflection: accept box, question, text (plain), cited evidence (clickable)."""

    def __init__(self, n: int, proposal, select_ids, caution: Colour | None = None) -> None:
        super().__init__(f"Proposal {n}")
        self.proposal = proposal
        self.accept_box = QCheckBox("Accept")
        self.accept_box.setChecked(bool(proposal.decision))
        self.accept_box.toggled.connect(lambda on: proposal.accept() if on else proposal.reject())
        question = QLabel(f"Question: {proposal.question}")
        question.setTextFormat(Qt.PlainText)
        question.setWordWrap(True)
        f = question.font()
        f.setItalic(True)  # set apart by its style: in the palette's text colour it reads in either scheme
        question.setFont(f)
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
        self.duplicate = TintedLabel(f"⚠ Duplicate of {proposal.duplicate_of}" if proposal.duplicate_of else "", caution)
        self.duplicate.setVisible(bool(proposal.duplicate_of))
        lay.addWidget(self.duplicate)
        lay.addLayout(top)
        lay.addWidget(ev_label)
        lay.addWidget(self.evidence)


class ReflectDialog(QDialog):
    """Non-modal: Propose (worker, progress, Cancel) -> cards -> Write accepted (undoable)."""

    JOB = "reflect"

    def __init__(self, tools, *, alarm: Colour | None = None, caution: Colour | None = None) -> None:
        """`tools`: the window's ReflectTools (app/controllers/reflect_tools.py); `alarm()`,
        `caution()`: the colours of an error and of a note in the window's theme now."""
        super().__init__(tools.dialog_parent)
        self.alarm, self.caution = alarm, caution
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
        self.message = TintedLabel()
        self.problems = TintedLabel(colour=caution)
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
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addLayout(llm)
        lay.addLayout(run)
        lay.addWidget(self.message)
        lay.addWidget(self.problems)
        lay.addWidget(scroll, 1)
        lay.addLayout(action_and_close(self, self.write_button))
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
        self.message.set_colour(self.alarm if error else None)
        f = self.message.font()
        f.setBold(error)
        self.message.setFont(f)

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
            card = ProposalCard(n, p, lambda ids: self.state.select_ids(ids, source=self), self.caution)
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
