"""memviz's own records about a store, kept with it: judged queries (named sets of queries with
the memories that should come back for them) and saved parameter sets (a preset's weights and
knobs under a name). SQLite schema migration 3, PostgreSQL migration 4.

The store knows them as plain rows: a judged query is its id, its JSON object as text (the JSON
Lines form of memviz/judge/files.py, which reads and writes it), who judged it and when, and
its place in its set; a parameter set is a name, a preset, the values as a JSON object and a
description. What they mean is the judge layer's (memviz.judge.stored).

Every change is one short transaction with an entry per query (or parameter set) in
`memviz_audit`, filed under a subject that names the record ("judged <set>/<query id>",
"parameters <name>") with an action of `RECORD_ACTIONS` (its undo and redo prefixed `undo:` /
`redo:` as edits' are), so the audit's readers that follow memories skip them (`about_records`).
A change may carry what the caller last saw (`expected`): a record changed since is a
ConflictError, never overwritten. A judged query may name only memories of the store: a query
naming an id that is no memory is refused (ValidationError naming the query and the ids).

`JudgedRecords` is written once for both backends; `SqliteRecords` and `PgRecords` give what
differs (the placeholder, whether the tables are there). A framework store keeps its records
beside its mirror (frameworks/mirror.py), so a rebuild of the mirror never loses them.
"""
from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from .errors import ConflictError, ReadOnlyError, StoreError, ValidationError

#: the audit actions of these records (undo/redo prefix them with "undo:" / "redo:")
SAVE_JUDGED, DELETE_JUDGED = "judged:save", "judged:delete"
SAVE_PARAMETERS, DELETE_PARAMETERS = "parameters:save", "parameters:delete"
RECORD_ACTIONS = frozenset({SAVE_JUDGED, DELETE_JUDGED, SAVE_PARAMETERS, DELETE_PARAMETERS})


class _Unchecked:
    def __repr__(self) -> str:
        return "UNCHECKED"


#: `expected` when nothing is checked: the change overwrites what is there
UNCHECKED = _Unchecked()
_CHUNK = 500


def about_records(action: str) -> bool:
    """Whether an audit entry's action is about these records rather than about a memory."""
    for prefix in ("undo:", "redo:"):
        action = action.removeprefix(prefix)
    return action in RECORD_ACTIONS


@dataclass(frozen=True)
class JudgedRow:
    """One judged query as the store keeps it. `query` is its JSON object as text; `position`
    its place in its set (read: always set; written: None keeps the place it has, or appends);
    `memory_ids` (written only) every memory it names, each of which must be in the store."""

    query_id: str
    query: str
    judged_by: str = ""
    judged_at: float | None = None
    position: int | None = None
    memory_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class SavedParameters:
    """A named parameter set as the store keeps it: `values` is a JSON object (Params fields to
    values) as text; `created_at` in UTC epoch seconds (0 when written: the time of the write)."""

    name: str
    preset: str
    values: str = "{}"
    description: str = ""
    created_at: float = 0.0


@dataclass(frozen=True)
class AgentQuery:
    """A retrieval query the agent itself ran, as its store records it (HTM's operations log):
    when, by which agent, the query text, and the time range it searched (None: any)."""

    at: float
    agent: str
    text: str
    time_range: tuple[float | None, float | None] | None = None


def _text(value, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{what} must be non-empty text, not {value!r}")
    return value


def _json_object(text, what: str) -> dict:
    try:
        obj = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        raise ValidationError(f"{what} must be a JSON object as text, not {str(text)[:80]!r}")
    return obj


def _loaded(text: str):
    """A record's JSON for the audit: the object, or the text itself when it is not JSON."""
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def _subject_judged(set_name: str, query_id: str) -> str:
    return f"judged {set_name}/{query_id}"


def _subject_parameters(name: str) -> str:
    return f"parameters {name}"


class JudgedRecords:
    """Judged queries and parameter sets over one backend's connection (see the module's
    docstring). A backend gives `transaction`, `audit`, `_records_read(sql, params)` (rows of a
    read, `?` placeholders), `_records_sql(sql)` (its placeholder style) and `_has_records()`."""

    # ----------------------------------------------------------------- reads
    def judged_sets(self) -> list[tuple[str, int]]:
        """(set name, number of queries) of every judged set kept with the store, by name."""
        if not self._has_records():
            return []
        rows = self._records_read("SELECT set_name, count(*) FROM memviz_judged GROUP BY set_name")
        return sorted((str(n), int(c)) for n, c in rows)

    def judged_queries(self, set_name: str) -> list[JudgedRow]:
        """The set's queries in their order (empty: no such set)."""
        if not self._has_records():
            return []
        rows = self._records_read("SELECT query_id, query, judged_by, judged_at, position FROM memviz_judged "
                                  "WHERE set_name = ? ORDER BY position, query_id", (set_name,))
        return [JudgedRow(str(q), str(j), str(by or ""), None if at is None else float(at), int(p))
                for q, j, by, at, p in rows]

    def parameter_sets(self) -> list[SavedParameters]:
        """The parameter sets saved with the store, by name."""
        if not self._has_records():
            return []
        rows = self._records_read("SELECT name, preset, values_json, description, created_at FROM memviz_parameter_sets")
        return sorted((SavedParameters(str(n), str(p), str(v), str(d or ""), float(t)) for n, p, v, d, t in rows),
                      key=lambda s: s.name)

    def agent_queries(self, limit: int = 100) -> list[AgentQuery]:
        """The retrieval queries the agent itself ran, newest first, where the store records them.
        memviz's own stores do not (their audit log records edits; `access_count` and
        `last_accessed` say that a memory was recalled, not for what query): empty."""
        return []

    # ----------------------------------------------------------------- writes
    def change_judged(self, set_name: str, write: Sequence[JudgedRow] = (), remove: Iterable[str] = (), *,
                      expected: Mapping[str, str | None] | _Unchecked = UNCHECKED, action: str = SAVE_JUDGED,
                      actor: str = "memviz", note: str | None = None) -> dict[str, JudgedRow | None]:
        """Write (add or replace) the queries `write` of the set and remove those of `remove`, in
        one audited transaction; returns each touched query's row as it was (None: it was not
        there), which is what an undo writes back. `expected` (query id -> its JSON as last
        seen, None: absent) turns a change made meanwhile into a ConflictError. A query naming
        an id that is no memory of the store is refused, with nothing written."""
        _text(set_name, "a judged set's name")
        write, remove = list(write), list(dict.fromkeys(remove))
        ids = [r.query_id for r in write]
        for r in write:
            if not isinstance(r, JudgedRow):
                raise ValidationError(f"a judged query to write must be a JudgedRow, not {type(r).__name__}")
            _text(r.query_id, "a judged query's id")
            _json_object(r.query, f"query {r.query_id!r}")
            if r.judged_at is not None and not math.isfinite(r.judged_at):
                raise ValidationError(f"query {r.query_id!r}: judged_at must be a finite time, not {r.judged_at!r}")
        twice = sorted({q for q in ids if ids.count(q) > 1} | (set(ids) & set(remove)))
        if twice:
            raise ValidationError(f"judged set {set_name!r}: the query {twice[0]!r} is written (or removed) twice "
                                  "in one change")
        if not write and not remove:
            return {}
        self._records_writable()
        with self.transaction() as c:
            named = sorted({m for r in write for m in r.memory_ids})
            missing = set(self._memory_ids_missing(c, named)) if named else set()
            bad = [(r.query_id, [m for m in r.memory_ids if m in missing]) for r in write
                   if missing.intersection(r.memory_ids)]
            if bad:
                shown = "; ".join(f"query {q!r} names {', '.join(map(repr, ms[:3]))}" + (" …" if len(ms) > 3 else "")
                                  for q, ms in bad[:5])
                raise ValidationError(f"judged set {set_name!r}: {len(bad)} quer{'y' if len(bad) == 1 else 'ies'} "
                                      f"name{'s' if len(bad) == 1 else ''} memories that are not in {self.path} "
                                      f"({shown}{'; …' if len(bad) > 5 else ''}); nothing was saved")
            touched = [*ids, *remove]
            current = self._judged_rows(c, set_name, touched)
            for qid in touched if expected is not UNCHECKED else ():
                if qid in expected:
                    now = current.get(qid)
                    if (None if now is None else now.query) != expected[qid]:
                        raise ConflictError(
                            f"The judged query {qid!r} of set {set_name!r} was changed elsewhere since it was shown; "
                            "nothing was written.", current=now, expected=expected[qid])
            gone = [q for q in remove if q not in current]
            if gone:
                raise ConflictError(f"judged set {set_name!r} has no query {gone[0]!r} (removed elsewhere?); "
                                    "nothing was written.", current=None)
            top = self._records_one(c, "SELECT coalesce(max(position), -1) FROM memviz_judged WHERE set_name = ?",
                                    (set_name,))
            before: dict[str, JudgedRow | None] = {}
            for r in write:
                old = current.get(r.query_id)
                if r.position is not None:
                    pos = int(r.position)
                elif old is not None:
                    pos = old.position
                else:
                    top += 1
                    pos = top
                c.execute(self._records_sql(
                    "INSERT INTO memviz_judged(set_name, query_id, position, query, judged_by, judged_at) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (set_name, query_id) DO UPDATE SET position = excluded.position, "
                    "query = excluded.query, judged_by = excluded.judged_by, judged_at = excluded.judged_at"),
                    (set_name, r.query_id, pos, r.query, r.judged_by or "", r.judged_at))
                self.audit(c, action, _subject_judged(set_name, r.query_id), _judged_audit(old),
                           _judged_audit(replace(r, position=pos)), actor, note)
                before[r.query_id] = old
            for qid in remove:
                c.execute(self._records_sql("DELETE FROM memviz_judged WHERE set_name = ? AND query_id = ?"),
                          (set_name, qid))
                self.audit(c, action, _subject_judged(set_name, qid), _judged_audit(current[qid]), None, actor, note)
                before[qid] = current[qid]
        return before

    def change_parameter_set(self, name: str, saved: SavedParameters | None, *,
                             expected: SavedParameters | None | _Unchecked = UNCHECKED, action: str = SAVE_PARAMETERS,
                             actor: str = "memviz", note: str | None = None) -> SavedParameters | None:
        """Save `saved` under `name` (replacing one of that name), or remove the set `name`
        (`saved` None), in one audited transaction; returns the set as it was (None: absent).
        `expected` (the set as last seen, None: absent) turns a change made meanwhile into a
        ConflictError."""
        _text(name, "a parameter set's name")
        if saved is not None:
            if not isinstance(saved, SavedParameters) or saved.name != name:
                raise ValidationError(f"the parameter set to save must be a SavedParameters named {name!r}")
            _text(saved.preset, f"parameter set {name!r}: its preset")
            _json_object(saved.values, f"parameter set {name!r}: its values")
            if not isinstance(saved.description, str):
                raise ValidationError(f"parameter set {name!r}: its description must be text")
        self._records_writable()
        with self.transaction() as c:
            row = c.execute(self._records_sql("SELECT name, preset, values_json, description, created_at "
                                              "FROM memviz_parameter_sets WHERE name = ?"), (name,)).fetchone()
            old = None if row is None else SavedParameters(str(row[0]), str(row[1]), str(row[2]), str(row[3] or ""),
                                                           float(row[4]))
            if expected is not UNCHECKED and _comparable(old) != _comparable(expected):
                raise ConflictError(f"The parameter set {name!r} was changed elsewhere since it was shown; "
                                    "nothing was written.", current=old, expected=expected)
            if saved is None:
                if old is None:
                    raise ConflictError(f"there is no parameter set {name!r} (removed elsewhere?); nothing was written.")
                c.execute(self._records_sql("DELETE FROM memviz_parameter_sets WHERE name = ?"), (name,))
                new = None
            else:
                new = saved if saved.created_at else replace(saved, created_at=time.time())
                c.execute(self._records_sql(
                    "INSERT INTO memviz_parameter_sets(name, preset, values_json, description, created_at) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET preset = excluded.preset, "
                    "values_json = excluded.values_json, description = excluded.description, "
                    "created_at = excluded.created_at"), (name, new.preset, new.values, new.description, new.created_at))
            self.audit(c, action, _subject_parameters(name), _parameters_audit(old), _parameters_audit(new), actor, note)
        return old

    # ----------------------------------------------------------------- what a backend may refine
    def _judged_rows(self, c, set_name: str, query_ids: Sequence[str]) -> dict[str, JudgedRow]:
        out = {}
        for k in range(0, len(query_ids), _CHUNK):
            chunk = list(query_ids[k:k + _CHUNK])
            rows = c.execute(self._records_sql(
                "SELECT query_id, query, judged_by, judged_at, position FROM memviz_judged WHERE set_name = ? "
                f"AND query_id IN ({', '.join('?' * len(chunk))})"), (set_name, *chunk)).fetchall()
            out.update((str(q), JudgedRow(str(q), str(j), str(by or ""), None if at is None else float(at), int(p)))
                       for q, j, by, at, p in rows)
        return out

    def _memory_ids_missing(self, c, ids: Sequence[str]) -> list[str]:
        """Those of `ids` that name no memory of this store, read in the transaction `c`."""
        found: set[str] = set()
        for k in range(0, len(ids), _CHUNK):
            chunk = list(ids[k:k + _CHUNK])
            found.update(str(r[0]) for r in c.execute(self._records_sql(
                f"SELECT id FROM memories WHERE id IN ({', '.join('?' * len(chunk))})"), chunk).fetchall())
        return [m for m in ids if m not in found]

    def _records_one(self, c, sql: str, params=()):
        return c.execute(self._records_sql(sql), params).fetchone()[0]

    def _records_writable(self) -> None:
        if self.read_only:
            raise records_read_only(self.path, self.read_only_reason)
        if not self._has_records():
            raise StoreError(f"{self.path} has no tables for judged queries and parameter sets: it was made by an "
                             "older memviz and could not be brought up to date when it was opened (a read-only open, "
                             "or a role that may not create tables). Open it once with write access, then try again.")


def records_read_only(path: str, reason: str | None) -> ReadOnlyError:
    """The refusal of a change to the records of a read-only store."""
    return ReadOnlyError(f"{path} is open read-only ({reason}): judged queries and parameter sets are kept with "
                         "the store, so none can be saved or removed here; nothing was changed. A judged set in a "
                         "file can still be evaluated (memviz judge eval DB FILE).")


def _judged_audit(row: JudgedRow | None) -> dict | None:
    if row is None:
        return None
    return {"query_id": row.query_id, "position": row.position, "query": _loaded(row.query),
            "judged_by": row.judged_by, "judged_at": row.judged_at}


def _parameters_audit(s: SavedParameters | None) -> dict | None:
    if s is None:
        return None
    return {"name": s.name, "preset": s.preset, "values": _loaded(s.values), "description": s.description,
            "created_at": s.created_at}


def _comparable(s: SavedParameters | None):
    """A parameter set as the conflict check compares it: what it holds, its JSON read."""
    return None if s is None else (s.preset, json.dumps(_loaded(s.values), sort_keys=True), s.description)


class SqliteRecords(JudgedRecords):
    """The records of an SQLite store (Store): its connection, `?` placeholders."""

    def _records_read(self, sql: str, params=()) -> list[tuple]:
        return self.conn.execute(sql, params).fetchall()

    @staticmethod
    def _records_sql(sql: str) -> str:
        return sql

    def _has_records(self) -> bool:
        return self._has_table("memviz_judged")


class PgRecords(JudgedRecords):
    """The records of a PostgreSQL store (PgStore): `%s` placeholders; a database memviz could
    not migrate (a role without CREATE, another app's table read through stand-ins) has none."""

    def _records_read(self, sql: str, params=()) -> list[tuple]:
        return self._q(self._records_sql(sql), params).fetchall()

    @staticmethod
    def _records_sql(sql: str) -> str:
        return sql.replace("?", "%s")

    def _has_records(self) -> bool:
        return self._q("SELECT to_regclass('memviz_judged') IS NOT NULL AND to_regclass('memviz_parameter_sets') "
                       "IS NOT NULL").fetchone()[0]


__all__ = ["AgentQuery", "DELETE_JUDGED", "DELETE_PARAMETERS", "JudgedRecords", "JudgedRow", "PgRecords",
           "RECORD_ACTIONS", "SAVE_JUDGED", "SAVE_PARAMETERS", "SavedParameters", "SqliteRecords", "UNCHECKED",
           "about_records", "records_read_only"]
