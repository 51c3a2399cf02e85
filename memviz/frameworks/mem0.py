"""mem0 (mem0ai) on PostgreSQL + pgvector, opened in place.

mem0's pgvector store keeps one table per collection: `id uuid, vector vector(N), payload
jsonb`, the payload holding the text (`data`), its md5 `hash`, ISO `created_at`/`updated_at`,
the scope (`user_id`, `agent_id`, `run_id`), `actor_id`, `role` and any metadata. mem0 keeps
its history (ADD/UPDATE/DELETE events) elsewhere: in an SQLite file, `history_db_path` of its
config, by default `$MEM0_DIR/history.db` or `~/.mem0/history.db`. memviz reads that file
where mem0 would put it by default, or where MEMVIZ_MEM0_HISTORY names it.

mem0 does not record which embedding model made its vectors (that is in the client's config).
memviz names it from MEMVIZ_MEM0_EMBEDDER, else mem0's default (OpenAI text-embedding-3-small)
for 1536-d vectors; a correction needs a new vector of that model, so without one it is refused.

Corrections are written as mem0's `update` writes them: new `data`, its md5 `hash`,
`text_lemmatized` (mem0's fallback without spaCy: the text), `updated_at`, a new vector, and an
UPDATE row in the history file; the memory's id is dropped from the entities it was linked to
(mem0 relinks entities with spaCy, which memviz does not run). mem0 deletes memories physically,
so memviz does not retire them: only corrections are written.
"""
from __future__ import annotations

import hashlib
import json
import os
import uuid
from datetime import UTC, datetime

import apsw

from ..store import ConflictError, ReadOnlyError, StoreError
from ..store.times import to_epoch
from ..tasks import Task
from .pgvectors import PgSourceConnection, fetch_ahead, vector_param, vectors_as_bytes
from .source import Source

#: mem0's default embedder (OpenAI) and its default `embedding_model_dims`
DEFAULT_MODEL, DEFAULT_DIM = "text-embedding-3-small", 1536
ENV_MODEL = "MEMVIZ_MEM0_EMBEDDER"
ENV_HISTORY = "MEMVIZ_MEM0_HISTORY"
#: payload keys that become memviz columns or are mem0's bookkeeping; every other key is shown as metadata
_OWN_KEYS = {"data", "hash", "created_at", "updated_at", "user_id", "agent_id", "run_id", "actor_id", "role",
             "text_lemmatized"}
_SCOPE = ("agent_id", "user_id", "run_id")
_HISTORY_COLUMNS = {"id", "memory_id", "old_memory", "new_memory", "event", "created_at", "updated_at"}
_HISTORY_TABLE = """CREATE TABLE IF NOT EXISTS history (
    id TEXT PRIMARY KEY, memory_id TEXT, old_memory TEXT, new_memory TEXT, event TEXT,
    created_at DATETIME, updated_at DATETIME, is_deleted INTEGER, actor_id TEXT, role TEXT)"""


def history_path() -> str:
    """Where mem0 keeps its history by default (configs/base.py), or MEMVIZ_MEM0_HISTORY."""
    if os.environ.get(ENV_HISTORY):
        return os.path.abspath(os.path.expanduser(os.environ[ENV_HISTORY]))
    folder = os.environ.get("MEM0_DIR") or os.path.join(os.path.expanduser("~"), ".mem0")
    return os.path.join(folder, "history.db")


def model_name(dim: int | None) -> str:
    """The name memviz gives the collection's embedding model (mem0 does not store it)."""
    if os.environ.get(ENV_MODEL):
        return os.environ[ENV_MODEL].strip()
    if dim == DEFAULT_DIM:
        return DEFAULT_MODEL
    return f"mem0-embedder-{dim}d"


def _is_collection(cols: dict[str, str]) -> bool:
    return cols == {"id": "uuid", "vector": "vector", "payload": "jsonb"}


class Mem0Source(Source):
    system, title = "mem0", "mem0"
    edits = frozenset({"content"})
    corrects_in_place = True

    def __init__(self, target: str, label: str, collections: list[str], dims: dict[str, int | None]):
        super().__init__(target, label)
        self.collections = collections
        self.dims = dims
        self.history_file = history_path()
        self._db = PgSourceConnection(target)
        self._versions: dict[str, int] | None = None  # id -> xmin of the row version last read

    @classmethod
    def recognise(cls, probe) -> Mem0Source | None:
        if not probe.is_dsn:
            return None
        tables = probe.pg_tables()
        shaped = [t for t, cols in tables.items() if _is_collection(cols)]
        # mem0's entity store is a second collection named <collection>_entities
        shaped = [t for t in shaped if not (t.endswith("_entities") and t[:-len("_entities")] in shaped)]
        if not shaped:
            return None
        db = PgSourceConnection(probe.target)
        try:
            conn = db.get()
            collections, dims = [], {}
            for t in shaped:
                row = conn.execute(f'SELECT payload ? \'data\' AND payload ? \'hash\' FROM "{t}" LIMIT 1').fetchone()
                if row is not None and not row[0]:
                    continue  # the shape of mem0's table, but not its payload
                collections.append(t)
                dims[t] = _declared_dim(conn, t)
        except Exception as e:
            from ..store.postgres.connect import translate
            raise translate(e, probe.target, write=False) from None
        finally:
            db.close()
        if not collections:
            return None
        return cls(probe.target, probe.label, collections, dims)

    def describe(self) -> str:
        names = ", ".join(self.collections)
        hist = self.history_file if os.path.isfile(self.history_file) else f"none ({self.history_file} does not exist)"
        return (f"mem0 store on {self.label} (collection{'s' if len(self.collections) > 1 else ''} {names}; "
                f"vectors of {', '.join(sorted({self.model(c) for c in self.collections}))}; history: {hist})")

    def model(self, collection: str) -> str:
        return model_name(self.dims.get(collection))

    # ---------------------------------------------------------------- reading
    def token(self):
        conn = self._db.get()
        # every insert or update makes a row version with another xmin (its transaction's id): their sum moves,
        # also for a transaction that commits after a later one did; deletes change the count
        out = [conn.execute(f'SELECT count(*), sum(xmin::text::bigint) FROM "{c}"').fetchone() for c in self.collections]
        try:
            st = os.stat(self.history_file)
            out.append([st.st_size, st.st_mtime_ns])
        except OSError:
            out.append(None)
        return out

    def records(self, task: Task | None = None):
        conn = self._db.get()
        total = sum(conn.execute(f'SELECT count(*) FROM "{c}"').fetchone()[0] for c in self.collections)
        done, versions = 0, {}
        for coll in self.collections:
            for batch in self._read(conn, coll, ""):
                if task:
                    task.check()
                    task.progress(done / max(total, 1), f"{done:,} of {total:,} mem0 memories")
                for rec, xmin in batch:
                    versions[rec["id"]] = xmin
                    yield rec
                done += len(batch)
        self._versions = versions

    def changed_since(self, token, known, task: Task | None = None):
        """The memories whose row version (xmin) differs from the one last read, and every id."""
        if self._versions is None:
            return None
        conn = self._db.get()
        now = {}
        for coll in self.collections:
            now.update(conn.execute(f'SELECT id::text, xmin::text::bigint FROM "{coll}"').fetchall())
        moved = [i for i, x in now.items() if self._versions.get(i) != x]
        out = []
        for coll in self.collections:
            for batch in self._read(conn, coll, " WHERE id = ANY(%s::uuid[])", (moved,)) if moved else ():
                out.extend(rec for rec, _x in batch)
        self._versions = now
        return out, list(now)

    def in_step(self, token, model) -> None:
        """`model` is not needed: a collection's model is named from its vector size (model_name)."""
        with self._db.snapshot() as conn:  # one snapshot for the versions and the check against the token
            per = [conn.execute(f'SELECT id::text, xmin::text::bigint FROM "{c}"').fetchall() for c in self.collections]
        if [[len(v), sum(x for _i, x in v) if v else None] for v in per] == [
                [int(n), None if s is None else int(s)] for n, s in token[:len(self.collections)]]:
            self._versions = {i: x for v in per for i, x in v}

    def _read(self, conn, coll: str, where: str, params=()):
        """Batches of (record, xmin) of a collection."""
        model = self.model(coll)
        for rows in fetch_ahead(conn, f'SELECT id::text, vector, payload::text, xmin::text::bigint FROM "{coll}"{where}', params):
            vectors = vectors_as_bytes([r[1] for r in rows])
            yield [(self._record(coll, model, rid, vec, json.loads(payload) if payload else {}), xmin)
                   for (rid, _raw, payload, xmin), vec in zip(rows, vectors)]

    def _record(self, coll: str, model: str, rid: str, vec, p: dict) -> dict:
        if not isinstance(p, dict):
            p = {"data": str(p)}
        created = _time(p.get("created_at"))
        scope = {k: p[k] for k in _SCOPE if p.get(k)}
        agent = next((str(scope[k]) for k in _SCOPE if k in scope), "")
        meta = {k: v for k, v in p.items() if k not in _OWN_KEYS}
        tags = [str(t) for t in p.get("categories") or [] if isinstance(t, str)] if isinstance(p.get("categories"), list) else []
        own = {"collection": coll, **scope, "hash": p.get("hash"), "created_at": p.get("created_at"),
               "updated_at": p.get("updated_at")}
        for k in ("actor_id", "role"):
            if p.get(k) is not None:
                own[k] = p[k]
        if meta:
            own["metadata"] = meta
        data = p.get("data")
        return {
            "id": rid, "agent": agent,
            "kind": "procedure" if p.get("memory_type") == "procedural_memory" else "fact",
            "content": data if isinstance(data, str) else json.dumps(data),
            "created_at": created, "event_time": created,
            "embedding": vec, "embedding_model": model if vec is not None else None,
            "tags": tags, "attributes": {"mem0": own},
        }

    def history(self):
        rows = self._history_rows()
        for hid, mid, old, new, event, created, updated in rows:
            event = str(event or "").upper()
            at = _time(updated if event != "ADD" else (created or updated)) or 0
            yield {"at": at, "action": {"ADD": "insert", "UPDATE": "update", "DELETE": "delete"}.get(event, event.lower()),
                   "memory_id": mid, "before": None if old is None else {"content": old},
                   "after": None if new is None else {"content": new}, "note": f"mem0 history: {event} ({hid})"}

    def _history_rows(self) -> list[tuple]:
        if not os.path.isfile(self.history_file):
            return []
        conn = apsw.Connection(self.history_file, flags=apsw.SQLITE_OPEN_READONLY)
        try:
            cols = {r[1] for r in conn.execute("PRAGMA table_info(history)")}
            if not _HISTORY_COLUMNS <= cols:
                raise StoreError(f"{self.history_file} is not mem0's history file: its history table lacks "
                                 f"{', '.join(sorted(_HISTORY_COLUMNS - cols))}. Point memviz at the right one "
                                 f"with {ENV_HISTORY}=/path/to/history.db.")
            ids = self._ids()
            return [r for r in conn.execute(
                "SELECT id, memory_id, old_memory, new_memory, event, created_at, updated_at FROM history "
                "ORDER BY rowid") if r[1] in ids]
        finally:
            conn.close()

    def _ids(self) -> set[str]:
        conn = self._db.get()
        return {r[0] for c in self.collections for r in conn.execute(f'SELECT id::text FROM "{c}"')}

    # ---------------------------------------------------------------- writing
    def write(self, rows: dict[str, dict], changes: dict[str, dict]) -> dict[str, dict]:
        self.refuse({k for ch in changes.values() for k in ch if k not in ("embedding", "embedding_model")})
        conn = self._db.get()
        landed, history = {}, []
        now = datetime.now(UTC).isoformat()
        with conn.transaction():
            for rid, ch in changes.items():
                shown = rows[rid]
                coll = (shown.get("attributes") or {}).get("mem0", {}).get("collection") or self.collections[0]
                model, dim = self.model(coll), self.dims.get(coll)
                vec = ch.get("embedding")
                if ch.get("content") is None:
                    continue
                if vec is None or ch.get("embedding_model") != model or (dim and len(_floats(vec)) != dim):
                    raise ReadOnlyError(self._no_vector(coll, ch.get("embedding_model")))
                row = conn.execute(f'SELECT payload FROM "{coll}" WHERE id = %s FOR UPDATE', (rid,)).fetchone()
                if row is None:
                    raise ConflictError(f"mem0 deleted memory {rid} while it was being corrected; nothing was written.")
                payload = row[0] if isinstance(row[0], dict) else {}
                if payload.get("data") != shown.get("content"):
                    raise ConflictError(f"mem0 changed memory {rid} while it was being corrected; nothing was written.",
                                        current={"content": payload.get("data")}, expected={"content": shown.get("content")})
                old, new = payload.get("data"), ch["content"]
                payload = {**payload, "data": new, "hash": hashlib.md5(new.encode()).hexdigest(), "updated_at": now}
                if "text_lemmatized" in payload:
                    payload["text_lemmatized"] = new
                from psycopg.types.json import Jsonb
                conn.execute(f'UPDATE "{coll}" SET vector = %s, payload = %s WHERE id = %s',
                             (vector_param(_floats(vec)), Jsonb(payload), rid))
                self._unlink_entities(conn, coll, rid)
                history.append((str(uuid.uuid4()), rid, old, new, "UPDATE", payload.get("created_at"), now, 0,
                                payload.get("actor_id"), payload.get("role")))
                attrs = dict(shown.get("attributes") or {})
                attrs["mem0"] = {**attrs.get("mem0", {}), "hash": payload["hash"], "updated_at": now}
                landed[rid] = {"content": new, "embedding": ch["embedding"], "embedding_model": model,
                               "attributes": attrs}
            if history:  # inside the PostgreSQL transaction: a failed history write rolls the update back
                self._add_history(history)
        return landed

    def _no_vector(self, coll: str, got: str | None) -> str:
        dim = self.dims.get(coll)
        return (f"mem0 stores with each memory a vector of its embedding model (this collection: {self.model(coll)}, "
                f"{dim}-d), and memviz could not make one for the new text"
                + (f" (it had a vector of {got})" if got else "")
                + f". Name the model mem0's config uses with {ENV_MODEL}=<model> and an OpenAI-compatible endpoint "
                "serving it with MEMVIZ_EMBED_BASE_URL (and MEMVIZ_EMBED_API_KEY); nothing was written.")

    def _unlink_entities(self, conn, coll: str, rid: str) -> None:
        ent = f"{coll}_entities"
        if not conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f'"{ent}"',)).fetchone()[0]:
            return
        conn.execute(
            f"""UPDATE "{ent}" SET payload = jsonb_set(payload, '{{linked_memory_ids}}',
                    coalesce((SELECT jsonb_agg(x) FROM jsonb_array_elements(payload->'linked_memory_ids') x
                              WHERE x <> to_jsonb(%s::text)), '[]'::jsonb))
                WHERE jsonb_typeof(payload->'linked_memory_ids') = 'array' AND payload->'linked_memory_ids' ? %s""",
            (rid, rid))

    def _add_history(self, rows: list[tuple]) -> None:
        os.makedirs(os.path.dirname(self.history_file), exist_ok=True)  # where mem0 would create it
        conn = apsw.Connection(self.history_file)
        try:
            conn.setbusytimeout(5000)
            conn.execute(_HISTORY_TABLE)
            with conn:
                conn.executemany("INSERT INTO history (id, memory_id, old_memory, new_memory, event, created_at, "
                                 "updated_at, is_deleted, actor_id, role) VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
        finally:
            conn.close()

    def close(self) -> None:
        self._db.close()


def _declared_dim(conn, table: str) -> int | None:
    row = conn.execute("SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = 'vector'",
                       (f'"{table}"',)).fetchone()
    return int(row[0]) if row and row[0] and row[0] > 0 else None


def _floats(vec):
    import numpy as np
    if isinstance(vec, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(vec), dtype="<f4")
    return np.asarray(vec, dtype=np.float32)


def _time(value) -> int | None:
    if isinstance(value, str):
        try:  # mem0 writes aware ISO times: the C parser, without to_epoch's checks, for 100k rows
            dt = datetime.fromisoformat(value)
            return int((dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp())
        except ValueError:
            pass
    try:
        return to_epoch(value)
    except ValueError:
        return None


SOURCES = [Mem0Source]
