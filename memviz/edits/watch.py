"""Notice writes by other processes (the agent) without reading the file outside SQLite.

`PRAGMA data_version` changes on this connection only when another connection commits, so
polling it is cheap (no table read) and ignores memviz's own edits. The app polls from a
timer (every ~0.5 s); when `poll()` returns a Change it reads what changed
(memviz.store.changes, memviz.session.refresh), not the whole store.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Change:
    data_version: int


class ChangeWatcher:
    def __init__(self, store):
        self.store = store
        self._version = store.data_version()

    def poll(self) -> Change | None:
        """None when no other connection committed since the last poll."""
        version = self.store.data_version()
        if version == self._version:
            return None
        self._version = version
        return Change(version)
