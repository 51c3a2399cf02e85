"""The "retired" view: superseded and soft-deleted memories, with when and why.

Why comes from the audit entry that last set `valid_until` and from `attributes.supersedes`
links; a memory the agent retired itself has no audit entry and says so.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..store.records import UNREADABLE_TIME, decode_text
from ..store.times import iso

_WHY = {
    "soft_delete": "deleted",
    "redo:soft_delete": "deleted",
    "undo:restore": "deleted (its restore was undone)",
    "undo:correct": "correction withdrawn (undone); the original is current again",
    "insert": "already retired when it was added",
}
_CORRECTED = ("supersede", "redo:correct")


@dataclass
class RetiredMemory:
    id: str
    content: str
    kind: str
    agent: str
    retired_at: float | None          # None: the stored time is unreadable (shown as "unreadable time")
    why: str                          # one line for the list
    superseded_by: str | None = None  # the live (or latest) correction of it
    action: str | None = None         # the audit action that retired it, None if not by memviz
    actor: str | None = None
    note: str | None = None
    audited_at: float | None = None

    @property
    def retired_when(self) -> str:
        """When it was retired, as shown: UTC time, or "unreadable time"."""
        return UNREADABLE_TIME if self.retired_at is None else iso(self.retired_at)


def retired(store, limit: int | None = None) -> list[RetiredMemory]:
    """Retired memories, most recently retired first."""
    rows = store.retired_rows(limit)  # valid_until already read as UTC seconds (None: unreadable)
    if not rows:
        return []
    audit = store.last_retirements()  # the latest audit entry per memory that set valid_until
    superseded_by = {}
    for new, old in store.supersede_links():
        superseded_by.setdefault(old, []).append(new)
    out = []
    for rid, content, kind, agent, until in rows:
        rid = decode_text(rid)[0]
        action, at, actor, note = audit.get(rid, (None, None, None, None))
        successor = (superseded_by.get(rid) or [None])[-1]
        if action in _CORRECTED or (action is None and successor):
            why = f"corrected: superseded by {successor}" + ("" if action else " (by the agent)")
        elif action:
            why = _WHY.get(action, action.replace("_", " ").replace(":", " "))
        else:
            why = "retired by the agent (no memviz audit entry)"
        out.append(RetiredMemory(rid, decode_text(content)[0], decode_text(kind)[0], decode_text(agent)[0], until, why,
                                 successor, action, actor, note, at))
    return out


def as_json(items: list[RetiredMemory]) -> str:
    return json.dumps([i.__dict__ for i in items], ensure_ascii=False, indent=2)
