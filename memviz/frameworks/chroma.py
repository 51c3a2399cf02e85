"""Chroma persistent folders (`chromadb.PersistentClient(path)`), opened in place and read-only.
No Qt here.

A folder holds `chroma.sqlite3` (collections, segments, `embeddings` with one row per record,
`embedding_metadata` with its document under "chroma:document" and its metadata, and the
`embeddings_queue` write-ahead log) and one folder per collection's vector segment: an HNSW
index in hnswlib's split files (`header.bin`, `data_level0.bin`, `length.bin`,
`link_lists.bin`) and `index_metadata.pickle`, which maps record ids to HNSW labels.

A folder is untrusted input, so nothing in it is unpickled. Vectors come from
`data_level0.bin` read with hnswlib's layout (header.bin gives the element size and offsets;
each element: level-0 links, the float32 vector, the int64 label; a flag byte marks deleted
ones), each label named by `index_metadata.pickle` read with memviz's own reader of the few
pickle opcodes that build plain dicts of strings and numbers (pickletools decodes opcodes
without running any; a pickle naming a class or function is refused); then records the
index has not absorbed yet come from the queue (entries after the vector segment's max_seq_id,
vectors as little-endian float32 or int32 blobs by their `encoding`; a collection whose index
has no id map yet takes all its vectors from the queue). In a collection whose
space is cosine, hnswlib keeps vectors normalised: those are shown normalised.

Mapping: each collection is a kind (its name); agent: the metadata's agent_id / agent /
user_id / user when it is a string; content: the document (the metadata as JSON when there is
none); created_at: the `embeddings` row's; tags: a "tags" metadata list or comma-separated
string; the metadata, collection and Chroma id in attributes["chroma"]. id = id@collection.
Chroma keeps no importance and no history. Chroma records the name of the collection's
embedding function, not a model memviz can run: vectors are named unknown/chroma-<name>-<dim>d,
unless memviz's local model reproduces a few of a collection's documents' vectors.

Read-only: Chroma's own writes go through its server/client and its HNSW files, which memviz
does not rewrite; `memviz copy` makes an editable native copy.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import pickletools
from collections import defaultdict
from functools import lru_cache

import numpy as np

from ..store import StoreError
from ..tasks import Task
from .source import Source, identify_model, scoped_id
from .sqlite_reader import SqliteReader

DB_NAME = "chroma.sqlite3"
CHROMA_TABLES = {"collections", "segments", "embeddings", "embedding_metadata", "embeddings_queue"}
DOCUMENT_KEY = "chroma:document"
AGENT_KEYS = ("agent_id", "agent", "user_id", "user")
_ADD, _UPDATE, _UPSERT, _DELETE = 0, 1, 2, 3
_HNSW_FILES = ("header.bin", "data_level0.bin", "index_metadata.pickle")
_DELETED = 0x01  # hnswlib's DELETE_MARK in the flag byte of an element's level-0 link list


# ------------------------------------------------------------------ reading the folder's files
def read_plain_pickle(data: bytes):
    """The value of a pickle made only of dicts, lists, tuples, strings, numbers, booleans and
    None, decoded opcode by opcode (pickletools.genops runs nothing); any other opcode (a class,
    a function call, a persistent id) raises ValueError. Never pickle.load."""
    stack: list = []
    marks: list[int] = []
    memo: dict = {}
    values = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False}
    for op, arg, _pos in pickletools.genops(data):
        name = op.name
        if name in ("PROTO", "FRAME"):
            continue
        if name == "STOP":
            if len(stack) != 1:
                raise ValueError("a malformed pickle")
            return stack[0]
        if name in ("EMPTY_DICT", "EMPTY_LIST", "EMPTY_TUPLE"):
            stack.append({"EMPTY_DICT": {}, "EMPTY_LIST": [], "EMPTY_TUPLE": ()}[name])
        elif name in values:
            stack.append(values[name])
        elif name in ("BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8", "UNICODE", "BININT", "BININT1", "BININT2",
                      "LONG1", "LONG4", "INT", "LONG", "BINFLOAT", "FLOAT"):
            stack.append(arg)
        elif name == "MARK":
            marks.append(len(stack))
        elif name in ("SETITEMS", "APPENDS", "TUPLE"):
            at = marks.pop()
            items, stack[at:] = stack[at:], []
            if name == "TUPLE":
                stack.append(tuple(items))
            elif name == "SETITEMS":
                target = stack[-1]
                if not isinstance(target, dict):
                    raise ValueError("a malformed pickle")
                target.update(zip(items[::2], items[1::2]))
            else:
                stack[-1].extend(items)
        elif name == "SETITEM":
            v, k = stack.pop(), stack.pop()
            stack[-1][k] = v
        elif name == "APPEND":
            v = stack.pop()
            stack[-1].append(v)
        elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
            n = int(name[-1])
            items, stack[-n:] = stack[-n:], []
            stack.append(tuple(items))
        elif name in ("MEMOIZE", "BINPUT", "LONG_BINPUT", "PUT"):
            memo[len(memo) if name == "MEMOIZE" else arg] = stack[-1]
        elif name in ("BINGET", "LONG_BINGET", "GET"):
            stack.append(memo[arg])
        else:
            raise ValueError(f"the pickle uses {name}, which memviz does not read (it could run code)")
    raise ValueError("a pickle without its end")


def read_hnsw(folder: str, labels=None) -> dict[int, bytes]:
    """label -> vector (float32 bytes) of the live elements of an hnswlib index saved by Chroma (split files);
    `labels`: only those (the file is mapped, and only their elements copied)."""
    with open(os.path.join(folder, "header.bin"), "rb") as f:
        head = f.read(100)
    if len(head) < 100:
        raise ValueError("header.bin is shorter than hnswlib's header")
    # persist version, then hnswlib's saveIndex fields: offsetLevel0, max_elements, cur_element_count,
    # size_data_per_element, label_offset, offsetData (size_t each), maxlevel, enterpoint (int) ...
    _version, offset0, _max, count, size, label_off, data_off = np.frombuffer(head[:52], dtype="<i4,<u8,<u8,<u8,<u8,<u8,<u8")[0]
    count, size, label_off, data_off = int(count), int(size), int(label_off), int(data_off)
    dim = (label_off - data_off) // 4
    if count == 0:
        return {}
    if not (0 < data_off < label_off < size and dim > 0 and (label_off - data_off) % 4 == 0 and offset0 == 0):
        raise ValueError("header.bin does not describe an hnswlib index memviz can read")
    path = os.path.join(folder, "data_level0.bin")
    if os.path.getsize(path) < count * size:
        raise ValueError("data_level0.bin is shorter than header.bin says")
    if labels is None:
        rows = np.fromfile(path, dtype=np.uint8, count=count * size).reshape(count, size)
    else:
        rows = np.memmap(path, dtype=np.uint8, mode="r", shape=(count, size))
    all_labels = rows[:, label_off:label_off + 8].copy().view("<u8")[:, 0]
    live = (rows[:, 2] & _DELETED) == 0
    keep = live if labels is None else live & np.isin(all_labels, np.fromiter(labels, np.uint64))
    at = np.flatnonzero(keep)
    # one copy of every vector, cut into each one's bytes: the mirror writes them as they are
    flat, step = np.ascontiguousarray(rows[at, data_off:label_off]).tobytes(), int(label_off - data_off)
    return {int(lab): flat[i * step:(i + 1) * step] for i, lab in enumerate(all_labels[at].tolist())}


def _queue_vector(blob, encoding) -> bytes | None:
    """A queue entry's vector as float32 bytes."""
    if blob is None:
        return None
    enc = (encoding or "FLOAT32").upper()
    if enc == "FLOAT32" and len(blob) % 4 == 0:
        return bytes(blob)
    if enc == "INT32" and len(blob) % 4 == 0:
        return np.frombuffer(blob, dtype="<i4").astype("<f4").tobytes()
    return None


@lru_cache(maxsize=4096)  # Chroma stamps a batch's rows with one time (seconds): each text parsed once
def _epoch(text) -> int | None:
    if text is None:
        return None
    try:
        t = dt.datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return int((t if t.tzinfo else t.replace(tzinfo=dt.UTC)).timestamp())


# ------------------------------------------------------------------ the source
class ChromaFolder(Source):
    system = "chroma"
    title = "Chroma"
    edits = frozenset()

    def __init__(self, folder: str):
        super().__init__(folder)
        self.db = os.path.join(folder, DB_NAME)
        self._reader = SqliteReader(self.db, "reading the Chroma folder")
        self._seq: int | None = None   # the newest embeddings.seq_id of the last read (changed_since)
        self._models: dict = {}        # (collection id, dim) -> the name of its vectors
        self._names: dict = {}         # vector folder -> (index_metadata.pickle's stat, its labels, max_seq_id)

    @classmethod
    def recognise(cls, probe):
        if probe.is_dir and DB_NAME in probe.files():
            db = probe.path(DB_NAME)
        elif probe.is_file and os.path.basename(probe.target) == DB_NAME:
            db = probe.target
        else:
            return None
        if CHROMA_TABLES <= set(probe.sqlite_tables(db)):
            return cls(os.path.dirname(db))
        return None

    def describe(self) -> str:
        cols = self._q("SELECT c.name, (SELECT count(*) FROM embeddings e JOIN segments s ON s.id = e.segment_id "
                       "WHERE s.collection = c.id) FROM collections c ORDER BY c.name")
        n = sum(c for _n, c in cols)
        names = ", ".join(name for name, _c in cols[:6]) + (" …" if len(cols) > 6 else "")
        return (f"Chroma folder at {self.label}: {n:,} records in {len(cols)} collection{'s' * (len(cols) != 1)}"
                f" ({names}), read-only")

    def close(self) -> None:
        self._reader.close()

    def _q(self, sql, params=()):
        return self._reader.query(sql, params)

    def _vector_folders(self) -> dict[str, str]:
        """collection id -> its vector segment's folder."""
        return {coll: os.path.join(self.target, seg) for seg, coll in
                self._q("SELECT id, collection FROM segments WHERE scope = 'VECTOR'")}

    def token(self):
        marks = []
        paths = [self.db, self.db + "-wal"] + [os.path.join(d, f) for d in sorted(self._vector_folders().values())
                                                for f in _HNSW_FILES]
        for p in paths:
            try:
                st = os.stat(p)
                marks.append((st.st_ino, st.st_size, st.st_mtime_ns))
            except FileNotFoundError:
                marks.append(None)
        return [marks, self._q("PRAGMA data_version")[0][0]]

    # ---------------------------------------------------------------- records
    _ROWS = ("SELECT e.id, e.embedding_id, e.created_at, s.collection, e.seq_id FROM embeddings e "
             "JOIN segments s ON s.id = e.segment_id")

    def records(self, task: Task | None = None):
        """Every record, yielded one by one once the metadata and vectors are read (a mirror's
        first build writes the first while the rest are mapped)."""
        if task:
            task.progress(-1, "reading the Chroma folder")
        collections = self._collections()
        meta = self._metadata()
        vectors = self._vectors(collections, task)
        rows = self._q(self._ROWS + " ORDER BY e.id")
        self._seq = _newest_seq(rows, None)
        return self._mapped(rows, collections, meta, vectors, task)

    def in_step(self, token, model) -> None:
        """Chroma names its models per collection when it reads their vectors (changed_since,
        records): `model`, the mirror's main one, is not theirs."""
        seq = self._q("SELECT max(seq_id), count(*) FILTER (WHERE typeof(seq_id) != 'integer') FROM embeddings")[0]
        if self.token() == token and not seq[1]:  # nothing written since: the mirror holds up to seq
            self._seq = seq[0] if seq[0] is not None else -1

    def changed_since(self, token, known, task: Task | None = None):
        """The records Chroma wrote since the last read (embeddings.seq_id, the log position of a
        record's last add or update, above the newest one seen), with their metadata and vectors
        (the queue's newer entries, else the HNSW elements of just those labels); every id,
        listed only when the count says some were deleted. None before a first read."""
        if self._seq is None:
            return None
        collections = self._collections()
        with self._reader.snapshot():  # one snapshot of the rows, their metadata, the queue and the count
            rows = self._q(self._ROWS + " WHERE e.seq_id > ? ORDER BY e.id", (self._seq,))
            meta = self._metadata([r[0] for r in rows])
            vectors = self._vectors(collections, task, {(r[3], r[1]) for r in rows}) if rows else {}
            names = {cid: name for cid, (name, _d, _ef) in collections.items()}
            ids = [scoped_id(eid, names.get(coll, coll)) for _rid, eid, _c, coll, _s in rows]
            new = sum(1 for i in set(ids) if i not in known)
            deleted = self._q("SELECT count(*) FROM embeddings")[0][0] != len(known) + new
            present = [scoped_id(eid, names.get(coll, coll)) for eid, coll in self._q(
                "SELECT e.embedding_id, s.collection FROM embeddings e JOIN segments s ON s.id = e.segment_id")] \
                if deleted else [*known, *ids]
        self._seq = _newest_seq(rows, self._seq)
        self._name_models(collections, {(coll, len(v)) for (coll, _i), v in vectors.items()})
        return list(self._mapped(rows, collections, meta, vectors, task)), present

    def _name_models(self, collections, keys) -> None:
        """The names of the vectors of `keys` (collection id, dimension) not named yet (after a
        reopen), as a whole read names them: from the first 4 records of the collection with a
        document and a vector."""
        for coll in {c for c, _d in keys if (c, _d) not in self._models}:
            rows = self._q(self._ROWS + " WHERE s.collection = ? AND e.id IN (SELECT id FROM embedding_metadata "
                           "WHERE key = ?) ORDER BY e.id LIMIT 8", (coll, DOCUMENT_KEY))
            meta = self._metadata([r[0] for r in rows])
            vectors = self._vectors(collections, None, {(coll, r[1]) for r in rows})
            for _rec in self._mapped(rows, collections, meta, vectors, None):
                pass  # mapping names each (collection, dimension) met, from these rows' samples

    def _collections(self) -> dict[str, tuple]:
        """collection id -> (name, dimension, embedding function's name)."""
        cols = {r[1] for r in self._q("PRAGMA table_info(collections)")}
        extra = ", ".join(c if c in cols else "NULL" for c in ("config_json_str", "schema_str"))
        return {cid: (name, dim, _ef_name(cfg, schema)) for cid, name, dim, cfg, schema in
                self._q(f"SELECT id, name, dimension, {extra} FROM collections")}

    def _metadata(self, rowids=None) -> dict[int, dict]:
        """embeddings row id -> its metadata (every row's, or those of `rowids`)."""
        where = "" if rowids is None else " WHERE id IN (SELECT value FROM json_each(?))"
        params = () if rowids is None else (json.dumps(rowids),)
        meta: dict[int, dict] = defaultdict(dict)
        for rid, key, s, i, f, b in self._q("SELECT id, key, string_value, int_value, float_value, bool_value "
                                            "FROM embedding_metadata" + where, params):
            meta[rid][key] = s if s is not None else i if i is not None else f if f is not None else (bool(b) if b is not None else None)
        if self._q("SELECT 1 FROM sqlite_master WHERE name = 'embedding_metadata_array'"):
            for rid, key, s, i, f, b in self._q("SELECT id, key, string_value, int_value, float_value, bool_value "
                                                "FROM embedding_metadata_array" + where + " ORDER BY rowid", params):
                v = s if s is not None else i if i is not None else f if f is not None else bool(b)
                cur = meta[rid].get(key)
                meta[rid][key] = (cur if isinstance(cur, list) else []) + [v]
        return meta

    def _mapped(self, rows, collections, meta, vectors, task):
        samples = self._samples(rows, meta, vectors)
        for n, (rid, eid, created, coll, _seq) in enumerate(rows):
            if task and n % 20000 == 0:
                task.check()
            name, _dim, ef = collections.get(coll, (coll, None, None))
            md = meta.get(rid, {})  # popped from: each call reads its own
            doc = md.pop(DOCUMENT_KEY, None)
            agent = next((md[k] for k in AGENT_KEYS if isinstance(md.get(k), str)), "")
            made = _epoch(created) or 0
            rec = {
                "id": scoped_id(eid, name), "kind": name, "agent": agent,
                "content": doc if isinstance(doc, str) and doc.strip() else json.dumps(md, sort_keys=True, ensure_ascii=False),
                "created_at": made, "event_time": made, "tags": _tags(md.get("tags")),
                "attributes": {"chroma": {"collection": name, "id": eid, **({"metadata": md} if md else {})}},
            }
            vec = vectors.get((coll, eid))
            if vec is not None:
                rec["embedding"] = vec
                key = (coll, len(vec) // 4)
                if key not in self._models:  # memviz's local model when it reproduces a few of the collection's
                    self._models[key] = identify_model(f"chroma-{ef or 'embeddings'}", key[1], samples.get(coll, []))
                rec["embedding_model"] = self._models[key]
            yield rec

    def _samples(self, rows, meta, vectors) -> dict[str, list]:
        """collection id -> up to 4 (document, vector) pairs, for collections not named yet."""
        named = {coll for coll, _d in self._models}
        out: dict[str, list] = defaultdict(list)
        for rid, eid, _created, coll, _seq in rows:
            if coll in named or len(out[coll]) >= 4:
                continue
            doc, vec = meta.get(rid, {}).get(DOCUMENT_KEY), vectors.get((coll, eid))
            if vec is not None and isinstance(doc, str) and doc.strip():
                out[coll].append((doc, np.frombuffer(vec, dtype="<f4")))
        return out

    def _labels(self, folder: str, coll_name: str) -> tuple[dict[int, str], int | None]:
        """label -> record id of a vector segment (index_metadata.pickle, read again only when the
        file changed), and the max_seq_id it records."""
        path = os.path.join(folder, "index_metadata.pickle")
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return {}, None
        mark = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached = self._names.get(folder)
        if cached is not None and cached[0] == mark:
            return cached[1], cached[2]
        try:
            with open(path, "rb") as f:
                meta = read_plain_pickle(f.read())
            names = {int(lab): str(i) for lab, i in (meta.get("label_to_id") or {}).items()}
            if not names:
                names = {int(lab): str(i) for i, lab in (meta.get("id_to_label") or {}).items()}
            seq = meta["max_seq_id"] if isinstance(meta.get("max_seq_id"), int) else None
        except (ValueError, TypeError, AttributeError) as e:
            raise StoreError(f"Cannot read the vector index of the Chroma collection {coll_name!r} at {folder}: {e}") from None
        self._names[folder] = (mark, names, seq)
        return names, seq

    def _vectors(self, collections, task, wanted=None) -> dict[tuple[str, str], bytes]:
        """(collection id, record id) -> vector (float32 bytes): the HNSW index, then the queue's newer entries;
        `wanted`: only those (collection id, record id)."""
        out: dict[tuple[str, str], bytes] = {}
        seqs = dict(self._q("SELECT segment_id, seq_id FROM max_seq_id")) \
            if self._q("SELECT 1 FROM sqlite_master WHERE name = 'max_seq_id'") else {}
        after = {}
        for coll, folder in self._vector_folders().items():
            if wanted is not None and not any(c == coll for c, _i in wanted):
                continue
            coll_name = collections.get(coll, (coll,))[0]
            flushed = seqs.get(os.path.basename(folder))
            names, pickled_seq = self._labels(folder, coll_name)
            if flushed is None:
                flushed = pickled_seq
            if names and os.path.exists(os.path.join(folder, "header.bin")):
                labels = None if wanted is None else [lab for lab, i in names.items() if (coll, i) in wanted]
                try:
                    by_label = read_hnsw(folder, labels) if labels is None or labels else {}
                except (OSError, ValueError) as e:
                    raise StoreError(f"Cannot read the vector index of the Chroma collection "
                                     f"{coll_name!r} at {folder}: {e}") from None
                for lab, v in by_label.items():
                    if lab in names:
                        out[(coll, names[lab])] = v
            else:
                flushed = None  # nothing of this collection in an index: the whole queue counts
            after[coll] = flushed if flushed is not None else -1
        where, params = "", ()
        if wanted is not None:
            where = " WHERE seq_id > ? AND id IN (SELECT value FROM json_each(?))"
            params = (min(after.values(), default=-1), json.dumps(sorted({i for _c, i in wanted})))
        for seq, op, topic, rid, blob, enc in self._q("SELECT seq_id, operation, topic, id, vector, encoding "
                                                      f"FROM embeddings_queue{where} ORDER BY seq_id", params):
            coll = str(topic).rsplit("/", 1)[-1]
            if seq <= after.get(coll, -1) or (wanted is not None and (coll, rid) not in wanted):
                continue
            if op == _DELETE:
                out.pop((coll, rid), None)
            elif op in (_ADD, _UPDATE, _UPSERT):
                v = _queue_vector(blob, enc)
                if v is not None:
                    out[(coll, rid)] = v
        return out


def _newest_seq(rows, seq: int | None) -> int | None:
    """The newest seq_id among `rows` and `seq`; None (no changed_since) when Chroma stored
    them as blobs (versions before 0.5), which do not compare as numbers."""
    seqs = [r[4] for r in rows]
    if any(not isinstance(x, int) for x in seqs):
        return None
    return max(seqs + [seq if seq is not None else -1])


def _ef_name(cfg, schema) -> str | None:
    """The collection's embedding function's name as Chroma records it, if it does."""
    for text in (cfg, schema):
        try:
            found = _find_ef(json.loads(text)) if text else None
        except ValueError:
            found = None
        if found:
            return found
    return None


def _find_ef(obj):
    if isinstance(obj, dict):
        ef = obj.get("embedding_function")
        if isinstance(ef, dict) and isinstance(ef.get("name"), str):
            return ef["name"]
        for v in obj.values():
            got = _find_ef(v)
            if got:
                return got
    return None


def _tags(v) -> list[str]:
    if isinstance(v, list):
        return [str(t) for t in v]
    if isinstance(v, str):
        return [t.strip() for t in v.split(",") if t.strip()]
    return []


SOURCES = [ChromaFolder]

__all__ = ["ChromaFolder", "SOURCES", "read_plain_pickle", "read_hnsw"]
