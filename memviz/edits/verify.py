"""Checks that every edit is wholly there or wholly absent: row, FTS, vectors and audit agree.

Used after a crash or a session with the agent writing (and by the tests that kill a writer
mid-action). Read-only: it only runs queries, plus SQLite's own integrity checks.
"""
from __future__ import annotations

import json

from ..store.vectors import vec_table

#: fields memviz edits; the last audited value of each must be the row's current value
AUDITED_FIELDS = ("agent", "kind", "content", "importance", "decay_rate", "protected", "valid_until", "tags",
                  "attributes", "embedding", "embedding_model")


def problems(store) -> list[str]:
    """Everything found wrong (empty = consistent)."""
    return store.integrity() + vector_problems(store) + audit_problems(store) + correction_problems(store)


def vector_problems(store) -> list[str]:
    """Each embedding is in the vec0 table of its dimension with the same bytes, exactly once,
    and the vec0 tables hold nothing else."""
    out = []
    rows = store.conn.execute("SELECT id, embedding FROM memories WHERE embedding IS NOT NULL").fetchall()
    want = {}
    for mid, blob in rows:
        want.setdefault(len(blob) // 4, {})[mid] = bytes(blob)
    dims = set(want) | set(store.report.vec_tables if store.report else ())
    for dim in sorted(dims):
        table = vec_table(dim)
        if not store.conn.execute("SELECT 1 FROM sqlite_master WHERE name=?", (table,)).fetchone():
            out.append(f"{len(want.get(dim, {}))} embeddings of {dim} dimensions have no vector table")
            continue
        have = {}
        for mid, blob in store.conn.execute(f"SELECT memory_id, embedding FROM {table}"):
            if mid in have:
                out.append(f"{table} holds {mid} twice")
            have[mid] = bytes(blob)
        expect = want.get(dim, {})
        for mid in expect.keys() - have.keys():
            out.append(f"{table} lacks the vector of {mid}")
        for mid in have.keys() - expect.keys():
            out.append(f"{table} holds a vector for {mid}, which has no such embedding")
        for mid in expect.keys() & have.keys():
            if expect[mid] != have[mid]:
                out.append(f"{table} holds a stale vector for {mid}")
    return out


def audit_problems(store, fields=AUDITED_FIELDS) -> list[str]:
    """For each audited memory, replaying its audit entries gives the row's current fields."""
    out = []
    select = f"SELECT {', '.join(fields)} FROM memories WHERE id = ?"
    for (mid,) in store.conn.execute("SELECT DISTINCT memory_id FROM memviz_audit").fetchall():
        row = store.conn.execute(select, (mid,)).fetchone()
        row = None if row is None else dict(zip(fields, row))
        if row is None:
            out.append(f"the audit log names {mid}, which is not in the store")
            continue
        last = {}
        for entry in store.history(mid):
            last.update({k: v for k, v in (entry["after"] or {}).items() if k in fields})
        for k, v in last.items():
            if _norm(k, v) != _norm(k, row[k]):
                out.append(f"{mid}: {k} is {row[k]!r} but its last audit entry says {v!r}")
    return out


def correction_problems(store) -> list[str]:
    """A correction's two rows were written together: each `supersede` entry has the new row's
    `insert` entry, and the pair was undone and redone the same number of times."""
    out = []
    pairs = store.conn.execute(
        "SELECT memory_id, json_extract(after, '$.superseded_by') FROM memviz_audit "
        "WHERE action = 'supersede' AND json_valid(after)").fetchall()
    for old, new in pairs:
        if not new or store.get(new) is None:
            out.append(f"{old} was superseded by {new!r}, which is not in the store")
            continue
        if store.get(new)["attributes"].get("supersedes") != old:
            out.append(f"{new} does not name {old} in attributes.supersedes")
        new_actions = [e["action"] for e in store.history(new)]
        old_actions = [e["action"] for e in store.history(old)]
        if "insert" not in new_actions:
            out.append(f"{new} (correction of {old}) has no insert entry")
        for a in ("undo:correct", "redo:correct"):
            if new_actions.count(a) != old_actions.count(a):
                out.append(f"{a} was written for only one row of the correction {old} -> {new}")
    return out


def _norm(key, v):
    if key in ("tags", "attributes") and isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return v
    if key == "protected":
        return bool(v)
    if key in ("importance", "decay_rate") and v is not None:
        return float(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    return v
