"""LLM settings dialog: server, models, API key, and a Test connection button.

Non-secret settings persist in QSettings as `LLMSettings.public_dict()` (JSON); the API key
goes only to the OS keyring (memviz.reflect.save_api_key) and is never written to QSettings
or the store. The test runs `test_connection` on a worker, so the window stays responsive.
"""
from __future__ import annotations

import json

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QComboBox, QDialog, QDialogButtonBox, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout

from memviz.app.dialogs.buttons import ok_cancel
from memviz.app.tinted import Colour, TintedLabel
from memviz.reflect import LLMSettings, SettingsError, save_api_key, test_connection

QSETTINGS_KEY = "llm/settings"


def load_llm_settings(qsettings: QSettings) -> LLMSettings:
    """The saved settings, else the environment's (MEMVIZ_LLM_*); never holds a key."""
    raw = qsettings.value(QSETTINGS_KEY)
    if raw:
        try:
            return LLMSettings.from_public_dict(json.loads(str(raw)))
        except (ValueError, TypeError, SettingsError):
            pass  # unreadable or outdated: fall back to the environment
    return LLMSettings.from_env()


def save_llm_settings(qsettings: QSettings, settings: LLMSettings) -> None:
    qsettings.setValue(QSETTINGS_KEY, json.dumps(settings.public_dict()))
    qsettings.sync()


class LLMSettingsDialog(QDialog):
    """Edit and test the LLM settings. `result_label` holds the test's answer (plain text)."""

    def __init__(self, qsettings: QSettings, workers, parent=None, *, ok: Colour | None = None,
                 alarm: Colour | None = None) -> None:
        """`ok()`, `alarm()`: the colours of a test that passed and of a problem in the window's
        theme now (default: the palette's text)."""
        super().__init__(parent)
        self.ok, self.alarm = ok, alarm
        self.setWindowTitle("LLM settings")
        self.qsettings, self.workers = qsettings, workers
        s = load_llm_settings(qsettings)
        self._extra = {k: v for k, v in s.public_dict().items()
                       if k not in ("base_url", "chat_model", "embedding_model")}
        self.base_url = QLineEdit(s.base_url)
        self.base_url.setPlaceholderText("https://api.openai.com/v1 · http://localhost:11434/v1 (Ollama)")
        self.chat_model = QComboBox(editable=True)
        self.chat_model.setEditText(s.chat_model)
        self.embedding_model = QLineEdit(s.embedding_model or "")
        self.embedding_model.setPlaceholderText("only used when the store has no embeddings yet")
        self.api_key = QLineEdit(echoMode=QLineEdit.Password)
        self.key_source = QLabel()
        self.key_source.setTextFormat(Qt.PlainText)
        self.key_source.setWordWrap(True)
        self._show_key_source(s)
        form = QFormLayout()
        form.addRow("Base URL", self.base_url)
        form.addRow("Chat model", self.chat_model)
        form.addRow("Embedding model", self.embedding_model)
        form.addRow("API key", self.api_key)
        form.addRow("", self.key_source)
        self.test_button = QPushButton("Test connection")
        self.test_button.clicked.connect(self.run_test)
        self.result_label = TintedLabel()
        test_row = QHBoxLayout()
        test_row.addWidget(self.test_button)
        test_row.addWidget(self.result_label, 1)
        self.buttons = ok_cancel(self, accept=self.save, ok=QDialogButtonBox.Save)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addLayout(test_row)
        lay.addWidget(self.buttons)
        self.resize(560, self.sizeHint().height())

    def _show_key_source(self, s: LLMSettings) -> None:
        _, where = s.resolve_api_key()
        self.api_key.setPlaceholderText("saved" if where != "nowhere" else
                                        ("not needed for a local server" if s.is_local else "none"))
        self.key_source.setText(f"Key in use: from {where}. A key typed here is saved in the OS keyring only."
                                if where != "nowhere" else
                                "A key typed here is saved in the OS keyring only (never in a file).")

    def settings(self) -> LLMSettings:
        """The settings the fields describe (the typed key in memory only); raises SettingsError."""
        return LLMSettings(base_url=self.base_url.text(), chat_model=self.chat_model.currentText().strip(),
                           embedding_model=self.embedding_model.text().strip() or None,
                           api_key=self.api_key.text() or None, **self._extra)

    def _say(self, ok: bool | None, text: str) -> None:
        self.result_label.setText(text)
        self.result_label.set_colour(None if ok is None else (self.ok if ok else self.alarm))

    def run_test(self) -> None:
        try:
            s = self.settings()
        except SettingsError as e:
            self._say(False, str(e))
            return
        self.test_button.setEnabled(False)
        self._say(None, f"Testing {s.base_url} …")

        def job(task):
            return test_connection(s, task=task)  # a newer Test (or closing) stops the wait

        def done(check) -> None:
            self.test_button.setEnabled(True)
            self._say(check.ok, check.message)
            if check.models:
                current = self.chat_model.currentText()
                self.chat_model.clear()
                self.chat_model.addItems(check.models)
                self.chat_model.setEditText(current)

        def failed(err) -> None:
            self.test_button.setEnabled(True)
            self._say(False, f"Test failed: {err}")

        self.workers.submit("llm-test", job, on_done=done, on_error=failed)

    def save(self) -> None:
        try:
            s = self.settings()
            if s.api_key:
                save_api_key(s.base_url, s.api_key)
        except SettingsError as e:
            self._say(False, str(e))
            return  # stay open: nothing the user typed is lost
        save_llm_settings(self.qsettings, s)
        self.accept()
