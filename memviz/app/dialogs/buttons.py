"""The buttons a dialog ends with."""
from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QDialog, QDialogButtonBox


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
