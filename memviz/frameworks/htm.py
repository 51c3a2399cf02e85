"""HTM (seed 004: a two-tier memory for robots) on PostgreSQL, opened in place.

HTM's long-term memory is the `nodes` table: `key` (unique), `value` (the text), `type` (fact,
context, code, preference, decision, question), `category`, `importance` (default 1.0, which
the working memory's eviction score divides by recency), `token_count`, `robot_id`, `embedding`
(pgvector; padded to the column's width, `embedding_dimension` giving the real one),
`created_at`/`updated_at`/`last_accessed` and `in_working_memory`, the flag HTM sets when a node
is in a robot's working memory and clears when it is evicted (never deleted). Beside it: `tags`
(node_id, tag), `robots` (id, name) and `operations_log` (add, retrieve, remove, evict, recall).

Shown: robots (by name) as agents, `type` as kind, the key as the memory's id, the working-
memory flag in attributes and as the tag "working-memory" (so the table and the map filter it),
the operations log as history. Written back: importance and tags, as HTM's own SQL would write
them (an UPDATE of the node, rows of `tags`), each logged in `operations_log`. HTM's long-term
memory is append-only and its `forget` deletes, so text corrections and retiring are refused.
"""
from __future__ import annotations

import json
import os

from ..store import ConflictError, ReadOnlyError
from ..store.judged import AgentQuery
from ..store.times import iso, to_epoch
from ..tasks import Task
from .pgvectors import PgSourceConnection, fetch_ahead, vectors_as_bytes
from .source import Source

WORKING_MEMORY_TAG = "working-memory"
#: HTM's default embedder (Ollama) and its dimension; MEMVIZ_HTM_EMBEDDER names another
DEFAULT_MODEL, DEFAULT_DIM = "nomic-embed-text", 768
ENV_MODEL = "MEMVIZ_HTM_EMBEDDER"
_NODE_COLUMNS = {"key", "value", "robot_id", "importance", "in_working_memory", "embedding", "created_at"}


def model_name(dim: int) -> str:
    if os.environ.get(ENV_MODEL):
        return os.environ[ENV_MODEL].strip()
    return DEFAULT_MODEL if dim == DEFAULT_DIM else f"htm-embedder-{dim}d"


class HtmSource(Source):
    system, title = "htm", "HTM"
    edits = frozenset({"importance", "tags"})
    corrects_in_place = True

    def __init__(self, target: str, label: str, tables: dict[str, dict[str, str]]):
        super().__init__(target, label)
        self.cols = set(tables["nodes"])
        self.has_tags = {"node_id", "tag"} <= set(tables.get("tags", {}))
        self.has_robots = {"id", "name"} <= set(tables.get("robots", {}))
        self.has_log = {"operation", "node_id", "robot_id"} <= set(tables.get("operations_log", {}))
        self._db = PgSourceConnection(target)
        self._versions: dict[str, int] | None = None  # key -> xmin of the node's row version last read
        self._tags_token = None  # _tags_now() when last read

    @classmethod
    def recognise(cls, probe) -> HtmSource | None:
        if not probe.is_dsn:
            return None
        tables = probe.pg_tables()
        if not _NODE_COLUMNS <= set(tables.get("nodes", {})):
            return None
        return cls(probe.target, probe.label, tables)

    def describe(self) -> str:
        conn = self._db.get()
        n, robots, wm = conn.execute("SELECT count(*), count(DISTINCT robot_id), count(*) FILTER (WHERE in_working_memory) "
                                     "FROM nodes").fetchone()
        return (f"HTM long-term memory on {self.label}: {n:,} nodes of {robots} robot{'s' if robots != 1 else ''}, "
                f"{wm:,} in working memory (tag \"{WORKING_MEMORY_TAG}\")")

    # ---------------------------------------------------------------- reading
    def token(self):
        conn = self._db.get()
        # the sum of the row versions' transaction ids moves on every insert and update (see mem0.py)
        return [conn.execute("SELECT count(*), sum(xmin::text::bigint) FROM nodes").fetchone(), self._tags_now(conn)]

    def _tags_now(self, conn):
        """The tags' and robots' versions: a change there is read in full (it touches many nodes)."""
        return [conn.execute(f"SELECT count(*), sum(xmin::text::bigint) FROM {t}").fetchone()
                for t, has in (("tags", self.has_tags), ("robots", self.has_robots)) if has]

    def records(self, task: Task | None = None):
        conn = self._db.get()
        self._tags_token = self._tags_now(conn)
        versions = {}
        for rec, xmin in self._read(conn, "", (), task):
            versions[rec["id"]] = xmin
            yield rec
        self._versions = versions

    def changed_since(self, token, known, task: Task | None = None):
        """The nodes whose row version (xmin) differs from the one last read, and every key; None
        (read everything) when tags or robots changed."""
        conn = self._db.get()
        if self._versions is None or _plain_rows(self._tags_now(conn)) != _plain_rows(self._tags_token):
            return None
        now = dict(conn.execute("SELECT key, xmin::text::bigint FROM nodes").fetchall())
        moved = [k for k, x in now.items() if self._versions.get(k) != x]
        out = [rec for rec, _x in self._read(conn, " WHERE key = ANY(%s)", (moved,), None)] if moved else []
        self._versions = now
        return out, list(now)

    def in_step(self, token, model) -> None:
        """`model` is not needed: HTM's is named from the vector size (model_name)."""
        with self._db.snapshot() as conn:  # one snapshot for the versions and the check against the token
            rows = conn.execute("SELECT key, xmin::text::bigint FROM nodes").fetchall()
            side = self._tags_now(conn)
        n, total = token[0]
        if len(rows) == int(n) and (sum(x for _k, x in rows) if rows else None) == (None if total is None else int(total)) \
                and _plain_rows(side) == _plain_rows(token[1]):
            self._versions, self._tags_token = dict(rows), side

    def _read(self, conn, where: str, params, task: Task | None):
        """(record, xmin) of the nodes."""
        robots = dict(conn.execute("SELECT id::text, name FROM robots WHERE name IS NOT NULL")) if self.has_robots else {}
        tags: dict[int, list[str]] = {}
        if self.has_tags:
            for nid, tag in conn.execute("SELECT node_id, tag FROM tags ORDER BY tag"):
                tags.setdefault(nid, []).append(tag)
        opt = [c for c in ("id", "type", "category", "token_count", "embedding_dimension") if c in self.cols]
        times = [c for c in ("updated_at", "last_accessed") if c in self.cols]
        total = conn.execute("SELECT count(*) FROM nodes" + where, params).fetchone()[0]
        # times as epoch seconds and the padding cut off on the server: no datetime objects, a fifth of the bytes
        emb, cut = "embedding", False
        if "embedding_dimension" in self.cols and conn.execute(
                "SELECT to_regprocedure('subvector(vector,integer,integer)') IS NOT NULL").fetchone()[0]:
            # subvector stops at the vector's end: no vector_dims, which would read the vector a second time
            emb, cut = "CASE WHEN embedding_dimension >= 1 THEN subvector(embedding, 1, embedding_dimension) ELSE embedding END", True
        # date_part gives the float8 extract(...)::float8 gives, without a numeric per row
        sql = ("SELECT key, value, robot_id::text, importance::float8, in_working_memory, "
               f"date_part('epoch', created_at), {emb}"
               + "".join(f", {c}" for c in opt) + "".join(f", date_part('epoch', {c})" for c in times)
               + ", xmin::text::bigint FROM nodes" + where)
        done = 0
        stamps: dict = {}  # updated_at -> its text: rows written in one transaction share it
        # the vectors cut on the server need no cut here (a batch of one size converts in one piece)
        at_dim = 7 + opt.index("embedding_dimension") if "embedding_dimension" in opt and not cut else None
        for rows in fetch_ahead(conn, sql, params):
            if task:
                task.check()
                task.progress(done / max(total, 1), f"{done:,} of {total:,} HTM nodes")
            vectors = vectors_as_bytes([r[6] for r in rows], None if at_dim is None else [r[at_dim] or None for r in rows])
            for row, vec in zip(rows, vectors):
                key, value, robot, importance, in_wm, created, _raw = row[:7]
                extra = dict(zip(opt, row[7:7 + len(opt)]))
                when = dict(zip(times, row[7 + len(opt):-1]))
                node_tags = list(tags.get(extra.get("id"), []))
                if in_wm:
                    node_tags.append(WORKING_MEMORY_TAG)
                own = {"key": key, "robot_id": robot, "in_working_memory": bool(in_wm),
                       **{k: v for k, v in extra.items() if v is not None}}  # as updated_at: what is None is left out
                updated = when.get("updated_at")
                if updated is not None:
                    own["updated_at"] = stamps.get(updated) or stamps.setdefault(updated, iso(updated))
                created_s = None if created is None else int(created)
                yield {
                    "id": str(key), "agent": robots.get(robot, robot or ""), "kind": extra.get("type") or "memory",
                    "content": value if isinstance(value, str) else str(value),
                    "importance": importance, "created_at": created_s, "event_time": created_s,
                    "last_accessed": None if when.get("last_accessed") is None else int(when["last_accessed"]),
                    "embedding": vec, "embedding_model": model_name(len(vec) // 4) if vec else None,
                    "tags": node_tags, "attributes": {"htm": own},
                }, row[-1]
            done += len(rows)

    def history(self):
        if not self.has_log:
            return
        conn = self._db.get()
        for at, op, key, robot, details in conn.execute(
                "SELECT l.timestamp, l.operation, n.key, l.robot_id, l.details::text FROM operations_log l "
                "JOIN nodes n ON n.id = l.node_id ORDER BY l.id"):
            d = json.loads(details) if details else None
            yield {"at": _epoch(at) or 0, "action": str(op), "memory_id": str(key),
                   "before": d.get("before") if isinstance(d, dict) else None,
                   "after": d.get("after") if isinstance(d, dict) else None,
                   "note": f"HTM operations log: {op} by robot {robot}"}

    def agent_queries(self, limit: int = 100) -> list[AgentQuery]:
        """HTM logs every `recall` in operations_log (node_id NULL; details: the topic, the
        timeframe as Ruby prints a Range of Times, the count found): the topic is the query, the
        timeframe bounds created_at (memviz's event time of an HTM node) when it can be read."""
        if not self.has_log:
            return []
        conn = self._db.get()
        robots = dict(conn.execute("SELECT id::text, name FROM robots WHERE name IS NOT NULL")) if self.has_robots else {}
        out = []
        for at, robot, details in conn.execute(
                "SELECT date_part('epoch', timestamp), robot_id::text, details::text FROM operations_log "
                "WHERE operation = 'recall' AND jsonb_typeof(details::jsonb) = 'object' "
                "AND btrim(coalesce(details::jsonb->>'topic', '')) <> '' ORDER BY id DESC LIMIT %s", (int(limit),)):
            d = json.loads(details) if details else {}
            topic = d.get("topic") if isinstance(d, dict) else None
            if not isinstance(topic, str) or not topic.strip() or at is None:
                continue
            out.append(AgentQuery(float(at), robots.get(robot, robot or ""), topic, _timeframe(d.get("timeframe"))))
        return out

    # ---------------------------------------------------------------- writing
    def write(self, rows: dict[str, dict], changes: dict[str, dict]) -> dict[str, dict]:
        self.refuse({k for ch in changes.values() for k in ch})
        for rid, ch in changes.items():
            if "tags" in ch and (WORKING_MEMORY_TAG in ch["tags"]) != (WORKING_MEMORY_TAG in rows[rid]["tags"]):
                raise ReadOnlyError(f"the tag \"{WORKING_MEMORY_TAG}\" shows HTM's in_working_memory flag, which the "
                                    "robot's working memory sets (recall) and clears (eviction); memviz does not change it")
        conn = self._db.get()
        landed = {}
        with conn.transaction():
            for rid, ch in changes.items():
                node = conn.execute("SELECT id, importance::float8, robot_id::text FROM nodes WHERE key = %s FOR UPDATE",
                                    (rid,)).fetchone()
                if node is None:
                    raise ConflictError(f"HTM removed node {rid} while it was being edited; nothing was written.")
                nid, importance, robot = node
                shown = rows[rid]
                done = {}
                if "importance" in ch:
                    if importance != shown.get("importance"):
                        raise ConflictError(f"HTM changed the importance of {rid} while it was being edited; nothing was written.",
                                            current={"importance": importance}, expected={"importance": shown.get("importance")})
                    stamp = ", updated_at = CURRENT_TIMESTAMP" if "updated_at" in self.cols else ""
                    conn.execute(f"UPDATE nodes SET importance = %s{stamp} WHERE id = %s", (float(ch["importance"]), nid))
                    self._log(conn, nid, robot, {"importance": importance}, {"importance": float(ch["importance"])})
                    done["importance"] = float(ch["importance"])
                if "tags" in ch:
                    done["tags"] = self._write_tags(conn, nid, robot, shown, ch["tags"])
                landed[rid] = done
        return landed

    def _write_tags(self, conn, nid: int, robot: str, shown: dict, tags: list[str]) -> list[str]:
        if not self.has_tags:
            raise ReadOnlyError(f"{self.label} has no HTM tags table; memviz cannot write tags to it")
        want = [t for t in tags if t != WORKING_MEMORY_TAG]
        have = [r[0] for r in conn.execute("SELECT tag FROM tags WHERE node_id = %s ORDER BY tag", (nid,))]
        if sorted(have) != sorted(t for t in shown["tags"] if t != WORKING_MEMORY_TAG):
            raise ConflictError("HTM changed this node's tags while they were being edited; nothing was written.",
                                current={"tags": have}, expected={"tags": shown["tags"]})
        gone = [t for t in have if t not in want]
        if gone:
            conn.execute("DELETE FROM tags WHERE node_id = %s AND tag = ANY(%s)", (nid, gone))
        for t in want:
            if t not in have:
                conn.execute("INSERT INTO tags (node_id, tag) VALUES (%s, %s)", (nid, t))
        self._log(conn, nid, robot, {"tags": have}, {"tags": want})
        return tags

    def _log(self, conn, nid: int, robot: str, before: dict, after: dict) -> None:
        """HTM logs its operations for audit; memviz's edits go there too, named as memviz's."""
        if self.has_log:
            from psycopg.types.json import Jsonb
            conn.execute("INSERT INTO operations_log (operation, node_id, robot_id, details) VALUES ('update', %s, %s, %s)",
                         (nid, robot, Jsonb({"by": "memviz", "before": before, "after": after})))

    def close(self) -> None:
        self._db.close()


def _plain_rows(rows):
    """[(count, sum)] as plain ints, to compare a fresh read with a token that went through JSON."""
    return [[None if v is None else int(v) for v in r] for r in rows or []]


def _timeframe(text) -> tuple[float | None, float | None] | None:
    """A Ruby Range of Times as HTM logs it ("2025-10-20 12:00:00 -0700..2025-10-27 12:00:00 -0700",
    or "... UTC"), as (start, end) epoch seconds; None when it cannot be read."""
    if not isinstance(text, str) or ".." not in text:
        return None
    ends = []
    for part in text.split("...", 1) if "..." in text else text.split("..", 1):
        part = part.strip()
        part = part[:-4] + " +00:00" if part.endswith(" UTC") else part
        try:
            ends.append(float(to_epoch(part)))
        except ValueError:
            return None
    return ends[0], ends[1]


def _epoch(value) -> int | None:
    try:
        return to_epoch(value)
    except ValueError:
        return None


SOURCES = [HtmSource]
