"""The poll step of a live refresh: has another connection committed to the open store?"""
from __future__ import annotations

from memviz.store.changes import ChangeWatcher
from memviz.store.errors import StoreError
from memviz.store.interface import MemoryStore


class Poll:
    """Asks whether the store changed, on a connection of its own (`store.reopen()`, made at the
    first question; the window's when none can be made): the poll runs off the GUI thread, where
    a job reading on the window's connection or an edit writing on the edit controller's must not
    meet it. Every method is called from one thread at a time (the app's "live" worker lane)."""

    def __init__(self, store: MemoryStore):
        self.store = store          # the window's store (StoreData.store) the poll is for
        self._own: MemoryStore | None = None
        self._watcher: ChangeWatcher | None = None

    def changed(self) -> bool:
        """True when the store may hold changes the window has not read. The first question
        answers True: the changes made between the window's read and this connection's first
        look are read then (a refresh that finds none costs one token read)."""
        if self._watcher is None:
            try:
                self._own = self.store.reopen()
            except StoreError:  # e.g. the file went away: asked on the window's connection instead
                self._own = None
            self._watcher = ChangeWatcher(self._own or self.store)
            return True
        return self._watcher.poll() is not None

    def close(self) -> None:
        own, self._own, self._watcher = self._own, None, None
        if own is not None:
            own.close()
