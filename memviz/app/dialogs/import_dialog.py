"""File ▸ Import… (and dropping a folder / .json / .jsonl on the window): another system's
memory turned into a new store by `memviz.importers`, off the GUI thread, then opened.

The import runs as the window's "import" job (so the status bar shows it too). Its outcome
is reported by the job itself through a queued signal, not through Workers' result
delivery, which drops the results of cancelled jobs: a Cancel that arrives after the
importer's last check still shows what really happened (the store was written).
The importer writes atomically, so Cancel or a failure leaves no output file.
"""
from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from memviz.app.tinted import Colour, TintedLabel
from memviz.frameworks import recognise
from memviz.importers import FORMATS, OPTIONS, ImportFailed, describe_unknown, detect_format, import_format, import_source
from memviz.store.errors import StoreError, user_message
from memviz.tasks import Cancelled
from memviz.userdirs import user_data_dir
from memviz.words import count

JOB = "import"
#: files whose drop means "import this" rather than "open this store"
IMPORT_SUFFIXES = (".json", ".jsonl", ".ndjson", ".af")
#: folder names inside a GA persona: the store is named after the persona above them
_GA_INNER = {"associative_memory", "bootstrap_memory", "nodes.json"}
REPORT_LIMIT = 200  # items listed per section of the report (the counts are always exact)


def is_import_source(path: str) -> bool:
    """A path the window should import rather than open: a folder, a JSON(L) or .af file, or a
    file whose content is an import format whatever its name; but not a store that a memory
    system (a plugin's too: a JSON file may be one) recognises, which opens in place."""
    looks = (os.path.isdir(path) or path.lower().endswith(IMPORT_SUFFIXES)
             or (os.path.isfile(path) and detect_format(path) is not None))
    return looks and not (os.path.isfile(path) and _recognised(path))


def _recognised(path: str) -> bool:
    try:
        return recognise(path) is not None
    except StoreError:  # it is one, unreadable: the open says why
        return True


def default_output(source: str) -> str:
    """A store path that does not exist yet in the user's data folder (imports/), never inside
    the data set being imported. Named after the source (the GA persona)."""
    src = Path(os.path.abspath(source))
    top = src
    while top.name in _GA_INNER and top.parent != top:
        top = top.parent
    name = top.stem if top.is_file() or top.suffix.lower() in IMPORT_SUFFIXES else top.name
    folder = user_data_dir() / "imports"
    folder.mkdir(parents=True, exist_ok=True)
    out, k = folder / f"{name or 'import'}.db", 2
    while out.exists():
        out, k = folder / f"{name or 'import'}-{k}.db", k + 1
    return str(out)


class ImportDialog(QDialog):
    """Choose format, source and output; Import runs it with a progress bar and Cancel; the
    report is shown below and the new store is opened in the window.

    imported(report): an import finished and its store is being opened.
    ended(outcome): "done", "failed" or "cancelled" (after the job really stopped).
    """

    imported = Signal(object)
    ended = Signal(str)
    progressed = Signal(float, str)        # the import's (fraction, text), on the GUI thread
    _job_ended = Signal(str, object)       # (outcome, report | exception)

    def __init__(self, workers, open_store, parent=None, source: str | None = None,
                 alarm: Colour | None = None) -> None:
        """`workers`: the window's job runner; `open_store(path)`: opens the imported store;
        `alarm()`: the colour of an error in the window's theme now (default: the palette's text)."""
        super().__init__(parent)
        self.workers, self.open_store = workers, open_store
        self.alarm = alarm
        self.setWindowTitle("Import agent memory")
        self.setMinimumWidth(640)
        self.report = None
        self.confirm_box: QMessageBox | None = None
        self._task = None
        self._output_edited = False
        self._source_set: str | None = None
        self._build()
        self._job_ended.connect(self._on_ended)
        if source:
            self.set_source(source)

    # ------------------------------------------------------------ widgets
    def _build(self) -> None:
        self.format = QComboBox()
        self.format.addItems(list(FORMATS))
        self.source = QLineEdit()
        self.source.setPlaceholderText("a Generative Agents folder, stream.jsonl, or a .jsonl dump")
        # editingFinished also fires when the field merely loses focus (e.g. disabled by Import):
        # only a changed text is a new source, else a chosen output would be reset to the default
        self.source.editingFinished.connect(self._source_typed)
        src_folder = QPushButton("Folder…", clicked=self._choose_folder)
        src_file = QPushButton("File…", clicked=self._choose_file)
        self.output = QLineEdit()
        self.output.textEdited.connect(lambda *_: setattr(self, "_output_edited", True))
        out_browse = QPushButton("Save as…", clicked=self._choose_output)
        # the options a format declares (importers.OPTIONS): offered only for the formats that take them
        self.vectors_model = QLineEdit()
        self.vectors_model.setPlaceholderText("the model that made the source's vectors, e.g. text-embedding-3-small")
        self.vectors_model.setToolTip(OPTIONS["embedding_model"])
        self.reembed = QCheckBox("Re-embed: " + OPTIONS["reembed"])
        self.format.currentTextChanged.connect(self._offer_options)

        form = QFormLayout()
        form.addRow("Format", self.format)
        form.addRow("Source", _row(self.source, src_folder, src_file))
        form.addRow("New store", _row(self.output, out_browse))
        form.addRow("Vectors' model", self.vectors_model)
        form.addRow("", self.reembed)
        self._offer_options()

        self.bar = QProgressBar(maximum=1000)
        self.bar.setFormat("")
        self.bar.setTextVisible(True)
        self.bar.hide()  # shown once an import runs: an idle empty bar reads as a text field
        self.message = TintedLabel("Choose what to import.")
        self.details = QPlainTextEdit(readOnly=True)
        self.details.setPlaceholderText("The import report appears here.")
        self.details.setLineWrapMode(QPlainTextEdit.WidgetWidth)
        self.details.setMinimumHeight(160)

        self.buttons = QDialogButtonBox()
        self.import_button = self.buttons.addButton("Import", QDialogButtonBox.AcceptRole)
        self.cancel_button = self.buttons.addButton("Cancel import", QDialogButtonBox.ActionRole)
        self.close_button = self.buttons.addButton(QDialogButtonBox.Close)
        self.import_button.setDefault(True)
        self.cancel_button.setEnabled(False)
        self.import_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        self.close_button.clicked.connect(self.reject)

        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.bar)
        lay.addWidget(self.message)
        lay.addWidget(self.details, 1)
        lay.addWidget(self.buttons)

    def _choose_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Folder to import", self._start_dir())
        if path:
            self.set_source(path)

    def _choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "File to import", self._start_dir(),
                                              "Memory dumps (*.jsonl *.json *.ndjson);;All files (*)")
        if path:
            self.set_source(path)

    def _choose_output(self) -> None:
        # the overwrite question is asked by start(), once, for typed and chosen paths alike
        path, _ = QFileDialog.getSaveFileName(self, "New store", self.output.text(), "Memory stores (*.db)",
                                              options=QFileDialog.DontConfirmOverwrite)
        if path:
            self.output.setText(path)
            self._output_edited = True

    def _start_dir(self) -> str:
        text = self.source.text().strip()
        return os.path.dirname(text) if text else ""

    # ------------------------------------------------------------ state
    @property
    def running(self) -> bool:
        return self._task is not None

    def _source_typed(self) -> None:
        text = self.source.text().strip()
        if text and os.path.abspath(os.path.expanduser(text)) != self._source_set:
            self.set_source(text, typed=True)

    def set_source(self, path: str, typed: bool = False) -> None:
        """Fill in the source, the format it looks like, and (unless the user chose one) the output."""
        path = path.strip()
        if not path:
            return
        path = os.path.abspath(os.path.expanduser(path))
        self._source_set = path
        self.source.setText(path)
        fmt = detect_format(path)
        if fmt:
            self.format.setCurrentText(fmt)
            self._say(f"Looks like {fmt}.")
        elif os.path.exists(path):
            self._say(describe_unknown(path) + " Choose a format above if you know it.")
        elif typed:
            self._say(f"{path} does not exist.", error=True)
        if not self._output_edited and os.path.exists(path):
            self.output.setText(default_output(path))

    def _offer_options(self, *_, running: bool = False) -> None:
        fmt = import_format(self.format.currentText())
        takes = fmt.options if fmt is not None else frozenset()
        self.reembed.setEnabled("reembed" in takes and not running)
        self.vectors_model.setEnabled("embedding_model" in takes and not running)

    def _options(self, fmt: str) -> dict:
        """The keyword options of the format's run() that the dialog's fields set."""
        takes, out = import_format(fmt).options, {}
        if "reembed" in takes and self.reembed.isChecked():
            out["reembed"] = True
        if "embedding_model" in takes and self.vectors_model.text().strip():
            out["embedding_model"] = self.vectors_model.text().strip()
        return out

    def _say(self, text: str, error: bool = False) -> None:
        self.message.setText(text)
        self.message.set_colour(self.alarm if error else None)  # the theme's, in either scheme

    def _set_running(self, running: bool) -> None:
        for w in (self.format, self.source, self.output, self.import_button):
            w.setEnabled(not running)
        self._offer_options(running=running)
        for b in self.findChildren(QPushButton):
            if b.text() in ("Folder…", "File…", "Save as…"):
                b.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        self.cancel_button.setText("Cancel import")

    # ------------------------------------------------------------ running
    def start(self) -> None:
        """Check the inputs, ask before replacing an existing output, then run."""
        if self.running:
            return
        src, out, fmt = self.source.text().strip(), self.output.text().strip(), self.format.currentText()
        if not src or not os.path.exists(src):
            self._say(f"The source {src or '(none)'} does not exist." if src else "Choose a source to import.", True)
            return
        if not out:
            self._say("Choose where to write the new store.", error=True)
            return
        out = os.path.abspath(os.path.expanduser(out))
        if os.path.exists(out):
            box = QMessageBox(QMessageBox.Question, "Replace the store?",
                              f"{out} already exists.\n\nReplace it with the imported store? "
                              "The old file is replaced only when the import is complete.",
                              QMessageBox.Yes | QMessageBox.No, self)
            box.setDefaultButton(QMessageBox.No)
            box.setTextFormat(Qt.PlainText)
            box.finished.connect(lambda r: r == QMessageBox.Yes and self.run(fmt, src, out, force=True))
            self.confirm_box = box
            box.open()
            return
        self.run(fmt, src, out, force=False)

    def run(self, fmt: str, source: str, output: str, force: bool = False) -> None:
        """Import in the background; the outcome arrives in _on_ended."""
        self.report = None
        self.details.clear()
        self.bar.setRange(0, 0)   # busy until the importer knows its total (it reads the source first)
        self.bar.setFormat("reading…")
        self.bar.show()
        self._say(f"Importing {source} …")
        self._set_running(True)
        ended = self._job_ended
        options = self._options(fmt)

        def job(task):
            try:
                report = import_source(fmt, source, output, force=force, task=task, **options)
            except Cancelled as e:
                ended.emit("cancelled", e)
            except Exception as e:  # noqa: BLE001 - every failure is shown in the dialog
                ended.emit("failed", e)
            else:
                ended.emit("done", report)

        self._task = self.workers.submit(JOB, job, on_done=lambda _r: None, on_error=lambda _e: None,
                                         on_progress=self._on_progress)

    def cancel(self) -> None:
        """Ask the importer to stop at its next check; the dialog says so once it has."""
        if self.running:
            self.cancel_button.setEnabled(False)
            self.cancel_button.setText("Cancelling…")
            self._say("Cancelling…")
            self._task.cancel()
            self.workers.cancel(JOB)

    def _on_progress(self, fraction: float, text: str) -> None:
        if not self.running:
            return
        if fraction < 0:
            self.bar.setRange(0, 0)
        else:
            self.bar.setRange(0, 1000)
            self.bar.setValue(int(fraction * 1000))
        self.bar.setFormat(f"{text}  (%p%)" if fraction >= 0 else text)
        self.progressed.emit(fraction, text)

    def _on_ended(self, outcome: str, payload) -> None:
        self._task = None
        self._set_running(False)
        if outcome == "done":
            self.report = payload
            self.bar.setRange(0, 1000)
            self.bar.setValue(1000)
            self.bar.setFormat("done")
            problems = len(payload.skipped)
            self._say(f"Imported {payload.imported:,} of {count(payload.read, 'memory')}"
                      + (f" ({problems:,} skipped, see below)" if problems else "")
                      + f" into {payload.output}. Opening it in the window.")
            self.details.setPlainText(report_text(payload))
            self._output_edited = False   # a new import from here gets a fresh default name
            self.open_store(payload.output)
            self.imported.emit(payload)
        elif outcome == "cancelled":
            self.bar.setRange(0, 1000)
            self.bar.setValue(0)
            self.bar.setFormat("cancelled")
            self._say("Import cancelled; nothing was written.")
        else:
            self.bar.setRange(0, 1000)
            self.bar.setValue(0)
            self.bar.setFormat("failed")
            text = user_message(payload, (ImportFailed,))
            self._say(f"Import failed: {text}\nNothing was written.", error=True)
            self.details.setPlainText(text)
        self.ended.emit(outcome)

    def reject(self) -> None:
        """Closing the dialog cancels a running import (it then finishes in the background)."""
        self.cancel()
        super().reject()


def report_text(report) -> str:
    """The import report with one line per skipped or noted item (ImportReport.summary() packs
    them into one line per kind, which suits a terminal, not a scrolling text box)."""
    lines = report.summary()[:1]
    if report.agents:
        lines.append("agents: " + ", ".join(a or "(none)" for a in report.agents))
    emb = report.embedding
    if emb.get("model"):
        lines.append(f"embeddings: {emb['count']} x {emb['dim']}-d {emb['model']} ({emb['origin']})")
    for title, issues in (("Skipped (not imported)", report.skipped), ("Kept with a note", report.quirks)):
        if issues:
            lines += ["", f"{title}: {len(issues)}"]
            lines += [f"  {i.where}: {i.message}  [{i.code}]" for i in issues[:REPORT_LIMIT]]
            if len(issues) > REPORT_LIMIT:
                lines.append(f"  … and {len(issues) - REPORT_LIMIT} more")
    if report.warnings:
        lines += ["", "Warnings:"] + [f"  {w}" for w in report.warnings]
    return "\n".join(lines)


def _row(*widgets) -> QWidget:
    w = QWidget()
    lay = QHBoxLayout(w)
    lay.setContentsMargins(0, 0, 0, 0)
    for i, x in enumerate(widgets):
        lay.addWidget(x, 1 if i == 0 else 0)
    return w

