"""Letta: a Letta server's PostgreSQL database, opened in place.

What memviz reads (Letta's ORM, letta/orm/*.py, letta 0.8 - 0.16):
- archival memory: `archival_passages` (id, text, embedding vector(4096), embedding_config,
  tags, metadata_, is_deleted, created_at, updated_at, archive_id), one memory of kind
  "archival" each. Letta pads every vector with zeros to 4096 (MAX_EMBEDDING_DIM); memviz reads
  only the first `embedding_config.embedding_dim` values (pgvector's subvector), the model is
  `embedding_config.embedding_model`. The agent is the archive's: `archives_agents` → `agents.name`
  (its owner first when several agents share an archive; all of them in attributes.letta.agents).
  A soft-deleted passage (`is_deleted`) is retired (valid_until = its updated_at).
- core memory: `block` rows attached through `blocks_agents`, one memory of kind "core" per
  (agent, block) (id "<block id>/<agent id>"), content = the block's value, its label as a tag,
  limit/description/read_only/version in attributes.letta. Blocks carry no vector in Letta.
- history: `block_history` (Letta's checkpoints of a block) as the blocks' audit rows.

What memviz writes, as Letta's managers do (passage_manager / block_manager):
- a passage's text, with a new vector of the passage's own embedding model, zero-padded to 4096;
  without such a vector the correction is refused (Letta would keep the old vector with the new
  text and its archival search would find the old meaning);
- a passage's tags: the `tags` JSON column and the `passage_tags` rows together (Letta keeps both);
- retiring/restoring a passage: `is_deleted`;
- a core block's value (within its character limit; `version` + 1, as its optimistic lock does).
Every write sets `updated_at`, in one transaction, and checks the row still holds what memviz
showed (else ConflictError). A block's label is its tag and Letta has no soft delete for
attached blocks: those edits are refused with the reason.

Letta's own `letta` package (the server) does not fit memviz's environment (it pins older openai,
protobuf and websockets), so the tests build the tables from its documented ORM schema.
"""
from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import numpy as np

from ..store import ConflictError, ReadOnlyError, StoreError, ValidationError
from ..tasks import Task
from .pgvectors import fetch_ahead, vectors_as_bytes
from .source import Source

#: letta.constants.MAX_EMBEDDING_DIM: every archival vector is padded with zeros to this size
MAX_EMBEDDING_DIM = 4096
ARCHIVAL, CORE = "archival", "core"
_PASSAGE_COLS = {"id", "text", "embedding", "embedding_config", "is_deleted", "archive_id", "tags"}
_BATCH = 5000

_AGENTS_OF_ARCHIVE = """
    SELECT aa.archive_id, array_agg(a.name ORDER BY aa.is_owner DESC NULLS LAST, a.name) AS names
    FROM archives_agents aa JOIN agents a ON a.id = aa.agent_id GROUP BY aa.archive_id"""

#: times as epoch seconds (date_part's float8: psycopg's tz-aware datetimes cost several times more to load);
#: each passage's archive and agents come from _ARCHIVES, read once in the same snapshot (a join
#: sent every row its archive's name and agents, an array psycopg parsed per row)
_PASSAGES = """
    SELECT p.id, p.text, p.tags::text, p.metadata_::text, date_part('epoch', p.created_at),
           date_part('epoch', p.updated_at), p.is_deleted, p.archive_id, p.embedding_config::text,
           CASE WHEN p.embedding IS NULL THEN NULL
                WHEN d.dim >= 1 THEN vector_send(subvector(p.embedding, 1, d.dim))
                ELSE vector_send(p.embedding) END
    FROM archival_passages p
    -- embedding_config is json (text): parsed once per row, not at each use (OFFSET 0 keeps it one)
    CROSS JOIN LATERAL (SELECT CASE WHEN c ~ '^[0-9]+$' THEN c::int END AS dim
                        FROM (SELECT p.embedding_config->>'embedding_dim' AS c OFFSET 0) c) d"""

#: archive id -> (its name, its agents' names): a passage's archive as the two LEFT JOINs gave it
_ARCHIVES = f"""
    SELECT coalesce(ar.id, ag.archive_id), ar.name, ag.names
    FROM archives ar FULL JOIN ({_AGENTS_OF_ARCHIVE}) ag ON ag.archive_id = ar.id"""

_BLOCKS = """
    SELECT b.id, ba.agent_id, a.name, b.label, b.value, b.description, b."limit", b.read_only, b.version,
           date_part('epoch', b.created_at), date_part('epoch', b.updated_at), b.is_deleted
    FROM block b JOIN blocks_agents ba ON ba.block_id = b.id JOIN agents a ON a.id = ba.agent_id"""

_TOKEN = """
    SELECT (SELECT json_build_array(count(*), max(updated_at), count(*) FILTER (WHERE is_deleted)) FROM archival_passages),
           (SELECT json_build_array(count(*), max(updated_at), sum(version)) FROM block),
           (SELECT count(*) FROM blocks_agents), (SELECT count(*) FROM archives_agents),
           (SELECT max(updated_at) FROM agents)"""


def _json(text: str | None):
    return None if text is None else json.loads(text)


def _json_once(cache: dict, text: str | None):
    """_json(text), parsed once per distinct text: the value is shared, so only read it."""
    if text not in cache:
        cache[text] = _json(text)
    return cache[text]


def _epoch(seconds: float | None) -> int | None:
    return None if seconds is None else int(seconds)


class LettaSource(Source):
    system = "letta"
    title = "Letta"
    edits = frozenset({"content", "tags", "valid_until"})
    corrects_in_place = True  # Letta updates a passage's or a block's text where it is

    def __init__(self, target: str, label: str | None = None, tables: dict | None = None):
        super().__init__(target, label)
        self._conn = None
        self.has_history = "block_history" in (tables or {})

    # ---------------------------------------------------------------- recognising
    @classmethod
    def recognise(cls, probe) -> LettaSource | None:
        if not probe.is_dsn:
            return None
        tables = probe.pg_tables()
        passages = tables.get("archival_passages", {})
        if not (_PASSAGE_COLS <= passages.keys() and {"block", "blocks_agents", "agents", "archives_agents"} <= tables.keys()):
            return None
        if {"label", "value", "limit"} - tables["block"].keys():
            return None
        if passages.get("embedding") != "vector":
            raise StoreError(f"{probe.label} looks like a Letta database, but archival_passages.embedding is "
                             f"{passages.get('embedding')!r}, not a pgvector vector; memviz reads Letta on PostgreSQL with pgvector.")
        return cls(probe.target, probe.label, tables)

    def describe(self) -> str:
        try:
            n_p, n_b = self._query("SELECT (SELECT count(*) FROM archival_passages), (SELECT count(*) FROM blocks_agents)")[0]
        except StoreError:
            return super().describe()
        return f"Letta database at {self.label}: {n_p:,} archival passages, {n_b:,} core memory blocks"

    # ---------------------------------------------------------------- connection
    def _connection(self):
        if self._conn is None or self._conn.closed:
            from ..store.postgres.connect import connect
            self._conn = connect(self.target, need_vector=True)
        return self._conn

    def _query(self, sql: str, params=(), *, binary: bool = False) -> list:
        with self._connection().cursor(binary=binary) as cur:
            cur.execute(sql, params)
            return cur.fetchall()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # ---------------------------------------------------------------- reading
    def token(self):
        return [json.dumps(v, default=str) for v in self._query(_TOKEN)[0]]

    def records(self, task: Task | None = None):
        yield from self._passages(task)
        yield from self._blocks()

    def changed_since(self, token, known, task: Task | None = None):
        """Letta stamps every write of a passage with updated_at: only the passages new to the
        mirror or updated since the last look are read with their vectors (the blocks, few, are
        read whole; the mirror's fingerprints drop what did not change). A renamed agent or a moved
        archive: None, everything is read again."""
        now = self.token()
        try:
            since = json.loads(token[0])[1]
            if token[3:] != now[3:]:
                return None
        except (TypeError, ValueError, IndexError, KeyError):
            return None
        # a margin: a transaction stamps now() at its start and may commit after the last look
        rows = self._query("SELECT id, updated_at >= %s::timestamptz - interval '10 minutes' FROM archival_passages", (since,)) if since \
            else self._query("SELECT id, true FROM archival_passages")
        want = [pid for pid, moved in rows if moved or moved is None or pid not in known]
        records = list(self._passages(ids=want)) if want else []
        blocks = list(self._blocks())
        return records + blocks, {pid for pid, _ in rows} | {b["id"] for b in blocks}

    def _passages(self, task: Task | None = None, ids: list[str] | None = None):
        sql = _PASSAGES + (" WHERE p.id = ANY(%s)" if ids is not None else "")
        total = None
        if task is not None and ids is None:
            total = self._query("SELECT count(*) FROM archival_passages")[0][0]
        done = 0
        # the JSON columns come as text, each distinct text parsed once: a store's passages share an
        # embedding_config and a few tag lists (a parse per row was a third of the read)
        configs: dict = {}
        tag_lists: dict = {}
        metas: dict = {}
        batches = fetch_ahead(self._connection(), sql, (ids,) if ids is not None else (), size=_BATCH,
                              before=lambda conn: {a: (name, names) for a, name, names in conn.execute(_ARCHIVES)})
        archives = next(batches)
        for rows in batches:
            for r, vec in zip(rows, vectors_as_bytes([None if r[9] is None else bytes(r[9]) for r in rows])):
                yield self._passage(r, vec, archives.get(r[7], (None, None)), _json_once(configs, r[8]),
                                    _json_once(tag_lists, r[2]), _json_once(metas, r[3]))
            done += len(rows)
            if task is not None:
                task.check()
                if total:
                    task.progress(done / total, f"{done:,} of {total:,} archival passages")

    @staticmethod
    def _passage(r, vec: bytes | None, archive, cfg, tags, meta) -> dict:
        """A passage's record: `r` a row of _PASSAGES, `vec` its vector's float32 bytes, `archive`
        its archive's (name, agents) from _ARCHIVES, and its JSON columns parsed (`cfg`, `tags` and
        `meta` may be shared with other records: only read here)."""
        (pid, text, _tags, _meta, created, updated, deleted, archive_id, _cfg, _sent) = r
        archive, names = archive
        cfg = cfg if isinstance(cfg, dict) else {}
        model = cfg.get("embedding_model") if vec is not None else None
        names = list(names or [])
        attrs = {"table": "archival_passages", "archive_id": archive_id, "archive": archive, "agents": names,
                 "embedding_dim": cfg.get("embedding_dim"), "embedding_endpoint_type": cfg.get("embedding_endpoint_type")}
        if meta:
            attrs["metadata"] = meta
        created_at = _epoch(created)
        return {
            "id": pid, "agent": names[0] if names else (archive or ""), "kind": ARCHIVAL, "content": text or "",
            "created_at": created_at, "event_time": created_at,
            "valid_until": (_epoch(updated) or created_at) if deleted else None,
            "tags": [str(t) for t in tags] if isinstance(tags, list) else [],
            "embedding": vec if model else None, "embedding_model": model if model else None,
            "attributes": {"letta": {k: v for k, v in attrs.items() if v is not None}},
        }

    def _blocks(self, keys: list[tuple[str, str]] | None = None):
        sql = _BLOCKS
        params: tuple = ()
        if keys is not None:
            sql += " WHERE (b.id, ba.agent_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
            params = ([k[0] for k in keys], [k[1] for k in keys])
        for (bid, agent_id, agent, label, value, desc, limit, read_only, version, created, updated, deleted) in self._query(sql, params):
            attrs = {"table": "block", "block_id": bid, "agent_id": agent_id, "label": label, "limit": limit,
                     "description": desc, "read_only": read_only, "version": version}
            created_at = _epoch(created)
            yield {
                "id": f"{bid}/{agent_id}", "agent": agent or agent_id, "kind": CORE, "content": value or "",
                "created_at": created_at, "event_time": _epoch(updated) or created_at,
                "valid_until": (_epoch(updated) or created_at) if deleted else None,
                "tags": [label] if label else [], "embedding": None, "embedding_model": None,
                "attributes": {"letta": {k: v for k, v in attrs.items() if v is not None}},
            }

    def history(self):
        """Letta's block checkpoints (block_history) as audit rows of each agent's block."""
        if not self.has_history:
            return
        rows = self._query("""
            SELECT h.block_id, ba.agent_id, h.sequence_number, h.value, h.actor_type, h.actor_id, h.created_at
            FROM block_history h JOIN blocks_agents ba ON ba.block_id = h.block_id
            ORDER BY h.block_id, ba.agent_id, h.sequence_number""")
        for bid, agent_id, seq, value, actor_type, actor_id, created in rows:
            yield {"at": created.timestamp() if created else 0.0, "action": "update", "memory_id": f"{bid}/{agent_id}",
                   "before": None, "after": {"content": value},
                   "note": f"Letta block checkpoint {seq}" + (f" by {actor_type} {actor_id or ''}".rstrip() if actor_type else "")}

    # ---------------------------------------------------------------- writing
    def write(self, rows: dict[str, dict], changes: dict[str, dict]) -> dict[str, dict]:
        for rid, ch in changes.items():
            self._check(rid, rows[rid], ch)
        conn = self._connection()
        from ..store.postgres.connect import PgVector, register_vector
        register_vector(conn)
        with conn.transaction():
            for rid, ch in changes.items():
                row = rows[rid]
                if _table(row) == "block":
                    self._write_block(conn, row, ch)
                else:
                    self._write_passage(conn, row, ch, PgVector)
        return self._landed(rows, changes)

    def _check(self, rid: str, row: dict, ch: dict) -> None:
        """Refuse, before anything is written, what Letta cannot take."""
        if _table(row) == "block":
            bad = [f for f in ch if f in ("tags", "valid_until")]
            if bad:
                raise ReadOnlyError(f"{rid} is a Letta core memory block: its tag is its label, and Letta has no soft delete "
                                    "for a block an agent uses (detach it in Letta). Only its text can be corrected.")
            limit = _attrs(row).get("limit")
            if "content" in ch and isinstance(limit, int) and len(ch["content"]) > limit:
                raise ValidationError(f"the block {_attrs(row).get('label')!r} holds at most {limit:,} characters in Letta; "
                                      f"the corrected text has {len(ch['content']):,}")
            return
        if "content" in ch:
            model, dim = row.get("embedding_model"), _attrs(row).get("embedding_dim")
            vec = ch.get("embedding")
            if row.get("embedding") is None and model is None:
                return  # a passage stored without a vector: Letta searches it by text only
            n = None if vec is None else _as_floats(vec).size
            if vec is None or ch.get("embedding_model") != model or (dim and n != dim) or (n or 0) > MAX_EMBEDDING_DIM:
                endpoint = _attrs(row).get("embedding_endpoint_type") or "unknown"
                raise ReadOnlyError(
                    f"Letta searches passage {rid} by its {model} vector ({dim or '?'}-d, {endpoint} endpoint), and memviz "
                    "could not make that vector here, so the correction is not written (Letta would keep the old vector "
                    "with the new text). Let memviz embed with that model (MEMVIZ_EMBED_BASE_URL and "
                    "MEMVIZ_EMBED_API_KEY for an OpenAI-compatible endpoint), or correct it in Letta.")

    def _write_block(self, conn, row: dict, ch: dict) -> None:
        a = _attrs(row)
        if "content" in ch:
            cur = conn.execute('UPDATE block SET value = %s, version = version + 1, updated_at = now() '
                               'WHERE id = %s AND value = %s', (ch["content"], a["block_id"], row["content"]))
            if cur.rowcount != 1:
                raise ConflictError(f"The Letta block {a.get('label')!r} of {row['agent']} changed since it was shown.")

    def _write_passage(self, conn, row: dict, ch: dict, PgVector) -> None:
        pid = row["id"]
        sets, params = [], []
        if "content" in ch:
            sets.append("text = %s")
            params.append(ch["content"])
            if ch.get("embedding") is not None:
                vec = _as_floats(ch["embedding"])
                padded = np.zeros(MAX_EMBEDDING_DIM, dtype="<f4")
                padded[:vec.size] = vec
                sets.append("embedding = %s")
                params.append(PgVector(padded.tobytes()))
        if "valid_until" in ch:
            deleted = ch["valid_until"] is not None
            sets.append("is_deleted = %s")
            params.append(deleted)
        if "tags" in ch:
            tags = list(dict.fromkeys(str(t) for t in ch["tags"] or []))
            sets.append("tags = %s::json")
            params.append(json.dumps(tags))
        if not sets:
            return
        sets.append("updated_at = %s" if ch.get("valid_until") is not None else "updated_at = now()")
        if ch.get("valid_until") is not None:
            params.append(datetime.fromtimestamp(float(ch["valid_until"]), UTC))
        cur = conn.execute(f"UPDATE archival_passages SET {', '.join(sets)} WHERE id = %s AND text = %s "
                           "RETURNING archive_id, organization_id", (*params, pid, row["content"]))
        got = cur.fetchone()
        if got is None:
            raise ConflictError(f"The Letta passage {pid} changed or was deleted since it was shown.")
        if "tags" in ch:  # Letta's dual storage: the junction table follows the JSON column
            archive_id, org = got
            conn.execute("DELETE FROM passage_tags WHERE passage_id = %s", (pid,))
            if tags:
                with conn.cursor() as c:
                    c.executemany("INSERT INTO passage_tags (id, tag, passage_id, archive_id, organization_id) VALUES (%s, %s, %s, %s, %s)",
                                  [(f"passage-tag-{uuid.uuid4()}", t, pid, archive_id, org) for t in tags])

    def _landed(self, rows: dict[str, dict], changes: dict[str, dict]) -> dict[str, dict]:
        """The changed memories as Letta now holds them (re-read), as changes to what memviz shows."""
        passages = [rid for rid in changes if _table(rows[rid]) != "block"]
        blocks = [(_attrs(rows[rid])["block_id"], _attrs(rows[rid])["agent_id"]) for rid in changes if _table(rows[rid]) == "block"]
        now = {r["id"]: r for r in self._passages(ids=passages)} if passages else {}
        if blocks:
            now.update({r["id"]: r for r in self._blocks(blocks)})
        out = {}
        for rid, ch in changes.items():
            rec = now.get(rid)
            if rec is None:
                raise ConflictError(f"The Letta memory {rid} was deleted while it was being changed.")
            landed = {k: rec[k] for k in ("content", "tags", "valid_until", "attributes", "event_time")
                      if _differs(rows[rid].get(k), rec[k], k)}
            if "content" in ch and rec["embedding"] is not None:
                landed.update(embedding=rec["embedding"], embedding_model=rec["embedding_model"])
            out[rid] = landed
        return out


def _as_floats(vec) -> np.ndarray:
    """An embedding as memviz passes it (float32 bytes or an array) as float32 values."""
    if isinstance(vec, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(vec), dtype="<f4")
    return np.asarray(vec, dtype=np.float32)


def _attrs(row: dict) -> dict:
    attrs = row.get("attributes") or {}
    if isinstance(attrs, str):
        attrs = json.loads(attrs)
    return attrs.get("letta") or {}


def _table(row: dict) -> str:
    return _attrs(row).get("table") or ("block" if row.get("kind") == CORE else "archival_passages")


def _differs(shown, now, col) -> bool:
    if col in ("tags", "attributes") and isinstance(shown, str):
        shown = json.loads(shown)
    return shown != now


SOURCES = [LettaSource]
