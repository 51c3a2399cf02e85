"""Notice writes by other processes (the agent) without reading the file outside SQLite.

`PRAGMA data_version` changes on this connection only when another connection commits, so
polling it is cheap (no table read) and ignores memviz's own edits. The app polls from a
timer (every ~0.5 s); when `poll()` returns a Change the window reads what changed
(memviz.store.changes, memviz.session.refresh), not the whole store.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Change:
    data_version: int
    new_ids: list[str] = field(default_factory=list)  # memories added since the last poll (by rowid)


class ChangeWatcher:
    def __init__(self, store):
        self.store = store
        self._version = store.data_version()
        self._max_rowid = self._top_rowid()

    def _top_rowid(self) -> int:
        return self.store.max_rowid()

    def poll(self) -> Change | None:
        """None when no other connection committed since the last poll."""
        version = self.store.data_version()
        if version == self._version:
            return None
        self._version = version
        rows = self.store.memories_after(self._max_rowid)
        if rows:
            self._max_rowid = rows[-1][0]
        return Change(version, [str(i) for _, i in rows])
