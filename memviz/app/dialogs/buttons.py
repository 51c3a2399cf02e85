"""The buttons a dialog ends with."""
from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QHBoxLayout, QPushButton


def ok_cancel(dialog: QDialog, text: str | None = None, *, accept: Callable[[], object] | None = None,
              ok: QDialogButtonBox.StandardButton = QDialogButtonBox.Ok) -> QDialogButtonBox:
    """The `ok` button (named `text`, else Qt's name) and Cancel: `ok` calls `accept` (the
    dialog's accept, unless the dialog checks first), Cancel rejects the dialog."""
    box = QDialogButtonBox(ok | QDialogButtonBox.Cancel)
    if text is not None:
        box.button(ok).setText(text)
    box.accepted.connect(accept or dialog.accept)
    box.rejected.connect(dialog.reject)
    return box


def action_and_close(dialog: QDialog, action: QPushButton) -> QHBoxLayout:
    """The last row of a dialog that stays open while it works: its `action` button and Close
    (which closes the dialog), on the right."""
    close = QPushButton("Close")
    close.clicked.connect(dialog.close)
    row = QHBoxLayout()
    row.addStretch(1)
    row.addWidget(action)
    row.addWidget(close)
    return row
