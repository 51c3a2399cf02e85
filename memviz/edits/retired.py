"""The "retired" view: superseded and soft-deleted memories, with when and why.

Why comes from the audit entry that last set `valid_until` and from `attributes.supersedes`
links; a memory the agent retired itself has no audit entry and says so.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..store.records import UNREADABLE_TIME, decode_text, read_time
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
    # valid_until may be ISO text or milliseconds (an agent wrote it): read through read_time and
    # sorted here (SQL would order text after every number); unreadable times sort last
    rows = store.conn.execute(
        "SELECT CAST(id AS BLOB), CAST(content AS BLOB), CAST(kind AS BLOB), CAST(agent AS BLOB), valid_until, rowid "
        "FROM memories WHERE valid_until IS NOT NULL").fetchall()
    rows = [(rid, content, kind, agent, read_time(until)[0], rowid) for rid, content, kind, agent, until, rowid in rows]
    rows.sort(key=lambda r: (r[4] is not None, r[4] or 0, r[5]), reverse=True)
    rows = [r[:5] for r in (rows[:limit] if limit else rows)]
    if not rows:
        return []
    # The latest audit entry per memory that set valid_until (max(id) picks that row's columns).
    audit = {mid: (action, at, actor, note) for mid, _, action, at, actor, note in store.conn.execute(
        "SELECT memory_id, max(id), action, at, actor, note FROM memviz_audit "
        "WHERE json_valid(after) AND json_type(after, '$.valid_until') IN ('integer', 'real') GROUP BY memory_id")}
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
