"""Interface methods of the SQLite Store that replace raw SQL once run by other modules
(reflection, consolidation, the layout cache, the change watcher, the retired list, the detail
panel, context and the edits' consistency check): the PostgreSQL store
implements the same names (postgres/queries.py), so those modules no longer see SQL."""
from __future__ import annotations

import itertools
import json
import re
import time

import numpy as np

from .bm25 import Bm25Index
from .common import RowWrite, audit_dump, json_column, pick_fields
from .records import decode_json, decode_text, read_time

_OBJ = "json_valid(attributes) AND json_type(attributes) = 'object'"
# One aggregate, one JSON array per column: no Python object per row and per cell, which would
# cost ten times as much. `|| ''` turns a value into plain text, as str() would.
_ROW_META = f"""
SELECT json_group_array(rowid),
       json_group_array(CASE WHEN tags != '[]' AND json_valid(tags) THEN tags || '' END),
       json_group_array(CASE WHEN {_OBJ} THEN json_extract(attributes, '$.ga_type') || '' END),
       json_group_array(CASE WHEN {_OBJ} AND json_type(attributes, '$.node_count') IN ('integer', 'real')
                             THEN json_extract(attributes, '$.node_count') END),
       json_group_array(CASE WHEN {_OBJ} THEN instr(json_extract(attributes, '$.embedding_key') || '', 'idle') > 0
                             END),
       json_group_array(CASE WHEN {_OBJ} AND json_type(attributes, '$.cycle') IN ('integer', 'real')
                             THEN json_extract(attributes, '$.cycle') END)
FROM memories
"""


class SqliteQueries:
    """Mixed into `Store`: `self.conn` is its apsw connection, `self.transaction()` its writes."""

    @property
    def _bm25(self) -> Bm25Index:
        """fts_hits' numpy BM25 over this connection's full-text index (made on first use)."""
        idx = self.__dict__.get("_bm25_index")
        if idx is None or idx.conn is not self.conn:
            idx = self.__dict__["_bm25_index"] = Bm25Index(self.conn)
        return idx

    # reflection
    def live_agent_exists(self, agent: str) -> bool:
        return self.conn.execute("SELECT 1 FROM memories WHERE agent = ? AND valid_until IS NULL LIMIT 1",
                                 (agent,)).fetchone() is not None

    def importance_since_reflection(self, agent: str, now: float | None = None) -> tuple[int | None, float, int]:
        """(created_at of the agent's last reflection or None, importance summed over its live
        non-reflection memories created after it, how many); only what exists at `now` if given
        (a simulation's clock)."""
        since = self.conn.execute("SELECT max(created_at) FROM memories WHERE kind='reflection' AND agent=?1 "
                                  "AND (?2 IS NULL OR created_at <= ?2)", (agent, now)).fetchone()[0]
        total, n = self.conn.execute(
            "SELECT coalesce(sum(importance), 0), count(*) FROM memories WHERE valid_until IS NULL AND agent=?1 "
            "AND kind != 'reflection' AND (?2 IS NULL OR created_at > ?2) AND (?3 IS NULL OR created_at <= ?3)",
            (agent, since, now)).fetchone()
        return since, float(total), int(n)

    def recent_ids(self, agent: str, n: int) -> list[str]:
        """The agent's n latest live memories (by event time, then store order), newest first."""
        return [str(r[0]) for r in self.conn.execute(
            "SELECT id FROM memories WHERE valid_until IS NULL AND agent = ? "
            "ORDER BY event_time DESC, rowid DESC LIMIT ?", (agent, int(n)))]

    # retrieval
    def fts_hits(self, query: str) -> np.ndarray:
        """(rowid, bm25) of every memory matching any word of `query` (as `fts_search` matches),
        shape (n, 2), unordered: rowids straight from the FTS5 table, no join and no ORDER BY (a
        common word can match a quarter of a large store; the hybrid preset sorts with numpy)."""
        words = re.findall(r"\w+", query, flags=re.UNICODE)
        if not words:
            return np.zeros((0, 2))
        fast = self._bm25.hits(words)   # the same values from the index's posting lists (bm25.py)
        if fast is not None:
            return fast
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        cur = self.conn.execute("SELECT rowid, bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH ?",
                                (match,))
        return np.fromiter(itertools.chain.from_iterable(cur), np.float64).reshape(-1, 2)  # rowids < 2^53: exact

    def row_meta_columns(self) -> list[list]:
        """What retrieval/rowmeta.py reads, one list per column over every row: rowid, tags
        (JSON text, None when empty), GA type (text), node count, idle (GA key says so), ADA
        cycle (numbers, None when absent)."""
        return [json.loads(x) for x in self.conn.execute(_ROW_META).fetchone()]

    # change watcher
    def max_rowid(self) -> int:
        return self.conn.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()[0]

    def memories_after(self, rowid: int) -> list[tuple[int, str]]:
        """(rowid, id) of the memories added after `rowid`, in store order."""
        return [(r, str(i)) for r, i in self.conn.execute(
            "SELECT rowid, id FROM memories WHERE rowid > ? ORDER BY rowid", (rowid,))]

    # the retired list
    def retired_rows(self, limit: int | None = None) -> list[tuple]:
        """(id, content, kind, agent, valid_until) of retired memories, latest first; texts as
        bytes or str (decode_text reads both); valid_until as UTC seconds, None if unreadable.
        An agent may have written it as ISO text or milliseconds: read through read_time and
        sorted here (SQL would order text after every number); unreadable times sort last."""
        rows = self.conn.execute(
            "SELECT CAST(id AS BLOB), CAST(content AS BLOB), CAST(kind AS BLOB), CAST(agent AS BLOB), valid_until, "
            "rowid FROM memories WHERE valid_until IS NOT NULL").fetchall()
        rows = [(rid, content, kind, agent, read_time(until)[0], rowid) for rid, content, kind, agent, until, rowid in rows]
        rows.sort(key=lambda r: (r[4] is not None, r[4] or 0, r[5]), reverse=True)
        return [r[:5] for r in (rows[:limit] if limit else rows)]

    def last_retirements(self) -> dict[str, tuple]:
        """memory id -> (action, at, actor, note) of its latest audit entry that set valid_until."""
        return {mid: (action, at, actor, note) for mid, _, action, at, actor, note in self.conn.execute(
            "SELECT memory_id, max(id), action, at, actor, note FROM memviz_audit "
            "WHERE json_valid(after) AND json_type(after, '$.valid_until') IN ('integer', 'real') GROUP BY memory_id")}

    # layout cache
    def layout_row(self, method: str, model: str | None, params: str):
        """(key, created_at, ids JSON, coords bytes) of the newest cached layout, or None."""
        import apsw
        try:
            return self.conn.execute(
                "SELECT key, created_at, ids, coords FROM memviz_layouts WHERE method=? AND model IS ? AND params=? "
                "ORDER BY created_at DESC LIMIT 1", (method, model, params)).fetchone()
        except apsw.SQLError:
            return None  # a store without memviz's tables (opened read-only): nothing cached

    def put_layout(self, key, method, model, params, created_at, ids_json, coords: bytes) -> None:
        with self.transaction() as c:
            c.execute("DELETE FROM memviz_layouts WHERE method=? AND model IS ? AND params=?", (method, model, params))
            c.execute("INSERT INTO memviz_layouts(key, method, model, params, created_at, ids, coords) "
                      "VALUES (?,?,?,?,?,?,?)", (key, method, model, params, created_at, ids_json, coords))

    def forget_layouts(self, method: str | None = None) -> None:
        with self.transaction() as c:
            if method is None:
                c.execute("DELETE FROM memviz_layouts")
            else:
                c.execute("DELETE FROM memviz_layouts WHERE method=?", (method,))

    # the detail panel
    def missing_entities(self, entity_ids) -> list[str]:
        """Those of `entity_ids` that name no entity (a memory's broken links), in their order."""
        return [str(e) for e in entity_ids
                if self.conn.execute("SELECT 1 FROM entities WHERE id = ?", (str(e),)).fetchone() is None]

    # context (texts for the prompt and diffs; the store as of a moment)
    def texts_and_tags(self) -> list[tuple[int, str, str | None]]:
        """(rowid, content, tags as stored JSON text) of every memory; invalid UTF-8 in the
        content is shown with replacement characters."""
        return [(rowid, decode_text(raw)[0], tags) for rowid, raw, tags in self.conn.execute(
            "SELECT rowid, CAST(content AS BLOB), tags FROM memories")]

    def audit_entries(self, actions=None, *, with_before: bool = False) -> list[tuple]:
        """(id, at, action, memory_id, before, after) of the audit log in id order, `before` and
        `after` as stored JSON text; only `actions` if given, only entries with a `before` if asked."""
        where = [f"action IN ({','.join('?' * len(actions))})"] if actions else []
        where += ["before IS NOT NULL"] if with_before else []
        return self.conn.execute("SELECT id, at, action, memory_id, before, after FROM memviz_audit"
                                 + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id",
                                 tuple(actions or ())).fetchall()

    # reflection
    def live_texts_with_words(self, agent: str, words) -> list[tuple[str, str]]:
        """(id, content) of the agent's live memories holding `words` in that order (LIKE with '%'
        between them, case-blind for ASCII): a narrowing the caller's own comparison decides on."""
        pattern = "%".join(re.sub(r"([%_\\])", r"\\\1", w) for w in words)
        return self.conn.execute(
            "SELECT id, content FROM memories WHERE valid_until IS NULL AND agent = ? AND content LIKE ? ESCAPE '\\'",
            (agent, pattern)).fetchall()

    # consolidation
    def decay_references(self) -> dict[str, float]:
        """memory id -> reference time of its last decay still in force: the audit log's latest
        `decay`/`undo decay`/`redo decay` entry (`after.decayed_to`), else the producer's own
        `attributes.decayed_as_of`. SQLite takes the bare columns from the row holding max(id)."""
        out = {}
        for m, t in self.conn.execute(
                "SELECT id, json_extract(attributes, '$.decayed_as_of') FROM memories "
                "WHERE attributes LIKE '%decayed_as_of%' AND json_valid(attributes)"):
            if isinstance(t, (int, float)):
                out[m] = float(t)
        rows = self.conn.execute(
            "SELECT memory_id, CASE WHEN json_valid(after) THEN json_extract(after, '$.decayed_to') END, max(id) "
            "FROM memviz_audit WHERE action IN ('decay', 'undo decay', 'redo decay') GROUP BY memory_id")
        out.update((m, float(t)) for m, t, _ in rows if t is not None)
        return out

    def rewrite_rows(self, ids, fields, decide, *, actor: str = "memviz") -> list[RowWrite]:
        """Read, decide and write in ONE transaction: `decide(current)` gets id -> {field: value
        as stored} for those of `ids` still in the store and returns the RowWrites to make; each
        is written with its audit entry. Returns them."""
        fields = pick_fields(fields)
        ids = list(dict.fromkeys(ids))
        with self.transaction() as c:
            current = {}
            for k in range(0, len(ids), 500):
                chunk = ids[k:k + 500]
                for row in c.execute(f"SELECT id, {', '.join(fields)} FROM memories WHERE id IN "
                                     f"({','.join('?' * len(chunk))})", chunk):
                    current[row[0]] = dict(zip(fields, row[1:]))
            writes = decide(current)
            for cols, run in itertools.groupby(writes, key=lambda w: tuple(w.set)):  # one statement per run
                cols = pick_fields(cols)
                if cols:
                    c.executemany(f"UPDATE memories SET {', '.join(f'{k} = ?' for k in cols)} WHERE id = ?",
                                  [(*(w.set[k] for k in cols), w.id) for w in run])
            c.executemany("INSERT INTO memviz_audit(at, action, memory_id, before, after, actor, note) "
                          "VALUES (?,?,?,?,?,?,?)", [(time.time(), w.action, w.id, audit_dump(w.before),
                                                      audit_dump(w.after), actor, w.note) for w in writes])
        return writes

    # stats
    def schema_version(self) -> int | None:
        """The migration memviz last applied to this store (None: not a store memviz made)."""
        return self.report.version if self.report else None

    # memviz check
    def malformed_json(self, column: str) -> list[str]:
        """Ids of the memories whose JSON `column` holds no JSON list (object for `attributes`)."""
        col = json_column(column)
        want = "object" if col == "attributes" else "array"
        return [decode_text(mid)[0] for mid, text in self.conn.execute(
            f"SELECT CAST(id AS BLOB), CAST({col} AS BLOB) FROM memories WHERE CASE WHEN typeof({col}) != 'text' "
            f"OR NOT json_valid({col}) THEN 1 ELSE json_type({col}) != '{want}' END")
            if not decode_json(None if text is None else decode_text(text)[0], col)[1]]

    def entity_links(self) -> list[tuple[str, str]]:
        """(memory id, entity id) of every entity id a memory names, whether the entity exists or not."""
        out = []
        for mid, text in self.conn.execute(
                "SELECT CAST(id AS BLOB), CAST(entity_ids AS BLOB) FROM memories WHERE entity_ids NOT IN ('[]', '')"):
            ids, _ = decode_json(None if text is None else decode_text(text)[0], "entity_ids")
            out += [(decode_text(mid)[0], str(e)) for e in ids]
        return out
