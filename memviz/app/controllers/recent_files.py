"""The stores opened lately, kept in the settings (File ▸ Open Recent, the start page, the
folder a file dialog starts in, the database dialogs' suggestions). A DSN is kept without
its password (the caller adds the redacted form)."""
from __future__ import annotations

import os
from collections.abc import Callable

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMenu

import memviz.store as ms

MAX_RECENT = 10


class RecentFiles:
    def __init__(self, settings: QSettings) -> None:
        self.settings = settings

    def files(self) -> list[str]:
        v = self.settings.value("recent", [])
        return [v] if isinstance(v, str) else list(v or [])

    def add(self, path: str) -> None:
        rec = [path] + [p for p in self.files() if p != path]
        self.settings.setValue("recent", rec[:MAX_RECENT])

    def folder(self) -> str:
        """Where a file dialog starts: the folder of the last store opened."""
        files = self.files()
        return os.path.dirname(files[0]) if files else ""

    def fill(self, menu: QMenu, open_path: Callable[[str], None]) -> None:
        """`menu` lists them (the ones gone from disk greyed out)."""
        menu.clear()
        for p in self.files():
            act = menu.addAction(p, lambda p=p: open_path(p))
            act.setEnabled(ms.is_dsn(p) or os.path.exists(p))
        if not self.files():
            menu.addAction("(none)").setEnabled(False)
