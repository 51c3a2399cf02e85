"""File ▸ Copy store to…: the open store to a new file or an empty database, as a worker job.
Signals: copied(target) with the target's redacted form, message(text, ms), error(title, text)."""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QWidget

import memviz.frameworks as frameworks
import memviz.store as ms
from memviz.app.controllers.recent_files import RecentFiles
from memviz.app.dialogs.database_dialogs import CopyStoreDialog
from memviz.app.plots.style import theme
from memviz.app.workers import Workers
from memviz.session.state import AppState
from memviz.store.copy import copy_store


class StoreCopier(QObject):
    copied = Signal(str)
    message = Signal(str, int)
    error = Signal(str, str)

    def __init__(self, state: AppState, workers: Workers, recent: RecentFiles,
                 dialog_parent: QWidget | None = None) -> None:
        super().__init__(dialog_parent)
        self.state, self.workers, self.recent = state, workers, recent
        self.dialog_parent = dialog_parent
        self.dialog: CopyStoreDialog | None = None

    def choose_target(self) -> CopyStoreDialog | None:
        """Ask where to copy the open store to, then copy it there."""
        if self.state.data is None:
            return None
        store = self.state.data.store
        self.dialog = dlg = CopyStoreDialog(store.path, self.recent.files(), self.dialog_parent,
                                            alarm=lambda: QColor(theme().alarm))
        dlg.accepted.connect(lambda: self.copy(store.location, dlg.target()))
        dlg.open()
        return dlg

    def copy(self, source: str, target: str) -> None:
        def done(n: int) -> None:
            self.message.emit(f"Copied {n:,} memories to {ms.redact(target)}", 10000)
            self.copied.emit(ms.redact(target))

        def failed(err: Exception) -> None:
            self.error.emit("Copy not made", f"memviz could not copy to\n{ms.redact(target)}\n\n{err}")
        self.workers.submit("copy", lambda task: copy_store(source, target, task, opener=frameworks.open_source),
                            on_done=done, on_error=failed)
