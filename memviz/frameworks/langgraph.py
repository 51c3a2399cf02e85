"""LangGraph's long-term memory store (what LangMem's tools write too), opened in place: a
`SqliteStore` file (langgraph-checkpoint-sqlite) or a `PostgresStore` database
(langgraph-checkpoint-postgres). No Qt here.

Both keep two tables: `store` (prefix = the namespace joined by '.', key, value JSON,
created_at, updated_at, expires_at, ttl_minutes) and `store_vectors` (prefix, key, field_name,
embedding: one row per indexed text of a value, made by the user's embedding function).

How an item becomes a memory (one per (namespace, key); id = key@prefix, '@' and '%' in the
key escaped):
- kind: the value's own `kind` when it is LangMem's structured form ({"kind", "content"});
  else the namespace segment that varies least over the store's namespaces of that length
  (for ("memories", user) and (user, "memories") alike that is "memories"; on a tie the first
  segment made of letters only, else the first). agent: the other segments joined by '.'.
- content: the text of the value's main field: among the fields it has vectors for (but "$"),
  the first of content/text/memory/data/page_content (MAIN_FIELDS), else the first by name;
  without such vectors (none, or LangGraph's default index of fields ["$"], one vector of the
  whole value), the first of those keys the value has; else the whole value as JSON. Its
  embedding is that field's vector, else the "$" vector (attributes["langgraph"]["vector_field"]
  says so; the whole value is then in attributes["langgraph"]["value"]); the other fields'
  vectors stay in the store, not shown.
- created_at / updated_at as stored; an item whose expires_at has passed (the store's TTL
  sweeper has not deleted it yet) is retired with valid_until = expires_at; namespace, key,
  expires_at, ttl_minutes, the indexed fields and the value's other fields are in
  attributes["langgraph"]. tags: the value's "tags" list of strings. LangGraph keeps no
  importance and no history.
- the embedding model is not recorded by the store: memviz names it only when its own local
  model reproduces the stored vectors (a few are re-embedded at open); else it is unknown.

Edits: correcting the text only, written as `store.put(namespace, key, value)` would: the
value with the new text in its main field, updated_at now, a TTL restarted (expires_at = now +
ttl_minutes) only for an item that has one, and the vector row of every indexed field whose
text changed, embedded by the store's model. created_at is kept (PostgresStore's put keeps it;
SqliteStore's INSERT OR REPLACE would reset it). A store whose model memviz cannot name, a
value whose main text is not a plain string field (the whole JSON, LangMem's structured
content) or an indexed field memviz cannot locate refuse the correction with a message.
Retiring is refused: LangGraph deletes physically.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import threading
import time
from collections import Counter, defaultdict
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
import orjson

from ..embed import EmbedderUnavailable, EmbeddingError, embedder_for, unknown_model
from ..store import ConflictError, ReadOnlyError, ValidationError
from ..store.connection import connect as connect_sqlite
from ..store.connection import immediate
from ..store.errors import store_errors
from ..tasks import Task
from .pgvectors import fetch_ahead, vectors_as_bytes
from .source import Source, identify_model, scoped_id
from .sqlite_reader import SqliteReader

STORE_COLUMNS = {"prefix", "key", "value", "created_at", "updated_at"}
#: an item's columns as every read selects them, in this order (`_mapped` takes rows of them; a
#: read may add its own columns after them): rows are plain tuples, read by position on the hot
#: paths, so r[0], r[1] are always (prefix, key)
ITEM = ("prefix", "key", "value", "created_at", "updated_at", "expires_at", "ttl_minutes")
_ITEM_END = len(ITEM)                  # r[:_ITEM_END]: the item
_UPDATED = ITEM.index("updated_at")
#: value fields that hold a memory's text, in order of preference
MAIN_FIELDS = ("content", "text", "memory", "data", "page_content")
_IDENTIFY_SAMPLE = 4  # vectors re-embedded to tell whether memviz's local model made them


def looks_like_langgraph(tables: dict) -> bool:
    """The `store` table with LangGraph's columns and its migrations table."""
    return STORE_COLUMNS <= set(tables.get("store", ())) and "store_migrations" in tables


def memory_id(prefix: str, key: str) -> str:
    return scoped_id(key, prefix)


# ------------------------------------------------------------------ the mapping
def namespace_roles(prefixes) -> dict[str, tuple[str, str]]:
    """prefix -> (agent, kind) by the rule in the module docstring."""
    by_len: dict[int, list[tuple[str, ...]]] = defaultdict(list)
    for p in set(prefixes):
        by_len[len(p.split("."))].append(tuple(p.split(".")))
    out = {}
    for n, spaces in by_len.items():
        if n == 1:
            out.update({s[0]: ("", s[0]) for s in spaces})
            continue

        columns = [{s[i] for s in spaces} for i in range(n)]
        k = min(range(n), key=lambda i: (len(columns[i]), not all(re.fullmatch(r"[A-Za-z_]+", v) for v in columns[i]), i))
        for s in spaces:
            out[".".join(s)] = (".".join(s[:k] + s[k + 1:]), s[k])
    return out


def _roles_kept(before: frozenset[str], after: frozenset[str]) -> bool:
    """The namespaces of `before` still in `after` keep their agent and kind (a namespace that
    appeared or went may change the others': then every item is read again)."""
    if before == after:
        return True
    roles, was = namespace_roles(after), namespace_roles(before)
    return all(roles.get(p) == was[p] for p in before & after)


def text_at(value: Any, path: str) -> str | None:
    """The text LangGraph embeds for `path` of `value` (get_text_at_path for "$" and dotted
    paths of keys and list indexes); None when the path does not lead anywhere."""
    if path == "$":
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    obj = value
    for tok in path.split("."):
        if isinstance(obj, dict) and tok in obj:
            obj = obj[tok]
        elif isinstance(obj, list) and tok.isdigit() and int(tok) < len(obj):
            obj = obj[int(tok)]
        else:
            return None
    if isinstance(obj, str):
        return obj
    if isinstance(obj, (bool, int, float)):
        return str(obj)
    if isinstance(obj, (list, dict)):
        return json.dumps(obj, sort_keys=True, ensure_ascii=False)
    return None


def main_field(value: Any, vector_fields) -> str:
    """The field whose text is the memory's content (see the module docstring). With `value`
    None: the vector field that is the memory's embedding."""
    fields = sorted(f for f in vector_fields if f != "$")
    if not fields and value is None:
        return "$"
    for name in MAIN_FIELDS:
        for f in (name, name + ".0"):
            if f in fields:
                return f
    if fields:
        return fields[0]
    if isinstance(value, dict):
        for name in MAIN_FIELDS:
            if value.get(name) is not None:
                return name
    return "$"


def editable_path(value: Any, path: str) -> bool:
    """A plain string reached through dict keys only: a text memviz can replace."""
    if path == "$":
        return False
    obj = value
    for tok in path.split("."):
        if not isinstance(obj, dict) or tok not in obj:
            return False
        obj = obj[tok]
    return isinstance(obj, str)


def with_text(value: dict, path: str, text: str) -> dict:
    out = json.loads(json.dumps(value))
    obj = out
    toks = path.split(".")
    for tok in toks[:-1]:
        obj = obj[tok]
    obj[toks[-1]] = text
    return out


@lru_cache(maxsize=4096)  # the rows of a batch of puts share their times (SQLite's are seconds): each parsed once
def epoch(v) -> float | None:
    """A stored time as epoch seconds: SQLite's text ('YYYY-MM-DD HH:MM:SS[.ffffff][+00:00]',
    UTC) or PostgreSQL's datetime."""
    if v is None:
        return None
    if isinstance(v, (bytes, bytearray)):
        v = v.decode()
    if isinstance(v, str):
        v = dt.datetime.fromisoformat(v)
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=dt.UTC)
        return v.timestamp()
    return float(v)


def _iso(v) -> str | None:
    if v is None:
        return None
    if isinstance(v, dt.datetime):
        return v.isoformat()
    return v.decode() if isinstance(v, (bytes, bytearray)) else str(v)


def _load(v) -> Any:
    """A stored value parsed, by orjson (several times faster than json; memviz depends on it)."""
    if isinstance(v, (dict, list)):
        return v
    return orjson.loads(v)


class LangGraphStore(Source):
    """What both backends share: the mapping and the write plan. A backend reads rows
    (`_rows`, `_vectors`; PostgreSQL streams its own `records`), tells its token and applies a
    plan (`_apply`)."""

    system = "langgraph"
    title = "LangGraph"
    backend: ClassVar[str] = ""
    edits = frozenset({"content"})
    corrects_in_place = True

    def __init__(self, target: str, label: str | None = None):
        super().__init__(target, label)
        self.model: str | None = None  # the vectors' model once read (LOCAL_MODEL or unknown/…)
        self.dim: int | None = None

    def describe(self) -> str:
        n, spaces, vectors, expired = self._counts()
        parts = [f"{n:,} items in {spaces:,} namespaces"]
        parts.append(f"{vectors:,} vectors" if vectors else "no vectors")
        if expired:
            parts.append(f"{expired:,} expired")
        return f"LangGraph store ({self.backend}) at {self.label}: " + ", ".join(parts)

    # ---------------------------------------------------------------- reading
    def records(self, task: Task | None = None):
        """Every item as a record, yielded one by one (a mirror's first build writes the first
        while the rest are mapped). The vectors' model is named first, from the vector rows and
        the values of a few items: a record leaves here with its embedding_model."""
        if task:
            task.progress(-1, "reading the LangGraph store")
        rows = self._rows()
        vectors = self._vectors()
        self._name_model(rows, vectors)
        self._read(rows)
        return self._mapped(rows, vectors, task)

    def _read(self, rows) -> None:
        """A whole read happened (rows as `_rows` gave them): a backend that answers
        changed_since notes where it stands. Default: nothing."""

    def _name_model(self, rows, vectors, dim: int | None = None) -> None:
        """The store's vector dimension (most items', or `dim`) and its model (identify_model on
        the main texts of the first items that have one). An item's main field is one of its
        vector fields when it has any (main_field), so neither needs every value parsed."""
        dims = Counter(len(vecs[main_field(None, vecs)]) // 4 for vecs in vectors.values() if vecs)
        if not dims and dim is None:
            return
        self.dim = dim or dims.most_common(1)[0][0]
        if self.model is not None:
            return
        samples = []
        for prefix, key, raw, *_rest in rows:
            vecs = vectors.get((prefix, key))
            if not vecs:
                continue
            field = main_field(None, vecs)
            try:
                text = text_at(_load(raw), field)
            except ValueError:
                continue
            if text is not None and len(vecs[field]) // 4 == self.dim:
                samples.append((text, np.frombuffer(vecs[field], dtype="<f4")))
                if len(samples) == _IDENTIFY_SAMPLE:
                    break
        self.model = identify_model(self.system, self.dim, samples)

    def _mapped(self, rows, vectors, task, prefixes=None):
        """Records of `rows`; `prefixes`: every namespace of the store (the roles depend on all
        of them), when `rows` are only some items."""
        roles = namespace_roles(prefixes if prefixes is not None else (r[0] for r in rows))
        now = time.time()
        others = {}  # dimension -> the name of vectors not of the store's main dimension
        for i, (prefix, key, raw, created, updated, expires, ttl) in enumerate(rows):
            if task and i % 20000 == 0:
                task.check()
                task.progress(i / max(len(rows), 1), f"{i:,} of {len(rows):,} items")
            try:
                value = _load(raw)
            except ValueError:  # orjson's JSONDecodeError is a ValueError too
                value = {"unreadable value": raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)}
            vecs = vectors.get((prefix, key), {})
            field = main_field(value, vecs)
            vec_field = field if field in vecs or "$" not in vecs else "$"  # "$": the whole value's vector
            content = text_at(value, field) or json.dumps(value, sort_keys=True, ensure_ascii=False)
            agent, kind = roles[prefix]
            if isinstance(value, dict) and isinstance(value.get("kind"), str) and "content" in value:
                kind = value["kind"]
            made = epoch(created) or now
            expires_s = epoch(expires)
            rest = {k: v for k, v in value.items() if k != field} if isinstance(value, dict) else {}
            if vec_field != field:
                rest = value  # its vector is of the whole value: the detail shows all of it
            tags = value.get("tags") if isinstance(value, dict) else None
            vec = vecs.get(vec_field)
            own = {"namespace": prefix.split("."), "key": key, "field": field, "indexed_fields": sorted(vecs),
                   "updated_at": _iso(updated)}
            if vec_field != field:
                own["vector_field"] = vec_field
            if expires is not None:  # an item without a TTL has neither (as the other systems leave out what is None)
                own["expires_at"] = _iso(expires)
            if ttl is not None:
                own["ttl_minutes"] = ttl
            if rest:
                own["value"] = rest
            rec = {
                "id": memory_id(prefix, key), "agent": agent, "kind": kind, "content": content,
                "created_at": int(made), "event_time": int(made),
                "valid_until": int(expires_s) if expires_s is not None and expires_s <= now else None,
                "tags": [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else [],
                "attributes": {"langgraph": own},
            }
            if vec is not None:
                rec["embedding"] = vec  # float32 bytes, written to the mirror as they are (normalize_many)
                d = len(vec) // 4
                if d == self.dim:
                    rec["embedding_model"] = self.model
                else:
                    rec["embedding_model"] = others.get(d) or others.setdefault(d, unknown_model(self.system, d))
            yield rec

    # ---------------------------------------------------------------- writing
    def write(self, rows: dict[str, dict], changes: dict[str, dict]) -> dict[str, dict]:
        self.refuse({k for ch in changes.values() for k in ch} - {"embedding", "embedding_model"})
        plans = []
        current = self._current([(a["namespace"], a["key"]) for a in (_lg(rows[rid]) for rid in changes)])
        for rid, ch in changes.items():
            a = _lg(rows[rid])
            prefix, key, field = ".".join(a["namespace"]), a["key"], a["field"]
            cur = current.get((prefix, key))
            if cur is None:
                raise ConflictError(f"{rid} was deleted from the LangGraph store since memviz read it.",
                                    current=None, expected={"content": rows[rid]["content"]})
            raw, updated, ttl, fields = cur
            value = _load(raw)
            if text_at(value, field) != rows[rid]["content"] or _iso(updated) != a["updated_at"]:
                raise ConflictError(f"{rid} was changed in the LangGraph store since memviz read it; reload to see it.",
                                    current={"content": text_at(value, field)}, expected={"content": rows[rid]["content"]})
            if not editable_path(value, field):
                raise ValidationError(f"memviz corrects only a plain text field of a LangGraph value; the text of {rid} is "
                                      f"{'the whole value' if field == '$' else repr(field) + ', which is not a string'}. "
                                      "Change it through the agent's own code.")
            new_value = with_text(value, field, ch["content"])
            texts = {}
            for f in fields:
                old_t, new_t = text_at(value, f), text_at(new_value, f)
                if new_t is None:
                    raise ValidationError(f"memviz cannot recompute the text LangGraph indexes as {f!r} for {rid}")
                if new_t != old_t:
                    texts[f] = new_t
            plans.append({"id": rid, "prefix": prefix, "key": key, "raw": raw, "value": new_value, "ttl": ttl,
                          "texts": texts, "field": field})
        self._embed(plans)
        self._apply(plans)
        landed = {}
        for p in plans:
            a = dict(_lg(rows[p["id"]]))
            a["updated_at"] = p["updated_at"]
            if p["expires_at"] is not None:
                a["expires_at"] = p["expires_at"]
            vec_field = a.get("vector_field", p["field"])
            if vec_field != p["field"]:
                a["value"] = p["value"]  # the whole value, as read (_mapped)
            out = {"content": changes[p["id"]]["content"], "attributes": {**rows[p["id"]].get("attributes", {}), "langgraph": a}}
            if vec_field in p["vectors"]:
                out["embedding"] = p["vectors"][vec_field]
                out["embedding_model"] = self.model
            landed[p["id"]] = out
        return landed

    def _embed(self, plans) -> None:
        need = [(p, f, t) for p in plans for f, t in p["texts"].items()]
        for p in plans:
            p["vectors"] = {}
        if not need:
            return
        try:
            embedder = embedder_for(self.model or unknown_model(self.system, self.dim or 0), self.dim)
            vecs = embedder.embed([t for _p, _f, t in need])
        except (EmbedderUnavailable, EmbeddingError) as e:
            raise ReadOnlyError(f"memviz cannot correct the text of this LangGraph store: {e}. Writing the text without "
                                "a new vector would leave the old text's vector on it, so nothing was written.") from None
        if vecs.shape[1] != self.dim:
            raise ReadOnlyError(f"the embedder makes {vecs.shape[1]}-d vectors, this LangGraph store holds {self.dim}-d ones; "
                                "nothing was written.")
        for (p, f, _t), v in zip(need, vecs):
            p["vectors"][f] = np.asarray(v, dtype="<f4")

    def _check_unchanged(self, plan, raw, updated) -> None:
        if raw is None:
            raise ConflictError(f"{plan['id']} was deleted from the LangGraph store during the edit; nothing was written.")
        if _load(raw) != _load(plan["raw"]):
            raise ConflictError(f"{plan['id']} was changed in the LangGraph store during the edit; nothing was written.")

    # ---------------------------------------------------------------- per backend
    def _rows(self) -> list[tuple]:
        """(prefix, key, value, created_at, updated_at, expires_at, ttl_minutes) of every item."""
        raise NotImplementedError

    def _vectors(self) -> dict[tuple[str, str], dict[str, bytes]]:
        """(prefix, key) -> field_name -> float32 little-endian bytes."""
        raise NotImplementedError

    def _current(self, keys) -> dict[tuple[str, str], tuple]:
        """(prefix, key) -> (value, updated_at, ttl_minutes, indexed field names) now."""
        raise NotImplementedError

    def _apply(self, plans) -> None:
        """Write the plans in one transaction (each checked unchanged first); set each plan's
        updated_at and expires_at as stored."""
        raise NotImplementedError

    def _counts(self) -> tuple[int, int, int, int]:
        raise NotImplementedError


def _lg(row: dict) -> dict:
    attrs = row.get("attributes") or {}
    if isinstance(attrs, str):
        attrs = json.loads(attrs)
    return attrs["langgraph"]


# ====================================================================== SqliteStore
def _sqlite_now(offset_minutes: float | None = None) -> str:
    """A time as SqliteStore writes expires_at (Python's datetime, UTC, stored as text)."""
    t = dt.datetime.now(dt.UTC)
    if offset_minutes is not None:
        t += dt.timedelta(minutes=offset_minutes)
    return t.isoformat(" ")


class LangGraphSqlite(LangGraphStore):
    backend = "SQLite"

    def __init__(self, target: str, label: str | None = None):
        super().__init__(target, label)
        self._reader = SqliteReader(target, "reading the LangGraph store", opening="opening the LangGraph store")
        # where the last whole read stood, for changed_since: the newest updated_at then, and the
        # namespaces (a new one may change every item's agent and kind: then all is read again)
        self._since: str | None = None
        self._prefixes: frozenset[str] | None = None
        self._top = self._top_read = 0  # the highest rowid seen (a put's INSERT OR REPLACE gives a new one)
        self._looked = self._looked_read = ""  # when expiries were last looked at (SqliteStore's time text)

    @classmethod
    def recognise(cls, probe):
        if probe.is_file and looks_like_langgraph(probe.sqlite_tables()):
            return cls(probe.target)
        return None

    def close(self) -> None:
        self._reader.close()

    def _q(self, sql, params=()):
        return self._reader.query(sql, params)

    def _has_vectors(self) -> bool:
        return bool(self._q("SELECT 1 FROM sqlite_master WHERE type='table' AND name='store_vectors'"))

    def token(self):
        stats = []
        for p in (self.target, self.target + "-wal"):
            try:
                st = os.stat(p)
                stats.append((st.st_ino, st.st_size, st.st_mtime_ns))
            except FileNotFoundError:
                stats.append(None)
        version = self._q("PRAGMA data_version")[0][0]
        expired = self._q("SELECT count(*) FROM store WHERE expires_at IS NOT NULL AND expires_at <= ?", (_sqlite_now(),))[0][0] \
            if "expires_at" in self._columns() else 0
        return [stats, version, expired]

    def _columns(self) -> set[str]:
        return {r[1] for r in self._q("PRAGMA table_info(store)")}

    # ---------------------------------------------------------------- changes without a whole read
    def _read(self, rows) -> None:
        self._top, self._looked = self._top_read, self._looked_read
        self._since = max((r[_UPDATED] for r in rows if isinstance(r[_UPDATED], str)), default="")
        self._prefixes = frozenset(r[0] for r in rows)

    def in_step(self, token, model) -> None:
        """The mirror holds the store as of `token` (a reopen): note where it stands, and take
        the model the mirror's vectors carry (`model`, named by the read that built it), or,
        when the mirror has none, name it as a whole read would (the most common vector size;
        the first items' texts). Nothing is noted when the store moved meanwhile: the next sync
        reads it whole, and names its model then."""
        top, looked = self._q("SELECT coalesce(max(rowid), 0) FROM store")[0][0], _sqlite_now()
        since = self._q("SELECT coalesce(max(updated_at), '') FROM store")[0][0]
        prefixes = frozenset(r[0] for r in self._q("SELECT DISTINCT prefix FROM store"))
        if self.token() != token:
            return
        if model is not None:
            self.model, self.dim = model
        elif self.dim is None and self._has_vectors():
            common = self._q("SELECT length(embedding) / 4, count(*) FROM store_vectors WHERE length(embedding) % 4 = 0 "
                             "GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1")
            if common:
                first = self._q("SELECT prefix, key, value FROM store LIMIT 200")
                vectors = defaultdict(dict)
                for prefix, key, *_v in first:
                    for field, blob in self._q("SELECT field_name, embedding FROM store_vectors WHERE prefix = ? AND key = ?"
                                               " AND embedding IS NOT NULL", (prefix, key)):
                        vectors[(prefix, key)][field] = blob
                self._name_model(first, vectors, int(common[0][0]))
        # nothing written since these were read: they describe the mirror
        self._top, self._looked, self._since, self._prefixes = top, looked, str(since), prefixes

    def changed_since(self, token, known, task: Task | None = None):
        """The items written since the last read, with their vectors, and every id (read only
        when the count says some were deleted). SqliteStore's put is an INSERT OR REPLACE, which
        gives the item a rowid above every earlier one: rows above the highest rowid seen; an
        UPDATE (memviz's own correction, another writer) moves updated_at: rows stamped after
        the newest stamp seen (whole seconds: an UPDATE in that same second waits for the item's
        next change); and the items whose expiry has passed since the last look. None (a whole read) before a first
        read, or when a namespace that appeared or went moves the agent or kind of the others."""
        if self._since is None:
            return None
        prefixes = frozenset(r[0] for r in self._q("SELECT DISTINCT prefix FROM store"))
        if not _roles_kept(self._prefixes, prefixes):
            return None  # the items of other namespaces got another agent or kind: all is read again
        cols = self._columns()
        exp = "expires_at" if "expires_at" in cols else "NULL"
        ttl = "ttl_minutes" if "ttl_minutes" in cols else "NULL"
        now = _sqlite_now()
        with self._reader.snapshot() as conn:  # one snapshot: the rows, their vectors and the count agree
            got = list(conn.execute(
                f"SELECT rowid, prefix, key, value, created_at, updated_at, {exp}, {ttl} FROM store "
                "WHERE rowid > ? OR updated_at > ?" + (" OR (expires_at > ? AND expires_at <= ?)"
                                                       if exp != "NULL" else ""),
                (self._top, self._since, self._looked, now) if exp != "NULL" else (self._top, self._since)))
            rows = [r[1:] for r in got]
            vectors: dict = defaultdict(dict)
            if rows and self._has_vectors():
                for prefix, key, *_r in rows:
                    for field, blob in conn.execute("SELECT field_name, embedding FROM store_vectors "
                                                    "WHERE prefix = ? AND key = ? AND embedding IS NOT NULL",
                                                    (prefix, key)):
                        if isinstance(blob, bytes) and blob and len(blob) % 4 == 0:
                            vectors[(prefix, key)][field] = blob
            ids = [memory_id(r[0], r[1]) for r in rows]
            new = sum(1 for i in set(ids) if i not in known)
            # as many items as the mirror's and the new ones: none was deleted
            deleted = conn.execute("SELECT count(*) FROM store").fetchone()[0] != len(known) + new
            present = [memory_id(p, k) for p, k in conn.execute("SELECT prefix, key FROM store")] if deleted \
                else [*known, *ids]
        self._top, self._looked = max([self._top] + [r[0] for r in got]), now
        self._prefixes = prefixes
        self._since = max([self._since] + [r[_UPDATED] for r in rows if isinstance(r[_UPDATED], str)])
        return list(self._mapped(rows, vectors, task, prefixes)), present

    def _rows(self):
        self._top_read = self._q("SELECT coalesce(max(rowid), 0) FROM store")[0][0]  # first: a row put meanwhile is above
        self._looked_read = _sqlite_now()
        cols = self._columns()
        exp = "expires_at" if "expires_at" in cols else "NULL"
        ttl = "ttl_minutes" if "ttl_minutes" in cols else "NULL"
        return self._q(f"SELECT prefix, key, value, created_at, updated_at, {exp}, {ttl} FROM store")

    def _vectors(self):
        out: dict = defaultdict(dict)
        if self._has_vectors():
            for prefix, key, field, blob in self._q("SELECT prefix, key, field_name, embedding FROM store_vectors"
                                                    " WHERE embedding IS NOT NULL"):
                if isinstance(blob, bytes) and blob and len(blob) % 4 == 0:
                    out[(prefix, key)][field] = blob
        return out

    def _counts(self):
        n, spaces = self._q("SELECT count(*), count(DISTINCT prefix) FROM store")[0]
        vectors = self._q("SELECT count(*) FROM store_vectors")[0][0] if self._has_vectors() else 0
        expired = self.token()[2]
        return n, spaces, vectors, expired

    def _current(self, keys):
        out = {}
        vec = self._has_vectors()
        for ns, key in keys:
            prefix = ".".join(ns)
            ttl = "ttl_minutes" if "ttl_minutes" in self._columns() else "NULL"
            row = self._q(f"SELECT value, updated_at, {ttl} FROM store WHERE prefix = ? AND key = ?", (prefix, key))
            if row:
                fields = [r[0] for r in self._q("SELECT field_name FROM store_vectors WHERE prefix = ? AND key = ?",
                                                (prefix, key))] if vec else []
                out[(prefix, key)] = (*row[0], fields)
        return out

    def _apply(self, plans) -> None:
        cols = self._columns()
        with store_errors(self.target, doing="writing to the LangGraph store"):
            conn = connect_sqlite(self.target)
            try:
                with immediate(conn):
                    for p in plans:
                        got = list(conn.execute("SELECT value, updated_at FROM store WHERE prefix = ? AND key = ?",
                                                (p["prefix"], p["key"])))
                        self._check_unchanged(p, *(got[0] if got else (None, None)))
                        value = json.dumps(p["value"], ensure_ascii=False, separators=(",", ":")).encode()
                        expires = _sqlite_now(p["ttl"]) if p["ttl"] is not None else None
                        if "expires_at" in cols:
                            conn.execute("UPDATE store SET value = ?, updated_at = CURRENT_TIMESTAMP, expires_at = ? "
                                         "WHERE prefix = ? AND key = ?", (value, expires, p["prefix"], p["key"]))
                        else:
                            conn.execute("UPDATE store SET value = ?, updated_at = CURRENT_TIMESTAMP WHERE prefix = ? AND key = ?",
                                         (value, p["prefix"], p["key"]))
                        for f, v in p["vectors"].items():
                            conn.execute("INSERT OR REPLACE INTO store_vectors (prefix, key, field_name, embedding, created_at, "
                                         "updated_at) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)",
                                         (p["prefix"], p["key"], f, v.astype("<f4").tobytes()))
                        p["updated_at"] = conn.execute("SELECT updated_at FROM store WHERE prefix = ? AND key = ?",
                                                       (p["prefix"], p["key"])).fetchone()[0]
                        p["expires_at"] = expires
            finally:
                conn.close()


# ====================================================================== PostgresStore
_PG_ROW = ", ".join("value::text" if c == "value" else c for c in ITEM)  # value: see _pg_values
#: a whole read: each item with one row per vector field (its fields' rows adjacent: the merge of the two
#: primary keys in their order, which the server streams without sorting), the item's columns, then
#: the field's name and its vector (_FIELD, _VECTOR)
_PG_ITEMS = ("SELECT " + ", ".join(f"s.{c}::text" if c == "value" else f"s.{c}" for c in ITEM)
             + ", v.field_name, vector_send(v.embedding::vector) FROM store s LEFT JOIN store_vectors v "
             "ON v.prefix = s.prefix AND v.key = s.key AND v.embedding IS NOT NULL ORDER BY s.prefix, s.key")
_PG_ITEMS_BARE = f"SELECT {_PG_ROW}, NULL, NULL::bytea FROM store ORDER BY prefix, key"
_FIELD, _VECTOR = _ITEM_END, _ITEM_END + 1
#: changed_since's read: the item's columns, then its row version's transaction and whether its expiry
#: passed since the last look (_XMIN, _EXPIRED)
_PG_CHANGED = f"SELECT {_PG_ROW}, xmin::text::bigint, expires_at > %s AND expires_at <= %s FROM store"
_XMIN, _EXPIRED = _ITEM_END, _ITEM_END + 1
_PG_BATCH = 5000  # rows of _PG_ITEMS per fetch
#: the row versions written by a transaction at or after the one in the parameter (its 32-bit id). A row's xmin
#: is the id of the transaction that wrote it (insert or update); ids are 32 bits and wrap around, so x is at or
#: after y when (x - y) mod 2^32 < 2^31. 0-2 (invalid, bootstrap, frozen) are older than any.
_WRITTEN_SINCE = ("xmin::text::bigint >= 3 AND "
                  "mod(xmin::text::bigint - %s + 4294967296, 4294967296) < 2147483648")
#: the oldest transaction still running when this transaction's snapshot was taken, as a 32-bit id: every
#: transaction before it had ended (committed or not) by then. The txid_ spelling of pg_current_snapshot(), which
#: PostgreSQL 12 and older (where LangGraph also runs) lack.
_SNAPSHOT_XMIN = "SELECT mod(txid_snapshot_xmin(txid_current_snapshot()), 4294967296)"


class LangGraphPostgres(LangGraphStore):
    """changed_since reads the rows written since the last look by their row version: each look
    (a whole read, a delta) is one REPEATABLE READ snapshot and notes its xmin, the oldest
    transaction then running; the next look reads every row whose xmin is at or after it. A
    transaction that stamped updated_at before the last look but committed after it is found
    (its id is at or after that snapshot's xmin, since it was running), whatever the stamps say,
    and so is a put's TTL refresh (an UPDATE of expires_at alone, by `get`/`search`). Rows of
    transactions that ended between that xmin and the snapshot come again: the look remembers
    the row versions it saw at or after its xmin, and one seen before is not mapped twice (a
    transaction left open for long would otherwise bring every row written since it began at
    each look). updated_at is not used: its precision and its transaction-start stamp do not matter."""

    backend = "PostgreSQL"

    def __init__(self, target: str, label: str | None = None):
        from ..store import redact
        super().__init__(target, label or redact(target))
        self._pg = None
        # one user of the connection at a time: a poll's token must not run inside a look's or a write's transaction
        self._lock = threading.RLock()
        # where the last look stood: its snapshot's xmin (None: no whole read yet), when expiries were last
        # looked at, the row versions seen at or after that xmin, and the namespaces then
        self._at: tuple[int, dt.datetime, dict, frozenset[str]] | None = None
        self._undo: tuple | None = None      # (the token of the last delta, where it started): see changed_since

    @classmethod
    def recognise(cls, probe):
        if probe.is_dsn and looks_like_langgraph(probe.pg_tables()):
            return cls(probe.target, probe.label)
        return None

    def _connect(self):
        if self._pg is None or self._pg.closed:
            from ..store.postgres.connect import connect
            self._pg = connect(self.target, need_vector=False)
        return self._pg

    def close(self) -> None:
        if self._pg is not None:
            self._pg.close()
            self._pg = None

    def _run(self, fn):
        """fn(connection), once more on a new connection if the connection dropped; psycopg's
        errors become StoreErrors."""
        from ..store.postgres.connect import _psycopg, translate
        psycopg = _psycopg()
        for attempt in (0, 1):
            try:
                with self._lock:
                    return fn(self._connect())
            except psycopg.OperationalError as e:
                self.close()  # a dropped connection: one fresh try
                if attempt:
                    raise translate(e, self.target, write=False) from None
            except psycopg.Error as e:
                raise translate(e, self.target, write=False) from None
        return None

    def _q(self, sql, params=(), *, binary=False):
        return self._run(lambda conn: _fetch(conn, sql, params, binary))

    def _snapshot(self, fn):
        """fn(connection) inside one read-only REPEATABLE READ transaction: every statement sees
        the same snapshot, the one txid_current_snapshot() describes."""
        def run(conn):
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                return fn(conn)
        return self._run(run)

    def _tables(self) -> set[str]:
        return {r[0] for r in self._q("SELECT table_name FROM information_schema.tables "
                                      "WHERE table_schema = ANY (current_schemas(false))")}

    def token(self):
        return self._run(_token)

    # ---------------------------------------------------------------- reading
    def records(self, task: Task | None = None):
        """Every item as a record, streamed: items and their vectors come joined in (prefix, key)
        order through a server-side cursor (fetch_ahead) on a connection of the read's own, so the
        first records are mapped and written while the server sends the rest (both tables read
        whole before any item was mapped would leave the mirror's writer idle meanwhile). One
        REPEATABLE READ snapshot holds the namespaces, the model's sample, the row versions and the rows."""
        if task:
            task.progress(-1, "reading the LangGraph store")
        looked = dt.datetime.now(dt.UTC)  # before the read: an expiry after it is looked at next time
        vectored = "store_vectors" in self._tables()

        def before(conn):
            xid = conn.execute(_SNAPSHOT_XMIN).fetchone()[0]
            prefixes = frozenset(r[0] for r in conn.execute("SELECT DISTINCT prefix FROM store"))
            total = conn.execute("SELECT count(*) FROM store").fetchone()[0]
            return xid, _versions(conn, xid), prefixes, total, _sample(conn) if vectored else None

        from ..store.postgres.connect import connect
        conn = connect(self.target, need_vector=False)
        try:
            batches = fetch_ahead(conn, _PG_ITEMS if vectored else _PG_ITEMS_BARE, size=_PG_BATCH, before=before)
            xid, window, prefixes, total, sample = next(batches)
            if sample is not None:
                self._name_model(*sample)
            items: list[tuple] = []  # the last item of a batch waits: its other fields may open the next
            vectors: dict = defaultdict(dict)
            done = 0
            field, vector, end = _FIELD, _VECTOR, _ITEM_END  # (locals: read once per row)
            for rows in batches:
                for r, vec in zip(rows, vectors_as_bytes([r[vector] for r in rows])):
                    if not items or items[-1][0] != r[0] or items[-1][1] != r[1]:
                        items.append(r[:end])
                    if vec is not None:
                        vectors[(r[0], r[1])][r[field]] = vec
                ready, items = items[:-1], items[-1:]
                yield from self._mapped(_pg_values(ready), vectors, None, prefixes)
                for r in ready:
                    vectors.pop((r[0], r[1]), None)
                done += len(ready)
                if task:
                    task.check()
                    task.progress(done / max(total, 1), f"{done:,} of {total:,} items")
            yield from self._mapped(_pg_values(items), vectors, None, prefixes)
        finally:
            conn.close()
        self._at, self._undo = (xid, looked, window, prefixes), None

    # ---------------------------------------------------------------- changes without a whole read
    def in_step(self, token, model) -> None:
        """The mirror holds the store as of `token` (a reopen): note where it stands, if the
        store is still there, and take the model the mirror's vectors carry (`model`), or, when
        the mirror has none, name it as a whole read would (the most common vector size; the
        first items' texts)."""
        looked = dt.datetime.now(dt.UTC)

        def look(conn):
            if _token(conn) != token:
                return None
            xid = conn.execute(_SNAPSHOT_XMIN).fetchone()[0]
            return xid, _versions(conn, xid), frozenset(r[0] for r in conn.execute("SELECT DISTINCT prefix FROM store"))
        got = self._snapshot(look)
        if got is None:
            return
        xid, window, prefixes = got
        if model is not None:
            self.model, self.dim = model
        elif self.dim is None and "store_vectors" in self._tables():
            self._name_model(*self._run(_sample))
        self._at, self._undo = (xid, looked, window, prefixes), None

    def changed_since(self, token, known, task: Task | None = None):
        """The items put, updated or TTL-refreshed since the last look (their row versions, see
        the class docstring), with their vectors; those whose expiry has passed since; and every
        id (read only when the count says some item was deleted: LangGraph deletes rows). All in
        one snapshot. None (a whole read) before a first read, or when a namespace that appeared
        or went moves the agent or kind of the others."""
        if self._undo is not None and self._undo[0] == token:
            self._at = self._undo[1]  # the mirror did not take the last delta (its token did not move): again
        if self._at is None:
            return None
        xid0, looked0, window0, prefixes0 = self._at
        vectored = "store_vectors" in self._tables()
        now = dt.datetime.now(dt.UTC)

        def read(conn):
            xid = conn.execute(_SNAPSHOT_XMIN).fetchone()[0]
            got = _pg_values(_fetch(conn, f"{_PG_CHANGED} WHERE ({_WRITTEN_SINCE}) OR (expires_at > %s AND expires_at <= %s)",
                                    (looked0, now, xid0, looked0, now), True))
            # a row version given before comes again only if the mirror lacks its item
            rows = [r[:_ITEM_END] for r in got
                    if r[_EXPIRED] or window0.get((r[0], r[1])) != r[_XMIN] or memory_id(r[0], r[1]) not in known]
            vectors = _vectors_of(conn, rows) if vectored and rows else {}
            window = {(r[0], r[1]): r[_XMIN] for r in got if _after(r[_XMIN], xid)}
            new = sum(1 for r in rows if memory_id(r[0], r[1]) not in known)
            count = conn.execute("SELECT count(*) FROM store").fetchone()[0]
            # as many items as the mirror's and the new ones: none was deleted
            every = conn.execute("SELECT prefix, key FROM store").fetchall() if count != len(known) + new else None
            return xid, rows, vectors, window, every
        xid, rows, vectors, window, every = self._snapshot(read)
        if every is None:
            prefixes = prefixes0 | {r[0] for r in rows}
            present = [*known, *(memory_id(r[0], r[1]) for r in rows)]
        else:
            prefixes = frozenset(p for p, _k in every)
            present = [memory_id(p, k) for p, k in every]
        self._undo, self._at = (token, self._at), (xid, now, window, prefixes)
        if not _roles_kept(prefixes0, prefixes):
            return None  # the items of other namespaces got another agent or kind: all is read again
        return list(self._mapped(rows, vectors, task, prefixes)), present

    def _counts(self):
        n, spaces = self._q("SELECT count(*), count(DISTINCT prefix) FROM store")[0]
        vectors = self._q("SELECT count(*) FROM store_vectors")[0][0] if "store_vectors" in self._tables() else 0
        return n, spaces, vectors, self.token()[2]

    def _current(self, keys):
        out = {}
        vec = "store_vectors" in self._tables()
        for ns, key in keys:
            prefix = ".".join(ns)
            row = self._q("SELECT value, updated_at, ttl_minutes FROM store WHERE prefix = %s AND key = %s", (prefix, key))
            if row:
                fields = [r[0] for r in self._q("SELECT field_name FROM store_vectors WHERE prefix = %s AND key = %s",
                                                (prefix, key))] if vec else []
                out[(prefix, key)] = (*row[0], fields)
        return out

    def _vector_type(self) -> str:
        row = self._q("SELECT udt_name FROM information_schema.columns WHERE table_name = 'store_vectors' "
                      "AND column_name = 'embedding' AND table_schema = ANY (current_schemas(false))")
        return row[0][0] if row and row[0][0] in ("vector", "halfvec") else "vector"

    def _apply(self, plans) -> None:
        from psycopg.types.json import Jsonb

        from ..store.postgres.connect import _psycopg, translate
        psycopg = _psycopg()
        vtype = self._vector_type() if any(p["vectors"] for p in plans) else "vector"
        try:
            with self._lock, self._connect().transaction() as tx, tx.connection.cursor() as cur:
                for p in plans:
                    cur.execute("SELECT value, updated_at FROM store WHERE prefix = %s AND key = %s FOR UPDATE",
                                (p["prefix"], p["key"]))
                    got = cur.fetchone()
                    self._check_unchanged(p, *(got if got else (None, None)))
                    # PostgresStore's put: NOW() + ttl as an interval, or no expiry
                    cur.execute("UPDATE store SET value = %s, updated_at = CURRENT_TIMESTAMP, "
                                "expires_at = CASE WHEN %s::float8 IS NULL THEN NULL "
                                "ELSE NOW() + make_interval(secs => %s::float8 * 60) END "
                                "WHERE prefix = %s AND key = %s RETURNING updated_at, expires_at",
                                (Jsonb(p["value"]), p["ttl"], p["ttl"], p["prefix"], p["key"]))
                    updated, expires = cur.fetchone()
                    for f, v in p["vectors"].items():
                        text = "[" + ",".join(repr(float(x)) for x in v) + "]"
                        cur.execute("INSERT INTO store_vectors (prefix, key, field_name, embedding, created_at, updated_at) "
                                    f"VALUES (%s, %s, %s, %s::text::{vtype}, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP) "
                                    "ON CONFLICT (prefix, key, field_name) DO UPDATE SET embedding = EXCLUDED.embedding, "
                                    "updated_at = CURRENT_TIMESTAMP", (p["prefix"], p["key"], f, text))
                    p["updated_at"], p["expires_at"] = _iso(updated), _iso(expires)
        except psycopg.Error as e:
            raise translate(e, self.target) from None


_LONG_NUMBER = re.compile(r"\d{19}")


def _pg_values(rows) -> list[tuple]:
    """Rows of _PG_ROW with their value (jsonb as text) parsed as psycopg's loader (json.loads)
    parsed it, by orjson where that is the same: not a number of 19 digits or more, which orjson
    reads as a float (or refuses) where json.loads keeps the integer, nor text orjson refuses."""
    out = []
    for r in rows:
        text = r[2]
        value = None
        if text is None:
            out.append(r)
            continue
        if _LONG_NUMBER.search(text) is None:
            try:
                value = orjson.loads(text)
            except ValueError:
                pass
        if value is None:  # also jsonb's null: json.loads gives None too
            value = json.loads(text)
        out.append((r[0], r[1], value, *r[3:]))
    return out


def _sample(conn) -> tuple[list[tuple], dict]:
    """The first items that have vectors, and their vectors: _name_model takes the store's vector
    size from them (the size most of them have) and identifies the model by their texts. (A count
    over every vector read the whole table before the first item could be mapped.)"""
    first = _pg_values(_fetch(conn, f"SELECT {_PG_ROW} FROM store s WHERE EXISTS (SELECT 1 FROM store_vectors v "
                                    "WHERE v.prefix = s.prefix AND v.key = s.key AND v.embedding IS NOT NULL) LIMIT 200",
                              (), True))
    return first, _vectors_of(conn, first)


def _fetch(conn, sql, params, binary: bool) -> list[tuple]:
    with conn.cursor(binary=binary) as cur:
        cur.execute(sql, params)
        return cur.fetchall()


def _token(conn) -> list:
    """Moves with every put, update, TTL refresh or delete (the sum of the rows' xmin: a new row
    version has a newer transaction's id, whatever order transactions committed in; a delete
    lowers the count) and with every expiry, by memviz's clock (the one the mapping retires by)."""
    n, versions, expired = conn.execute("SELECT count(*), sum(xmin::text::bigint), "
                                        "count(*) FILTER (WHERE expires_at <= %s) FROM store",
                                        (dt.datetime.now(dt.UTC),)).fetchone()
    return [n, None if versions is None else int(versions), expired]


def _after(x: int, xid: int) -> bool:
    """Transaction x is at or after xid (32-bit ids, as _WRITTEN_SINCE)."""
    return x >= 3 and (x - xid) % 2**32 < 2**31


def _versions(conn, xid: int) -> dict[tuple[str, str], int]:
    """(prefix, key) -> xmin of the rows written at or after transaction `xid`."""
    return {(p, k): x for p, k, x in conn.execute(f"SELECT prefix, key, xmin::text::bigint FROM store WHERE {_WRITTEN_SINCE}",
                                                  (xid,))}


def _vectors_of(conn, rows) -> dict:
    """(prefix, key) -> field_name -> float32 little-endian bytes of the items of `rows` (None: every item)."""
    out: dict = defaultdict(dict)
    sql = "SELECT v.prefix, v.key, v.field_name, vector_send(v.embedding::vector) FROM store_vectors v"
    params: tuple = ()
    if rows is not None:
        sql += " JOIN unnest(%s::text[], %s::text[]) AS w(prefix, key) ON v.prefix = w.prefix AND v.key = w.key"
        params = ([r[0] for r in rows], [r[1] for r in rows])
    fetched = _fetch(conn, sql + " WHERE v.embedding IS NOT NULL", params, True)
    for (prefix, key, field, _sent), vec in zip(fetched, vectors_as_bytes([r[3] for r in fetched])):
        out[(prefix, key)][field] = vec
    return out


SOURCES = [LangGraphSqlite, LangGraphPostgres]

__all__ = ["LangGraphSqlite", "LangGraphPostgres", "SOURCES", "namespace_roles", "text_at", "main_field", "memory_id",
           "looks_like_langgraph"]
