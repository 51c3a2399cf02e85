"""Dialogs of judging and tuning: save the query on screen with its marks to a judged set, and
a fit's report (what was fitted, held out, per query, whether it is recommended, what would
change) with Accept. Both are opened with `open()`/`show()` (no nested event loop); store text
(queries, memory previews, set names) is shown in plain-text widgets only.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
)

from memviz.app.dialogs.buttons import ok_cancel
from memviz.app.plain_text import plain_label, plain_tooltip
from memviz.app.tinted import TintedLabel
from memviz.judge import FitReport
from memviz.retrieval import Params
from memviz.session.judging import Changes, Marks, describe, measure_label, measure_name
from memviz.store import iso
from memviz.words import count


def _queries(n: int) -> str:
    return count(n, "judged query", "judged queries")


class SaveJudgedDialog(QDialog):
    """Which set (one of the store's, or a new name) and which id the query is saved as, with
    what is saved: the query, its moment, its filters, the marks, who judged."""

    def __init__(self, marks: Marks, sets: Sequence[str], default_set: str, suggested_id: str,
                 ids_of: Mapping[str, Sequence[str]], as_of: float, params: Params, judged_by: str, parent=None) -> None:
        super().__init__(parent)
        self.marks, self.ids_of, self.own_id = marks, ids_of, (marks.set_name, marks.query_id)
        self.setWindowTitle("Save the query to a judged set")
        self.setObjectName("save_judged_dialog")
        lay = QVBoxLayout(self)
        filters = [f"{what} {', '.join(v)}" for what, v in (("agent", params.agents), ("kind", params.kinds),
                                                             ("tag", params.tags)) if v]
        lay.addWidget(plain_label(
            f"Query: {marks.title()}\n"
            f"Asked as of {iso(as_of)} UTC ({'the moment the window shows' if params.as_of is not None else 'the store’s clock now'}): "
            "recency is measured from it when the set is measured\n"
            f"Filters: {' · '.join(filters) if filters else 'none'}\n"
            f"Marks: {marks.describe()}\n"
            f"Judged by: {judged_by or '(unknown user)'}, now"))
        form = QFormLayout()
        self.set_box = QComboBox()
        self.set_box.setEditable(True)
        self.set_box.addItems(list(sets))
        self.set_box.setCurrentText(default_set)
        self.set_box.setToolTip("A judged set kept with the store, or a new name for a new set")
        self.id_edit = QLineEdit(suggested_id)
        self.id_edit.setToolTip("The query's id in the set (the judged panel lists it by it)")
        form.addRow("Judged set:", self.set_box)
        form.addRow("Query id:", self.id_edit)
        lay.addLayout(form)
        self.note = plain_label("")
        lay.addWidget(self.note)
        self.buttons = ok_cancel(self, "Save")
        lay.addWidget(self.buttons)
        self.set_box.currentTextChanged.connect(self._check)
        self.id_edit.textChanged.connect(self._check)
        self._check()
        self.resize(560, 300)

    def set_name(self) -> str:
        return self.set_box.currentText().strip()

    def query_id(self) -> str:
        return self.id_edit.text().strip()

    def _check(self) -> None:
        name, qid = self.set_name(), self.query_id()
        ok = bool(name) and bool(qid)
        if not ok:
            text = "Name the set and the query."
        elif name not in self.ids_of:
            text = f"A new judged set “{name}” is made."
        elif qid in self.ids_of[name]:
            text = (f"Saving updates “{qid}” in “{name}”." if (name, qid) == self.own_id else
                    f"“{name}” holds a query “{qid}” already: saving replaces it (Edit ▸ Undo puts it back).")
        else:
            text = f"“{qid}” is added to “{name}” ({_queries(len(self.ids_of[name]))} now)."
        self.note.setText(text)
        self.buttons.button(QDialogButtonBox.Ok).setEnabled(ok)


class FitDialog(QDialog):
    """A fit: its options (measure, folds, how queries are held out), progress and cancel, then
    the report and what accepting would change; Accept saves the fitted parameters as a named
    parameter set and uses them. Nothing is applied before Accept.

    start_requested(metric, folds, by_agent), cancel_requested(), accept_requested(name).
    `preview(memory id)` and `query_text(query id)`: what a memory and a judged query say;
    `tone(name)`: the colour of "up", "down" or "caution" (the window's theme)."""

    start_requested = Signal(str, int, bool)
    cancel_requested = Signal()
    accept_requested = Signal(str)

    def __init__(self, preview: Callable[[str], str], query_text: Callable[[str], str], tone: Callable[[str], QColor],
                 parent=None) -> None:
        super().__init__(parent)
        self.preview, self.query_text, self.tone = preview, query_text, tone
        self.report: FitReport | None = None
        self.start: Params | None = None
        self.running = False
        self.existing: set[str] = set()
        self.read_only: str | None = None
        self.setWindowTitle("Fit the weights")
        self.setObjectName("fit_dialog")
        lay = QVBoxLayout(self)
        self.title = plain_label("")
        bold = QFont(self.title.font())
        bold.setBold(True)
        self.title.setFont(bold)
        lay.addWidget(self.title)
        opts = QHBoxLayout()
        self.metric_box = QComboBox()
        self.metric_box.setToolTip("The measure the fit maximises (mean over the held-out queries)")
        self.folds = QSpinBox(minimum=2, maximum=20, value=5)
        self.folds.setToolTip("Cross-validation: each fold's weights are fitted on the other folds and measured on it")
        self.by = QComboBox()
        self.by.addItems(["query", "agent"])
        self.by.setToolTip("Hold out single queries, or each agent's queries together (a conversation held out whole)")
        self.again = QPushButton("Fit again")
        for w in (QLabel("maximise"), self.metric_box, QLabel("folds"), self.folds, QLabel("hold out by"), self.by):
            opts.addWidget(w)
        opts.addStretch(1)
        opts.addWidget(self.again)
        lay.addLayout(opts)
        run = QHBoxLayout()
        self.bar = QProgressBar(maximum=1000)
        self.bar.setTextVisible(True)
        self.cancel_button = QPushButton("Cancel")
        run.addWidget(self.bar, 1)
        run.addWidget(self.cancel_button)
        lay.addLayout(run)
        # the report: numbers first, then per query and what would change side by side
        self.headline = plain_label("")
        self.verdict = TintedLabel()  # recommended in the theme's "up", not recommended in its "caution"
        lay.addWidget(self.headline)
        lay.addWidget(self.verdict)
        split = QSplitter(Qt.Horizontal)
        self.per_query = QTreeWidget()
        self.per_query.setHeaderLabels(["query (held out)", "before", "after", "Δ"])
        self.per_query.setRootIsDecorated(False)
        ph = self.per_query.header()
        ph.setStretchLastSection(False)
        ph.setSectionResizeMode(0, QHeaderView.Stretch)
        for c in (1, 2, 3):
            ph.setSectionResizeMode(c, QHeaderView.ResizeToContents)
        self.changes = QTreeWidget()
        self.changes.setHeaderLabels(["what would change (top k)", "rank before → after"])
        ch = self.changes.header()
        ch.setStretchLastSection(False)
        ch.setSectionResizeMode(0, QHeaderView.Stretch)
        ch.setSectionResizeMode(1, QHeaderView.ResizeToContents)
        split.addWidget(self.per_query)
        split.addWidget(self.changes)
        split.setSizes([360, 440])
        lay.addWidget(split, 1)
        acc = QHBoxLayout()
        self.name = QLineEdit()
        self.name.setToolTip("The name the fitted parameters are saved under: the preset list offers it from then on")
        acc.addWidget(QLabel("save as"))
        acc.addWidget(self.name, 1)
        self.accept_button = QPushButton("Accept and use")
        self.close_button = QPushButton("Close")
        acc.addWidget(self.accept_button)
        acc.addWidget(self.close_button)
        lay.addLayout(acc)
        self.accept_note = plain_label("")
        lay.addWidget(self.accept_note)
        self.again.clicked.connect(lambda: self.start_requested.emit(*self.options()))
        self.cancel_button.clicked.connect(self.cancel_requested)
        self.accept_button.clicked.connect(lambda: self.accept_requested.emit(self.name.text().strip()))
        self.close_button.clicked.connect(self.reject)
        self.name.textChanged.connect(self._check_name)
        self.resize(860, 600)

    # ------------------------------------------------------------ before a fit
    def prepare(self, set_name: str, n: int, params: Params, family: str, agent_groups: int, existing: set[str],
                read_only: str | None = None) -> None:
        """Before a fit of `n` judged queries; `agent_groups`: how many distinct agent filters
        they have (when they make the folds, each group is held out whole: the default);
        `read_only`: why nothing can be saved (a fit is still shown)."""
        self.read_only = read_only
        k = int(params.k)
        self.existing = set(existing)
        self.title.setText(f"Fit the {params.preset} weights and knobs to “{set_name}” ({_queries(n)}), "
                           f"starting from {describe(params)}")
        self.metric_box.clear()
        for fam in ("ndcg", "recall", "mrr", "p"):
            self.metric_box.addItem(measure_label(measure_name(fam, k)), measure_name(fam, k))
        self.metric_box.setCurrentIndex(max(0, self.metric_box.findData(measure_name(family, k))))
        self.folds.setMaximum(max(2, min(20, n)))
        self.folds.setValue(min(5, max(2, n)))
        self.by.setEnabled(agent_groups >= 2)
        self.by.setCurrentIndex(1 if agent_groups >= self.folds.value() else 0)
        base = f"fitted-{set_name}"
        name, i = base, 2
        while name in existing:
            name, i = f"{base}-{i}", i + 1
        self.name.setText(name)

    def options(self) -> tuple[str, int, bool]:
        return self.metric_box.currentData(), int(self.folds.value()), self.by.currentText() == "agent"

    def started(self) -> None:
        self.running, self.report = True, None
        self.bar.setValue(0)
        self.bar.setFormat("Fitting … %p%")
        self.bar.show()
        self.cancel_button.setEnabled(True)
        self.again.setEnabled(False)
        self.accept_button.setEnabled(False)
        self.headline.setText("")
        self.verdict.setText("Nothing changes until you accept.")
        self.verdict.set_colour(None)
        self.accept_note.setText("")
        self.per_query.clear()
        self.changes.clear()

    def progress(self, fraction: float, text: str) -> None:
        if fraction >= 0:
            self.bar.setValue(int(fraction * 1000))
        self.bar.setFormat((text or "Fitting") + " … %p%")

    def failed(self, text: str) -> None:
        self.running = False
        self.bar.setFormat("Not fitted")
        self.bar.setValue(0)
        self.cancel_button.setEnabled(False)
        self.again.setEnabled(True)
        self.verdict.setText(f"No fit: {text}")
        self.verdict.set_colour(None)

    def cancelled(self) -> None:
        self.failed("cancelled; nothing changed")

    # ------------------------------------------------------------ the report
    def show_report(self, report: FitReport, start: Params) -> None:
        self.running, self.report, self.start = False, report, start
        self.bar.setValue(1000)
        self.bar.setFormat(f"Fitted: {report.evaluations} settings ranked")
        self.cancel_button.setEnabled(False)
        self.again.setEnabled(True)
        fitted = start.replace(**report.fitted)
        m = measure_label(report.metric)
        spread = " ".join(f"{f.gain:+.3f}" for f in report.folds)
        self.headline.setText(
            f"Fitted:  {describe(fitted)}     (now: {describe(start)})\n"
            f"Held-out {m} over {len(report.folds)} folds: {report.before:.3f} → {report.after:.3f}, gain "
            f"{report.gain:+.3f} (fold spread: sd {report.gain_sd:.3f} of the per-fold gains {spread})\n"
            f"Per query, held out: {report.per_query.better} better, {report.per_query.worse} worse, "
            f"{report.per_query.same} same")
        if report.recommended:
            self.verdict.setText(f"✔ Recommended: {report.reason}.")
            self.verdict.set_colour(lambda: self.tone("up"))
            self.accept_button.setText("Accept and use")
            self.accept_note.setText("Accepting saves these parameters with the store under the name above (the "
                                     "preset list offers them) and moves the sliders to them; Edit ▸ Undo takes it back.")
        else:
            self.verdict.setText(f"⚠ Not recommended: {report.reason}. The current weights stay unless you accept anyway.")
            self.verdict.set_colour(lambda: self.tone("caution"))
            self.accept_button.setText("Accept anyway")
            self.accept_note.setText("Accepting anyway saves the fitted parameters under the name above and uses them, "
                                     "although their held-out gain is within the spread over folds: on queries you have "
                                     "not judged they may do worse than the current weights. Edit ▸ Undo takes it back.")
        self.per_query.clear()
        for d in sorted(report.per_query.deltas, key=lambda d: -d.gain):
            item = QTreeWidgetItem([d.query_id, f"{d.before:.3f}", f"{d.after:.3f}",
                                    f"{d.gain:+.3f}" if abs(d.gain) > 1e-9 else "="])
            for c in (1, 2, 3):
                item.setTextAlignment(c, Qt.AlignRight | Qt.AlignVCenter)
            if abs(d.gain) > 1e-9:
                item.setForeground(3, self.tone("up" if d.gain > 0 else "down"))
            item.setToolTip(0, plain_tooltip(self.query_text(d.query_id)))
            self.per_query.addTopLevelItem(item)
        self.changes.clear()
        self._heading("Comparing each top k before and after …")
        self._check_name()

    def show_changes(self, changes: Changes) -> None:
        self.changes.clear()
        k_changed = len(changes.judged)
        head = self._heading(f"Judged queries whose top k changes: {k_changed}")
        for ch in changes.judged:
            q = QTreeWidgetItem([f"{ch.query_id}: {len(ch.entered)} in, {len(ch.left)} out", ""])
            q.setToolTip(0, plain_tooltip(self.query_text(ch.query_id)))
            head.addChild(q)
            for mv in ch.entered:
                q.addChild(self._move("in", mv.memory_id, mv.rank_before, mv.rank_after))
            for mv in ch.left:
                q.addChild(self._move("out", mv.memory_id, mv.rank_before, mv.rank_after))
        head.setExpanded(True)
        if changes.recent is None:
            self._heading("The agent's own recent queries: this store does not record them")
        else:
            rec = self._heading(f"The agent's own recent queries whose top k changes: {len(changes.recent)} of "
                                f"{changes.asked}")
            for rc in changes.recent:
                q = QTreeWidgetItem([f"“{rc.query.text}”: {len(rc.change.entered)} in, {len(rc.change.left)} out", ""])
                q.setToolTip(0, plain_tooltip(rc.query.text))
                rec.addChild(q)
                for mv in rc.change.entered:
                    q.addChild(self._move("in", mv.memory_id, mv.rank_before, mv.rank_after))
                for mv in rc.change.left:
                    q.addChild(self._move("out", mv.memory_id, mv.rank_before, mv.rank_after))
            rec.setExpanded(True)

    def changes_failed(self, text: str) -> None:
        self.changes.clear()
        self._heading(f"Not compared: {text}")

    def _heading(self, text: str) -> QTreeWidgetItem:
        """A top-level line of the changes tree, across both columns (the second holds only ranks),
        its whole text in the tooltip where the dialog is narrower."""
        item = QTreeWidgetItem([text, ""])
        item.setToolTip(0, plain_tooltip(text))
        self.changes.addTopLevelItem(item)
        item.setFirstColumnSpanned(True)
        return item

    def _move(self, how: str, memory_id: str, before: int | None, after: int | None) -> QTreeWidgetItem:
        text = self.preview(memory_id)
        item = QTreeWidgetItem([f"{how}: {text}", f"{before or '—'} → {after or '—'}"])
        item.setToolTip(0, plain_tooltip(f"{memory_id}\n{text}"))
        item.setForeground(0, self.tone("up" if how == "in" else "down"))
        return item

    def _check_name(self) -> None:
        name = self.name.text().strip()
        ok = self.report is not None and bool(name) and self.read_only is None
        self.accept_button.setEnabled(ok)
        if self.read_only is not None:
            self.accept_button.setToolTip(plain_tooltip(f"Nothing can be saved: {self.read_only}"))
        elif ok and name in self.existing:
            self.accept_button.setToolTip(plain_tooltip(f"A parameter set “{name}” is saved already: accepting replaces it"))
        else:
            self.accept_button.setToolTip("")

    def accepted_as(self, name: str) -> None:
        self.accept_note.setText(f"Saved as “{name}” and in use. Edit ▸ Undo takes it back.")
        self.accept_button.setEnabled(False)
        self.existing.add(name)


__all__ = ["FitDialog", "SaveJudgedDialog"]
