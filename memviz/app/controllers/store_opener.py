"""Opening a store in the window, and what goes on after the open: File ▸ Open…, Open
database…, Open Recent, the sample store; SQLite's quick check or a framework
mirror's indexes that answer after the window shows the store (`follow`), and the vector
indexes a copy to PostgreSQL left unbuilt.

Every read is a worker job; the store shown stays until the new one is ready, and a failure
is said in a message box (`error`) with nothing lost. Signals: opened(path), open_failed(path,
text), message(text, ms) for the status bar, error(title, text), import_requested(source) for
a file that is an export to import rather than a store, status_changed() when a check or an
index build has answered. File ▸ Reload is live refresh's whole re-read (LiveController.reload).
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Future

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QFileDialog, QWidget

import memviz.frameworks as frameworks
import memviz.store as ms
from memviz.app.controllers.recent_files import RecentFiles
from memviz.app.dialogs.database_dialogs import OpenDatabaseDialog
from memviz.app.dialogs.import_dialog import is_import_source
from memviz.app.plots.style import theme
from memviz.app.workers import Workers
from memviz.samples.bundled import user_sample
from memviz.session.state import AppState, StoreData, open_store_data
from memviz.store.errors import user_message
from memviz.store.postgres.index import build_missing_indexes

OPEN_WAIT_S = 60.0  # how long an open waits for a store another process holds exclusively
#: what the open's message adds while a framework mirror's indexes are built after the window shows it
INDEXING_NOTE = " — building its search indexes; edits wait for them"


class StoreOpener(QObject):
    opened = Signal(str)
    open_failed = Signal(str, str)
    message = Signal(str, int)
    error = Signal(str, str)
    import_requested = Signal(str)
    status_changed = Signal()

    def __init__(self, state: AppState, workers: Workers, recent: RecentFiles,
                 shown_message: Callable[[], str], dialog_parent: QWidget | None = None) -> None:
        """`shown_message()`: the status bar's message now (the open's is completed once its
        indexes are built, if it is still shown)."""
        super().__init__(dialog_parent)
        self.state, self.workers, self.recent = state, workers, recent
        self.shown_message = shown_message
        self.dialog_parent = dialog_parent
        self.database_dialog: OpenDatabaseDialog | None = None

    # ------------------------------------------------------------ asking what to open
    def choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.dialog_parent, "Open a memory store", self.recent.folder(),
                                              "Memory stores (*.db *.sqlite *.sqlite3);;All files (*)")
        if path:
            self.open_path(path)

    def choose_database(self) -> OpenDatabaseDialog:
        """File ▸ Open database…: a store on a PostgreSQL server."""
        self.database_dialog = dlg = OpenDatabaseDialog(self.recent.files(), self.dialog_parent,
                                                        alarm=lambda: QColor(theme().alarm))
        dlg.accepted.connect(lambda: self.open_path(dlg.dsn()))
        dlg.open()
        return dlg

    def open_sample(self, *, read_only: bool = False) -> None:
        """Open the user's copy of the sample store; the first time, it is made first (a second or
        two, in the background, with progress)."""
        def failed(err: Exception) -> None:
            self.error.emit("No sample store", user_message(err))
            self.open_failed.emit("the sample store", user_message(err))
        self.workers.submit("sample", user_sample, on_done=lambda path: self.open_path(path, read_only=read_only),
                            on_error=failed)

    # ------------------------------------------------------------ reading
    def open_path(self, path: str, read_only: bool = False, prefetched: Future | None = None) -> None:
        """Open a store in the background; the current one stays until the new one is ready.
        `prefetched`: a Future of open_and_read(path, open_store_data) already under way.
        A `postgresql://` DSN opens a store on a server; only its redacted form is remembered."""
        path = path if ms.is_dsn(path) else os.path.abspath(os.fspath(path))
        if not ms.is_dsn(path) and os.path.isfile(path) and is_import_source(path):
            self.import_requested.emit(path)  # an export (a Letta agent file, a JSON dump): imported, not opened
            return
        t0 = time.perf_counter()

        def job(task):
            early, began = prefetched, time.monotonic()
            while True:  # a store in exclusive use: say so and wait (Cancel stops), up to OPEN_WAIT_S
                try:
                    store, data = early.result() if early is not None else \
                        frameworks.open_and_read(path, open_store_data, read_only=read_only, task=task, check_later=True)
                    break
                except ms.BusyError:
                    early = None
                    waited = time.monotonic() - began  # each try waited SQLite's busy timeout, and then some
                    if waited >= OPEN_WAIT_S:
                        raise
                    task.progress(-1, f"{os.path.basename(path)} is in exclusive use by another process — "
                                      f"waiting ({waited:.0f} s); Cancel stops")
                    task.wait(1.0)
            try:
                task.check()
            except BaseException:
                store.close()
                raise
            return data

        def done(data: StoreData) -> None:
            old = self.state.data
            self.state.set_data(data)
            if old is not None and old.store is not data.store:
                old.store.close()
            store = data.store
            self.recent.add(store.path)  # a DSN without its password
            msg = f"Opened {store.describe()} in {time.perf_counter() - t0:.2f} s"
            if store.answers_later:
                self.follow(store)
            if store.checking:
                msg += " — checking the file; edits wait for it"
            elif store.indexing:  # a framework mirror's first build (frameworks/mirror.py)
                msg += INDEXING_NOTE
            elif store.read_only:
                msg += f" — read-only: {store.read_only_reason}"
            self.message.emit(msg, 8000)
            self.opened.emit(path)
            if store.backend == "postgresql" and not store.read_only:
                self.complete_vector_indexes(path)

        def failed(err: Exception) -> None:
            err = ms.translate(err, path)  # a raw SQLite error read as the store's own message
            # a file memviz does not read: what to do in the window's words (File ▸ Import…), not the shell's
            text = err.worded("window") if isinstance(err, frameworks.NotReadHere) else user_message(err)
            self.error.emit("Cannot open store", f"memviz could not open\n{ms.redact(path)}\n\n{text}")
            self.open_failed.emit(ms.redact(path), text)

        self.workers.submit("open", job, on_done=done, on_error=failed)

    # ------------------------------------------------------------ after the open
    def follow(self, store) -> None:
        """SQLite's quick check of a large store runs after the window shows it (store.open_and_read
        check_later), or a framework mirror's indexes are built after it (`indexing`); when it
        answers, the status follows, and damage is said."""
        def job(task):
            task.progress(-1, "checking the file (SQLite's quick check)" if store.checking else "building the search indexes")
            while store.checking or store.indexing:
                task.wait(0.1)
            return store.checked()

        def done(damage: list[str]) -> None:
            if self.state.data is None or self.state.data.store is not store:
                return
            self.status_changed.emit()
            shown = self.shown_message()
            if shown.endswith(INDEXING_NOTE):  # the open's message, outdated now: how the step ended
                self.message.emit(f"{shown[:-len(INDEXING_NOTE)]} — {store.index_failure or 'its search indexes are built'}",
                                  8000)
            if damage:
                self.error.emit("Store damaged", f"SQLite's quick check found damage in {store.path}; memviz "
                                                 f"keeps it read-only.\n\n{store.read_only_reason}")

        self.workers.submit("check file", job, on_done=done)

    def complete_vector_indexes(self, dsn: str) -> None:
        """A copy cut off before its HNSW indexes: build them now, without blocking the agents."""
        def done(dims) -> None:
            if dims:
                self.message.emit(f"Built the vector index of {ms.redact(dsn)}", 8000)
        self.workers.submit("index", lambda task: build_missing_indexes(dsn, task, concurrently=True),
                            on_done=done, on_error=lambda e: self.message.emit(
                                f"The vector index was not built: {e}", 10000), lane="server")
