"""The PostgreSQL side of the interface methods in ../sqlite_queries.py (same names, same answers)."""
from __future__ import annotations

import json
import re
import time

import numpy as np

from ..common import audit_dump, json_column, pick_fields
from ..records import decode_json
from . import schema


class PgQueries:
    """Mixed into `PgStore`: `self._q` runs one statement, `self.transaction()` one short write."""

    def live_agent_exists(self, agent: str) -> bool:
        return self._q("SELECT 1 FROM memories WHERE agent = %s AND valid_until IS NULL LIMIT 1",
                       (agent,)).fetchone() is not None

    def importance_since_reflection(self, agent: str, now: float | None = None) -> tuple[int | None, float, int]:
        since = self._q("SELECT max(created_at) FROM memories WHERE kind = 'reflection' AND agent = %s "
                        "AND (%s::float8 IS NULL OR created_at <= %s::float8)", (agent, now, now)).fetchone()[0]
        total, n = self._q(
            "SELECT coalesce(sum(importance), 0), count(*) FROM memories WHERE valid_until IS NULL AND agent = %s "
            "AND kind != 'reflection' AND (%s::bigint IS NULL OR created_at > %s::bigint) "
            "AND (%s::float8 IS NULL OR created_at <= %s::float8)",
            (agent, since, since, now, now)).fetchone()
        return since, float(total), int(n)

    def recent_ids(self, agent: str, n: int) -> list[str]:
        return [r[0] for r in self._q("SELECT id FROM memories WHERE valid_until IS NULL AND agent = %s "
                                      "ORDER BY event_time DESC, rowid DESC LIMIT %s", (agent, int(n)))]

    def fts_hits(self, query: str) -> np.ndarray:
        """As the SQLite store's: (rowid, score) of every match, lower is better (-ts_rank)."""
        words = re.findall(r"\w+", query, flags=re.UNICODE)
        if not words:
            return np.zeros((0, 2))
        q = " || ".join(["plainto_tsquery('simple', %s)"] * len(words))
        rows = self._q(f"SELECT rowid::float8, -ts_rank(content_tsv, q)::float8 FROM memories, "
                       f"(SELECT {q} AS q) qq WHERE content_tsv @@ q", tuple(words)).fetchall()
        return np.array(rows, dtype=np.float64).reshape(-1, 2)

    def row_meta_columns(self) -> list[list]:
        """As the SQLite store's: one list per column (rowid, tags, GA type, node count, idle, cycle)."""
        cols: list[list] = [[], [], [], [], [], []]
        for rid, tags, gt, nc, key, cyc in self._row_meta_rows():
            num = [v if isinstance(v, (int, float)) and not isinstance(v, bool) else None for v in (nc, cyc)]
            for col, v in zip(cols, (int(rid), tags if tags and tags != "[]" else None,
                                     None if gt is None else str(gt), num[0],
                                     None if gt is None and key is None else "idle" in str(key or ""), num[1])):
                col.append(v)
        return cols

    def _row_meta_rows(self):
        """rowid, tags text, and four attributes (JSON values), a row per memory."""
        obj = "pg_input_is_valid(attributes, 'json') AND json_typeof(attributes::json) = 'object'"
        attrs = ", ".join(f"CASE WHEN {obj} THEN attributes::json->'{k}' END"
                          for k in ("ga_type", "node_count", "embedding_key", "cycle"))
        return self._q(f"SELECT rowid, CASE WHEN pg_input_is_valid(tags, 'json') THEN tags END, {attrs} "
                       "FROM memories").fetchall()

    def max_rowid(self) -> int:
        return int(self._q("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()[0])

    def memories_after(self, rowid: int) -> list[tuple[int, str]]:
        return [(int(r), i) for r, i in self._q(
            "SELECT rowid, id FROM memories WHERE rowid > %s ORDER BY rowid", (rowid,))]

    def retired_rows(self, limit: int | None = None) -> list[tuple]:
        return self._q("SELECT id, content, kind, agent, valid_until FROM memories WHERE valid_until IS NOT NULL "
                       "ORDER BY valid_until DESC, rowid DESC" + (" LIMIT %s" if limit else ""),
                       (limit,) if limit else ()).fetchall()

    def last_retirements(self) -> dict[str, tuple]:
        rows = self._q(
            "SELECT DISTINCT ON (memory_id) memory_id, action, at, actor, note FROM memviz_audit "
            "WHERE pg_input_is_valid(after, 'json') AND json_typeof(after::json) = 'object' "
            "AND json_typeof(after::json -> 'valid_until') = 'number' ORDER BY memory_id, id DESC").fetchall()
        return {mid: (action, at, actor, note) for mid, action, at, actor, note in rows}

    def layout_row(self, method: str, model: str | None, params: str):
        row = self._q("SELECT key, created_at, ids, coords FROM memviz_layouts WHERE method = %s "
                      "AND model IS NOT DISTINCT FROM %s AND params = %s ORDER BY created_at DESC LIMIT 1",
                      (method, model, params)).fetchone()
        return None if row is None else (row[0], row[1], row[2], bytes(row[3]))

    def put_layout(self, key, method, model, params, created_at, ids_json, coords: bytes) -> None:
        with self.transaction() as c:
            c.execute("DELETE FROM memviz_layouts WHERE method = %s AND model IS NOT DISTINCT FROM %s "
                      "AND params = %s", (method, model, params))
            c.execute("INSERT INTO memviz_layouts(key, method, model, params, created_at, ids, coords) "
                      "VALUES (%s, %s, %s, %s, %s, %s, %s)", (key, method, model, params, created_at, ids_json, coords))

    def forget_layouts(self, method: str | None = None) -> None:
        with self.transaction() as c:
            if method is None:
                c.execute("DELETE FROM memviz_layouts")
            else:
                c.execute("DELETE FROM memviz_layouts WHERE method = %s", (method,))

    def missing_entities(self, entity_ids) -> list[str]:
        ids = [str(e) for e in entity_ids]
        known = {r[0] for r in self._q("SELECT id FROM entities WHERE id = ANY(%s)", (ids,))}
        return [e for e in ids if e not in known]

    def texts_and_tags(self) -> list[tuple[int, str, str | None]]:
        return [(int(r), content, tags) for r, content, tags in self._q("SELECT rowid, content, tags FROM memories")]

    def audit_entries(self, actions=None, *, with_before: bool = False) -> list[tuple]:
        where = ["action = ANY(%s)"] if actions else []
        where += ["before IS NOT NULL"] if with_before else []
        return self._q("SELECT id, at, action, memory_id, before, after FROM memviz_audit"
                       + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id",
                       (list(actions),) if actions else ()).fetchall()

    def live_texts_with_words(self, agent: str, words) -> list[tuple[str, str]]:
        """As the SQLite store's, with ILIKE: case-blind beyond ASCII too, so it narrows less
        (never more); the caller's comparison decides."""
        pattern = "%".join(re.sub(r"([%_\\])", r"\\\1", w) for w in words)
        return self._q("SELECT id, content FROM memories WHERE valid_until IS NULL AND agent = %s "
                       "AND content ILIKE %s ESCAPE '\\' ORDER BY rowid", (agent, pattern)).fetchall()

    def decay_references(self) -> dict[str, float]:
        """As the SQLite store's. JSON values come back decoded (a number, or true as SQLite's 1)."""
        out = {}
        for m, t in self._q(f"SELECT id, {_json_field('attributes', 'decayed_as_of')} FROM memories "
                            "WHERE attributes LIKE '%%decayed_as_of%%'"):
            if isinstance(t, (int, float)):
                out[m] = float(t)
        rows = self._q(f"SELECT DISTINCT ON (memory_id) memory_id, {_json_field('after', 'decayed_to')} "
                       "FROM memviz_audit WHERE action IN ('decay', 'undo decay', 'redo decay') "
                       "ORDER BY memory_id, id DESC")
        out.update((m, float(t)) for m, t in rows if t is not None)
        return out

    def schema_version(self) -> int | None:
        return self._read(schema.applied_version) or None

    def malformed_json(self, column: str) -> list[str]:
        col = json_column(column)
        empty = "{}" if col == "attributes" else "[]"
        return [mid for mid, text in self._q(f"SELECT id, {col} FROM memories WHERE {col} != '{empty}' ORDER BY rowid")
                if not decode_json(text, col)[1]]

    def entity_links(self) -> list[tuple[str, str]]:
        return [(mid, str(e)) for mid, text in self._q(
            "SELECT id, entity_ids FROM memories WHERE entity_ids NOT IN ('[]', '') ORDER BY rowid")
            for e in decode_json(text, "entity_ids")[0]]

    def rewrite_rows(self, ids, fields, decide, *, actor: str = "memviz") -> list:
        """As the SQLite store's; the rows are locked (FOR UPDATE) from the read to the commit."""
        fields = pick_fields(fields)
        with self._transaction(pipeline=True) as c:
            rows = c.execute(f"SELECT id, {', '.join(fields)} FROM memories WHERE id = ANY(%s) ORDER BY rowid "
                             "FOR UPDATE", (list(dict.fromkeys(ids)),)).fetchall()
            writes = decide({r[0]: dict(zip(fields, r[1:])) for r in rows})
            # one statement per run of writes to the same columns: the change log's statement trigger
            # then fires once, not per row (a fraction of the server's CPU of one UPDATE each)
            for cols, run in _runs(writes):
                c.execute(f"UPDATE memories m SET {', '.join(f'{k} = v.{k}' for k in cols)} "
                          "FROM json_populate_recordset(NULL::memories, %s) v WHERE m.id = v.id",
                          (json.dumps([{"id": w.id, **{k: w.set[k] for k in cols}} for w in run]),))
            now = time.time()
            c.execute("INSERT INTO memviz_audit(at, action, memory_id, before, after, actor, note) "
                      "SELECT at, action, memory_id, before, after, actor, note "
                      "FROM json_populate_recordset(NULL::memviz_audit, %s) WITH ORDINALITY v ORDER BY v.ordinality",
                      (json.dumps([{"at": now, "action": w.action, "memory_id": w.id, "before": audit_dump(w.before),
                                    "after": audit_dump(w.after), "actor": actor, "note": w.note} for w in writes]),))
        return writes


def _runs(writes):
    """(columns, writes) of consecutive writes setting the same columns, each row once per run
    (one UPDATE sets a row once)."""
    cols, run, seen = None, [], set()
    for w in writes:
        wcols = pick_fields(w.set)
        if wcols != cols or w.id in seen:
            if run and cols:
                yield cols, run
            cols, run, seen = wcols, [], set()
        run.append(w)
        seen.add(w.id)
    if run and cols:
        yield cols, run


def _json_field(column: str, key: str) -> str:
    """SQL: `column`'s JSON object's `key` as json (NULL when the text is no JSON object). Nested
    CASEs: PostgreSQL does not promise to test an AND's sides in order, and the cast would fail."""
    return (f"CASE WHEN pg_input_is_valid({column}, 'json') THEN CASE WHEN json_typeof({column}::json) = 'object' "
            f"THEN {column}::json -> '{key}' END END")
