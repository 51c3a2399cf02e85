"""Dialogs of the edit actions: correct, conflict, busy, importance and tags.

All are opened with `open()` (window-modal, never a nested event loop), so the window and
the tests keep running while one is up; the caller connects `finished`/`accepted`.
Memory text is shown in plain-text widgets only: agent content is never read as HTML.
"""
from __future__ import annotations

import json

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
)

from memviz.app.dialogs.buttons import ok_cancel
from memviz.app.plain_text import plain_label
from memviz.app.tinted import Colour, TintedLabel
from memviz.edits.commands import SHOWN_FIELDS
from memviz.store import iso
from memviz.words import count


def _show(value, field: str) -> str:
    if field == "valid_until":
        return "current" if value is None else f"retired {iso(value)} UTC"
    if field == "protected":
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


class CorrectDialog(QDialog):
    """The old text (plain, read-only) above the new text (editable, starts as the old one)."""

    def __init__(self, row: dict, parent=None, *, text: str | None = None, warning: str | None = None,
                 in_place: bool = False, caution: Colour | None = None) -> None:
        """`in_place`: the store rewrites the memory where it is (MemoryStore.corrects_in_place);
        `caution()`: the warning's colour in the window's theme now (default: the palette's text)."""
        super().__init__(parent)
        self.row = row
        self.setWindowTitle(f"Correct memory {row['id']}")
        self.setObjectName("correct_dialog")
        lay = QVBoxLayout(self)
        lay.addWidget(plain_label(f"{row['kind']} · {row['agent'] or '(no agent)'} · importance {row['importance']:g}"
                                  f" · {row['id']}"))
        lay.addWidget(plain_label(
            "Current text (replaced where it is; Undo puts it back):" if in_place
            else "Current text (kept, retired once the correction is written):"))
        self.old_text = QPlainTextEdit(readOnly=True)
        self.old_text.setPlainText(row["content"])
        # not the editable one's background; a role, not a style sheet (which keeps the colour of its scheme)
        self.old_text.viewport().setBackgroundRole(QPalette.Window)
        lay.addWidget(self.old_text, 1)
        lay.addWidget(plain_label("Corrected text (written over the memory, which keeps its id):" if in_place
                                  else "Corrected text (a new memory superseding the old one):"))
        self.new_text = QPlainTextEdit()
        self.new_text.setPlainText(row["content"] if text is None else text)
        lay.addWidget(self.new_text, 2)
        self.reason = reason_field()
        form = QFormLayout()
        form.addRow("Reason (optional):", self.reason)
        lay.addLayout(form)
        self.warning = TintedLabel(warning or "", caution)
        self.warning.setVisible(bool(warning))
        lay.addWidget(self.warning)
        self.buttons = ok_cancel(self, "Correct")
        lay.addWidget(self.buttons)
        # Enter starts a new line in the text: Ctrl+Enter writes the correction
        ok = self.buttons.button(QDialogButtonBox.Ok)
        ok.setToolTip("Write the correction (Ctrl+Enter)")
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(keys), self, activated=lambda: ok.isEnabled() and ok.click())
        self.new_text.textChanged.connect(self._check)
        self._check()
        self.resize(620, 460)
        self.new_text.setFocus()

    def text(self) -> str:
        return self.new_text.toPlainText()

    def note(self) -> str | None:
        return self.reason.text().strip() or None

    def _check(self) -> None:
        t = self.text().strip()
        self.buttons.button(QDialogButtonBox.Ok).setEnabled(bool(t) and t != self.row["content"].strip())


def reason_field() -> QLineEdit:
    """The optional reason of an edit, kept in the audit log like the CLI's --note."""
    field = QLineEdit()
    field.setObjectName("reason")
    field.setPlaceholderText("why — kept in the memory's history (audit log)")
    field.setMaxLength(500)
    return field


class ReasonDialog(QDialog):
    """Soft-delete / Protect with a reason: what will change, and an optional reason."""

    def __init__(self, verb: str, n: int, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"{verb} with a reason")
        self.setObjectName("reason_dialog")
        lay = QFormLayout(self)
        lay.addRow(plain_label(f"{verb}: {count(n, 'memory')}."))
        self.reason = reason_field()
        lay.addRow("Reason (optional):", self.reason)
        self.buttons = ok_cancel(self, verb)
        lay.addRow(self.buttons)
        self.resize(460, 120)
        self.reason.setFocus()

    def note(self) -> str | None:
        return self.reason.text().strip() or None


class ConflictDialog(QDialog):
    """Both versions side by side; the user keeps theirs (the edit applied to the row as it is
    now), takes the current version (the edit is dropped, its text stays on the clipboard for a
    correction) or edits the correction again against the current text. For an undo or redo
    (`step`) only the comparison and "Keep the current version". Result: `choice`."""

    MINE, CURRENT, EDIT_AGAIN = "mine", "current", "edit"

    def __init__(self, error, description: str, parent=None, *, can_edit_again: bool = False,
                 step: str = "do") -> None:
        super().__init__(parent)
        self.setWindowTitle("The memory changed since it was shown")
        self.setObjectName("conflict_dialog")
        self.choice: str | None = None
        lay = QVBoxLayout(self)
        if step == "do":
            lay.addWidget(plain_label(f"{error}\nYour edit: {description}. Nothing has been written yet."))
        else:  # an undo/redo is never forced over someone else's change: shown, and left on the stack
            lay.addWidget(plain_label(f"{error}\nNot written: {step} of \u201c{description}\u201d, which would "
                                      f"overwrite that change. It stays in Edit \u25b8 {step.capitalize()}; edit "
                                      "the memory itself if your version should win."))
        self.table = QTreeWidget(headerLabels=["field", "as you saw it", "now in the store"], rootIsDecorated=False)
        self.table.setWordWrap(True)
        self.table.setSelectionMode(QTreeWidget.NoSelection)
        self.table.setFocusPolicy(Qt.NoFocus)
        expected, current = dict(error.expected or {}), dict(error.current or {})
        fields = [f for f in SHOWN_FIELDS if f in expected] + [f for f in SHOWN_FIELDS if f in current and
                                                                 f not in expected]
        for f in fields:
            # a field the window did not guard has no "as you saw it" value
            mine, now = (_show(expected[f], f) if f in expected else "—"), _show(current.get(f), f)
            item = QTreeWidgetItem([f, mine, now])
            if f in expected and mine != now:  # in bold: a fixed dark red was unreadable on a dark base
                for c in range(3):
                    fnt = item.font(c)
                    fnt.setBold(True)
                    item.setFont(c, fnt)
            self.table.addTopLevelItem(item)
        self.table.setColumnWidth(0, 110)
        self.table.setColumnWidth(1, 260)
        lay.addWidget(self.table, 1)
        box = QDialogButtonBox()
        self.mine_button = box.addButton("Apply my edit to the current version", QDialogButtonBox.AcceptRole)
        self.mine_button.setVisible(step == "do")
        self.current_button = box.addButton("Keep the current version", QDialogButtonBox.RejectRole)
        self.edit_button = None
        if can_edit_again:
            self.edit_button = box.addButton("Edit my correction again…", QDialogButtonBox.ActionRole)
            self.edit_button.clicked.connect(lambda: self._choose(self.EDIT_AGAIN))
        self.mine_button.clicked.connect(lambda: self._choose(self.MINE))
        self.current_button.clicked.connect(lambda: self._choose(self.CURRENT))
        lay.addWidget(box)
        self.resize(720, 380)

    def _choose(self, choice: str) -> None:
        self.choice = choice
        self.accept() if choice != self.CURRENT else self.reject()


class BusyDialog(QMessageBox):
    """"The agent is busy; your edit is kept, retry?" — Retry or Discard (explicit)."""

    def __init__(self, message: str, parent=None) -> None:
        super().__init__(QMessageBox.Warning, "The agent is busy", message, QMessageBox.NoButton, parent)
        self.setTextFormat(Qt.PlainText)
        self.setObjectName("busy_dialog")
        self.setInformativeText("Your edit is kept. Retry now, or discard the waiting edits.")
        self.retry_button: QPushButton = self.addButton("Retry", QMessageBox.AcceptRole)
        self.discard_button: QPushButton = self.addButton("Discard", QMessageBox.DestructiveRole)
        self.setDefaultButton(self.retry_button)


class ImportanceDialog(QDialog):
    def __init__(self, value: float, n: int, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Set importance")
        lay = QFormLayout(self)
        self.spin = QDoubleSpinBox(minimum=0, maximum=10, decimals=1, singleStep=0.5, value=value)
        lay.addRow(f"Importance of {count(n, 'memory')} (0-10):", self.spin)
        lay.addRow(ok_cancel(self))


class TagsDialog(QDialog):
    """Replace the tags of one memory, or add / remove tags on several."""

    def __init__(self, tags: list[str] | None, n: int, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Edit tags")
        self.single = tags is not None
        lay = QFormLayout(self)
        self.tags = QLineEdit(", ".join(tags or []))
        self.add = QLineEdit()
        self.remove = QLineEdit()
        if self.single:
            lay.addRow("Tags (comma separated):", self.tags)
        else:
            lay.addRow(plain_label(f"{count(n, 'memory')} selected"))
            lay.addRow("Add tags:", self.add)
            lay.addRow("Remove tags:", self.remove)
        lay.addRow(ok_cancel(self))
