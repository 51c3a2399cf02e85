"""File ▸ Open database… and File ▸ Copy store to…: where a store on a PostgreSQL server is.

The password has its own field and is never saved in settings: a typed one is used for this
connection only (or kept in the OS keyring when the user ticks the box); left empty, it comes
from the keyring, PGPASSWORD or ~/.pgpass (libpq reads the last two itself). Recent
connections are listed redacted. The dialogs only say where; the window opens or copies.
"""
from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from memviz.app.dialogs.buttons import ok_cancel
from memviz.app.plain_text import plain_label
from memviz.app.tinted import Colour, TintedLabel
from memviz.store.postgres.dsn import is_dsn, redact, with_password
from memviz.store.postgres.password import remember_password, stored_password


class _Connection(QWidget):
    """A connection string, its password apart, and the recent connections to pick from."""

    def __init__(self, recent: list[str]) -> None:
        super().__init__()
        self.dsn_edit = QLineEdit(placeholderText="postgresql://user@host:5432/database?sslmode=require")
        self.password_edit = QLineEdit(placeholderText="empty: the keyring, PGPASSWORD or ~/.pgpass")
        self.password_edit.setEchoMode(QLineEdit.Password)
        self.remember = QCheckBox("Keep this password in the OS keyring")
        self.recent = QListWidget()
        for r in recent:
            self.recent.addItem(redact(r))
        self.recent.currentTextChanged.connect(self.dsn_edit.setText)
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Connection string:", self.dsn_edit)
        form.addRow("Password:", self.password_edit)
        form.addRow("", self.remember)
        form.addRow("Recent:", self.recent)

    def problem(self) -> str | None:
        text = self.dsn_edit.text().strip()
        if not is_dsn(text):
            return "A connection string starts with postgresql:// (for example postgresql://me@db.example/agents)."
        return None

    def dsn(self) -> str:
        """The DSN to connect with: the typed or keyring password in it, if any."""
        base = redact(self.dsn_edit.text().strip())
        typed = self.password_edit.text()
        if typed and self.remember.isChecked():
            remember_password(base, typed)
        return with_password(base, typed or stored_password(base) or "")


class OpenDatabaseDialog(QDialog):
    """Where the store on a server is; `dsn()` after it is accepted."""

    def __init__(self, recent: list[str], parent=None, alarm: Colour | None = None) -> None:
        """`alarm()`: the colour of a problem in the window's theme now (default: the palette's text)."""
        super().__init__(parent)
        self.setWindowTitle("Open database")
        self.connection = _Connection([r for r in recent if is_dsn(r)])
        self.error = TintedLabel(colour=alarm)
        buttons = ok_cancel(self, accept=self._accept, ok=QDialogButtonBox.Open)
        lay = QVBoxLayout(self)
        lay.addWidget(self.connection)
        lay.addWidget(self.error)
        lay.addWidget(buttons)

    def _accept(self) -> None:
        problem = self.connection.problem()
        self.error.setText(problem or "")
        if problem is None:
            self.accept()

    def dsn(self) -> str:
        return self.connection.dsn()


class CopyStoreDialog(QDialog):
    """Where to copy the open store: a new file, or an empty database on a server."""

    def __init__(self, source: str, recent: list[str], parent=None, alarm: Colour | None = None) -> None:
        """`alarm()`: the colour of a problem in the window's theme now (default: the palette's text)."""
        super().__init__(parent)
        self.setWindowTitle("Copy store to")
        intro = plain_label(f"Copy every memory, the audit log, layouts and entities of\n{redact(source)}\n"
                            "in one transaction: a failed or cancelled copy leaves the target as it was.", wrap=False)
        self.to_file = QRadioButton("A new store file:")
        self.to_db = QRadioButton("An empty PostgreSQL database:")
        self.file_edit = QLineEdit(placeholderText="/path/to/new-store.db")
        browse = QPushButton("Choose…")
        browse.clicked.connect(self._browse)
        self.connection = _Connection([r for r in recent if is_dsn(r)])
        self.to_file.setChecked(True)
        self.file_edit.textEdited.connect(lambda *_: self.to_file.setChecked(True))
        self.connection.dsn_edit.textEdited.connect(lambda *_: self.to_db.setChecked(True))
        self.connection.recent.currentTextChanged.connect(lambda *_: self.to_db.setChecked(True))
        self.error = TintedLabel(colour=alarm)
        buttons = ok_cancel(self, "Copy", accept=self._accept)
        row = QHBoxLayout()
        row.addWidget(self.file_edit)
        row.addWidget(browse)
        lay = QVBoxLayout(self)
        lay.addWidget(intro)
        lay.addWidget(self.to_file)
        lay.addLayout(row)
        lay.addWidget(self.to_db)
        lay.addWidget(self.connection)
        lay.addWidget(self.error)
        lay.addWidget(buttons)

    def _browse(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Copy to a new store file", "", "Memory stores (*.db)")
        if path:
            self.file_edit.setText(path)
            self.to_file.setChecked(True)

    def _accept(self) -> None:
        if self.to_db.isChecked():
            problem = self.connection.problem()
        else:
            problem = None if self.file_edit.text().strip() else "Choose the new store file."
        self.error.setText(problem or "")
        if problem is None:
            self.accept()

    def target(self) -> str:
        """The file path or DSN (with its password, for this copy only) to copy to."""
        return self.connection.dsn() if self.to_db.isChecked() else self.file_edit.text().strip()
