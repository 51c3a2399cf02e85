"""The PostgreSQL side of the interface methods in ../sqlite_queries.py (same names, same answers)."""
from __future__ import annotations

import re

import numpy as np


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
