"""Checks that every edit is wholly there or wholly absent: row, FTS, vectors and audit agree.

Used after a crash or a session with the agent writing (and by the tests that kill a writer
mid-action). Read-only: it only runs queries, plus the store's own integrity check. The audit
checks ask the store interface (both backends); the vector check is SQLite's alone (vec0
tables kept by triggers beside the rows): a PostgreSQL store holds each vector in its row.
"""
from __future__ import annotations

import json

from ..store.judged import about_records
from ..store.vectors import vec_table

#: fields memviz edits; the last audited value of each must be the row's current value
AUDITED_FIELDS = ("agent", "kind", "content", "importance", "decay_rate", "protected", "valid_until", "tags",
                  "attributes", "embedding", "embedding_model")


def problems(store) -> list[str]:
    """Everything found wrong (empty = consistent)."""
    return store.integrity() + vector_problems(store) + audit_problems(store) + correction_problems(store)


def vector_problems(store) -> list[str]:
    """Each embedding is in the vec0 table of its dimension with the same bytes, exactly once,
    and the vec0 tables hold nothing else. SQLite only: on PostgreSQL the vector is a column of
    its row (no second copy to drift), so there is nothing to compare."""
    if store.backend != "sqlite":
        return []
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
    audited = list(dict.fromkeys(e[3] for e in store.audit_entries() if not about_records(e[2])))
    rows = {r["id"]: r for k in range(0, len(audited), 500) for r in store.get_many(audited[k:k + 500])}
    for mid in audited:
        row = rows.get(mid)
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
    """A correction's two rows are written in one transaction, whose audit entries are therefore
    adjacent: `supersede` of the old row then `insert` of the new, and every undo/redo of the
    correction has its twin entry on the other row right beside it."""
    out = []
    entries = {i: (a, m, after) for i, _, a, m, _, after in store.audit_entries(
        ("supersede", "insert", "undo:correct", "redo:correct"))}
    links = set()
    for i, (action, old, after) in entries.items():
        if action != "supersede":
            continue
        new = (json.loads(after) if after else {}).get("superseded_by")
        links.add(frozenset((old, new)))
        twin = entries.get(i + 1)
        if twin is None or twin[:2] != ("insert", new):
            out.append(f"{old} was superseded by {new!r}, but that row's insert was not written with it")
        row = store.get(new) if new else None
        if row is not None and row["attributes"].get("supersedes") != old:
            out.append(f"{new} does not name {old} in attributes.supersedes")
    for i, (action, mid, _) in entries.items():
        if action in ("undo:correct", "redo:correct") and not any(
                (t := entries.get(j)) and t[0] == action and frozenset((mid, t[1])) in links for j in (i - 1, i + 1)):
            out.append(f"{action} of {mid} (audit entry {i}) was written without its twin on the other row")
    return out


def _norm(key, v):
    if key in ("tags", "attributes") and isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return v
    if key == "protected":
        return bool(v)
    if key == "embedding_model":
        return v or None  # rows are read as get() reads them: no model is ""
    if key in ("importance", "decay_rate") and v is not None:
        return float(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    return v
