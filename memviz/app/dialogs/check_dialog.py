"""Tools ▸ Check store…: `memviz check` in the window. The check runs as a background job on
its own connection; Repair (rebuild the derived indexes, one audited transaction) is offered
when something repairable was found and the store is writable, after saying what it will do."""
from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QProgressBar, QPushButton, QVBoxLayout

from memviz.app.plain_text import plain_tooltip
from memviz.session.state import AppState
from memviz.store.check import CheckReport, check_store, repair, repair_plan
from memviz.words import count

JOB = "check-store"


class CheckDialog(QDialog):
    """`workers` runs the check and the repair off the GUI thread; `reload()` is called after a
    repair so the panels show the rebuilt store."""

    def __init__(self, state: AppState, workers, reload: Callable[[], None], parent=None) -> None:
        super().__init__(parent)
        self.state, self.workers, self.reload = state, workers, reload
        self.report: CheckReport | None = None
        self.setWindowTitle("Check store")
        self.resize(720, 460)
        self.status = QLabel()
        self.status.setTextFormat(Qt.PlainText)
        self.status.setWordWrap(True)
        self.bar = QProgressBar(maximum=100)
        self.text = QPlainTextEdit(readOnly=True)  # findings quote ids an agent wrote: plain text
        self.buttons = QDialogButtonBox(QDialogButtonBox.Close)
        self.buttons.rejected.connect(self.close)
        self.recheck_button = QPushButton("Check again")
        self.recheck_button.clicked.connect(self.run_check)
        self.repair_button = QPushButton("Repair…")
        self.repair_button.clicked.connect(self.confirm_repair)
        self.buttons.addButton(self.recheck_button, QDialogButtonBox.ActionRole)
        self.buttons.addButton(self.repair_button, QDialogButtonBox.ActionRole)
        lay = QVBoxLayout(self)
        for w in (self.status, self.bar, self.text, self.buttons):
            lay.addWidget(w)
        self._confirming = False

    def closeEvent(self, event) -> None:
        self.workers.cancel(JOB)  # a check still running stops at its next step
        super().closeEvent(event)

    # ------------------------------------------------------------ check
    def run_check(self) -> None:
        data = self.state.data
        self.report = None
        self._confirming = False
        self.repair_button.setEnabled(False)
        self.repair_button.setText("Repair…")
        if data is None:
            self.status.setText("No store is open.")
            return
        store = data.store
        self.status.setText(f"Checking {store.path} …")
        self.bar.setValue(0)
        self.bar.show()
        self.text.setPlainText("")

        def job(task):
            own = store.reopen()  # its own connection: the panels keep reading on theirs
            try:
                return check_store(own, task)
            finally:
                own.close()
        self.workers.submit(JOB, job, on_done=self._show, on_error=self._failed,
                            on_progress=lambda f, _text: self.bar.setValue(int(f * 100)))

    def _show(self, report: CheckReport) -> None:
        self.report = report
        self.bar.hide()
        store = self.state.data.store if self.state.data is not None else None
        lines = []
        for f in report.findings:
            lines.append("• " + f.describe())
        lines += [f"skipped: {s}" for s in report.skipped]
        plan = repair_plan(report)
        if plan:
            lines += ["", "Repair will:"] + [f"  - {p}" for p in plan]
        self.text.setPlainText("\n".join(lines))
        if report.clean:
            self.status.setText(f"{report.path}: clean — {report.checked} agree.")
        else:
            self.status.setText(f"{report.path}: {count(len(report.findings), 'finding')}"
                                + (f", {len(report.repairable)} repairable" if report.repairable else ""))
        why_not = (None if plan and store is not None and not store.read_only else
                   "nothing here can be rebuilt by memviz" if not plan else
                   f"the store is open read-only ({store.read_only_reason})" if store is not None else "no store")
        self.repair_button.setEnabled(why_not is None)
        self.repair_button.setToolTip("Rebuild the full-text index and vector rows from the memories"
                                      if why_not is None else plain_tooltip(f"Not available: {why_not}"))

    def _failed(self, err: Exception) -> None:
        self.bar.hide()
        self.status.setText(f"The check could not finish: {err}")

    # ------------------------------------------------------------ repair
    def confirm_repair(self) -> None:
        """First click: say what the repair will do; second click: do it."""
        if not self._confirming:
            self._confirming = True
            self.status.setText("Repair rebuilds only what is derived from the memories; no memory is changed. "
                                "Click “Repair now” to go ahead.")
            self.repair_button.setText("Repair now")
            return
        self.repair_now()

    def repair_now(self) -> None:
        data, report = self.state.data, self.report
        if data is None or report is None:
            return
        store = data.store
        self.repair_button.setEnabled(False)
        self.status.setText("Repairing …")

        def job(task):
            own = store.reopen()
            try:
                done = repair(own, report)
                return done, check_store(own)
            finally:
                own.close()

        def done(out):
            steps, after = out
            self._show(after)
            self.status.setText("Repaired: " + "; ".join(steps) + ". " + self.status.text())
            self.reload()
        # its own job name: closing the dialog does not drop a repair's result (the reload after it)
        self.workers.submit(JOB + "-repair", job, on_done=done, on_error=self._failed)
