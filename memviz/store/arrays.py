"""All memories as columnar numpy arrays: what the retrieval engine and the panels read."""
from __future__ import annotations

import json
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from operator import itemgetter

import apsw
import numpy as np
import orjson

from ..background import in_thread
from .errors import translate
from .records import MS_ABOVE, NUMBER_DEFAULTS, ODD_TYPES_SQL, TIME_COLUMNS, decode_text, json_ints, read_values
from .schema import BLOB_SIZE_SQL, JSON_OK_SQL, READ_INDEX
from .second_read import read_beside, second_reader
from .vec_chunks import likely_dim, place_read, read_chunks, read_from_index

ROOM = 1 / 2  # spare rows below a matrix read whole, as a share of its rows (at least 256): a live refresh
              # (session/buffers.py) appends new rows there without copying the matrix; untouched, they
              # are address space, not memory


def spare_rows(n: int) -> int:
    """The spare rows a buffer of `n` rows gets: ROOM of them, at least 256 (the matrix and every
    column of a live store, the int8 query index)."""
    return max(256, int(n * ROOM))


def rows_with_room(n: int, tail: tuple = (), dtype=np.float32, extra: int = 0) -> np.ndarray:
    """n zero rows (each of shape `tail`) that are the first rows of a buffer with spare_rows(n)
    (+ `extra`) spare rows."""
    return small_pages(np.zeros((n + extra + spare_rows(n),) + tuple(tail), dtype=dtype))[:n]


MADV_NOHUGEPAGE = 15
MADV_POPULATE_WRITE = 23  # Linux 5.14+


@lru_cache(maxsize=1)
def _madvise_call():
    """libc's madvise through ctypes, looked up once; None where there is none."""
    try:
        import ctypes  # noqa: PLC0415
        call = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return call


@lru_cache(maxsize=1)
def _trim_call():
    """glibc's malloc_trim through ctypes, looked up once; None where there is none (not glibc)."""
    try:
        import ctypes  # noqa: PLC0415
        call = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_size_t]
    return call


def give_back_freed() -> None:
    """Hand the heap a whole read freed back to the system (malloc_trim). A scan makes and drops
    hundreds of megabytes of JSON text, lists and Python numbers, in two threads, and the C
    library keeps freed heap pages for reuse: a quarter of a gigabyte of the window's resident
    memory at 1M rows (bench/resident.py's "freed, kept by malloc")."""
    call = _trim_call()
    if call is not None:
        call(0)


def madvise(block: np.ndarray, advice: int) -> bool:
    """madvise(2) on the whole pages inside `block`; False where there is no such call or it failed
    (not Linux, an older kernel). ctypes releases the GIL for the call."""
    call = _madvise_call()
    if call is None:
        return False
    page = 4096
    start = -(-block.ctypes.data // page) * page  # page-aligned, inside the block
    end = (block.ctypes.data + block.nbytes) // page * page
    return end > start and call(start, end - start, advice) == 0


def small_pages(block: np.ndarray) -> np.ndarray:
    """`block`, freshly allocated and not touched yet, kept on 4 KB pages. numpy asks for huge pages
    above 4 MB; where the kernel must first compact memory to make them (THP defrag "madvise" and a
    page cache filling the RAM), the first touch of a matrix costs several times the CPU it costs
    on small pages, and an open waits for that worst case; free huge pages would be only a little
    faster (bench/store.py's loads measure it)."""
    if block.nbytes >= _SMALL_PAGES_FROM:
        madvise(block, MADV_NOHUGEPAGE)
    return block


_SMALL_PAGES_FROM = 64 << 20  # the matrices; numpy's columns (8 MB per million rows) are left as they are


# A row's JSON columns are all well-formed (1); CASE skips parsing the usual empties. A whole read
# asks it apart from the scan (_BAD_JSON, beside it): it parses every row's attributes.
# (the expression the read index holds: schema.py)
_BAD_JSON = f"SELECT json_group_array(rowid) FROM memories WHERE ({JSON_OK_SQL}) IS NOT 1"   # NULL: not well-formed either

_SQL = """
SELECT rowid, CAST(id AS BLOB), CAST(kind AS BLOB), CAST(agent AS BLOB),
       CAST(importance AS REAL), CAST(event_time AS REAL), CAST(created_at AS REAL),
       CAST(last_accessed AS REAL), CAST(valid_until AS REAL), CAST(confidence AS REAL),
       CAST(decay_rate AS REAL), CAST(access_count AS INTEGER), CAST(protected AS INTEGER),
       embedding, {json_ok},
       CAST(coalesce(embedding_model, '') AS BLOB), CASE WHEN typeof(embedding) = 'blob' THEN length(embedding) END,
       {odd_types}
       {preview}
FROM memories {where} ORDER BY rowid
"""


class Later:
    """A MemoryArrays column that may still be being read when the arrays are handed out (a
    Future stands in its place): the first read of it waits for its value, every read gets it."""

    def __set_name__(self, owner, name):
        self.slot = "_later_" + name

    def __get__(self, obj, owner=None):
        if obj is None:
            raise AttributeError(self.slot)   # no default value: the field is required
        value = obj.__dict__[self.slot]
        if isinstance(value, Future):
            value = obj.__dict__[self.slot] = value.result()
        return value

    def __set__(self, obj, value):
        obj.__dict__[self.slot] = value


@dataclass
class MemoryArrays:
    """One row per memory (live and retired), in store order (rowid)."""

    ids: np.ndarray            # object: str
    rowid: np.ndarray          # int64
    kind: np.ndarray           # object: str
    agent: np.ndarray          # object: str
    importance: np.ndarray     # float64
    event_time: np.ndarray     # float64 epoch seconds
    created_at: np.ndarray
    last_accessed: np.ndarray  # NaN = never
    valid_until: np.ndarray    # NaN = current
    confidence: np.ndarray
    decay_rate: np.ndarray
    access_count: np.ndarray   # int64
    protected: np.ndarray      # bool
    embedding: np.ndarray      # float32 (n, dim), unit-normalised; zero rows where has_embedding is False;
                               # may be read-only (a view of what SQLite returned): copy to modify
    has_embedding: np.ndarray  # bool
    embedding_model: str | None
    bad_json: np.ndarray = Later()  # bool: a JSON column of the row is malformed (a whole read's comes
                                    # from a pass beside it, which a first read of it may wait for)
    bad_text: np.ndarray       # bool: id/kind/agent held invalid UTF-8
    preview: np.ndarray | None = None  # object: the start of each content on one line (when asked for)
    bad_value: np.ndarray | None = None  # bool: a time or number of the row could not be read (records.read_values)
    _index: dict | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def live(self) -> np.ndarray:
        return np.isnan(self.valid_until)

    @property
    def dim(self) -> int:
        return self.embedding.shape[1]

    def settle(self) -> MemoryArrays:
        """Wait for every column still being read (Later) and return self: a reader that hands
        the arrays to a thread that must not wait (the GUI's) calls it first."""
        for name, column in vars(MemoryArrays).items():
            if isinstance(column, Later):
                getattr(self, name)
        return self

    def index_of(self, memory_id: str) -> int | None:
        if self._index is None:
            self._index = {m: i for i, m in enumerate(self.ids)}
        return self._index.get(memory_id)


def load_arrays(conn, model: str | None = None, dim: int | None = None, preview: int = 0,
                in_sqlite: bool = True, rowids=None) -> MemoryArrays:
    """All memories in one scan. `model` None = the most used (model, dim), as
    `Store.main_model()`; `dim` None = the most used dimension of `model`. `preview` > 0 also
    reads the first `preview` characters of each content (newlines and tabs made spaces).
    `in_sqlite` False skips the fast scan and reads row by row (what it falls back to).
    `rowids`: only these rows (a live refresh reads what changed; pass `model` and `dim`)."""
    with one_read(conn):   # through SQLite's page cache: a map of the file saved no time here (connection.py)
        arrays = _load(conn, model, dim, preview, in_sqlite, rowids)   # the columns and the vectors, by
                                                                        # separate statements, from one state
    if rowids is None:
        give_back_freed()
    return arrays


@contextmanager
def one_read(conn):
    """A savepoint around reads that must agree (the scan; a change token): every statement inside
    sees the same committed state."""
    try:
        conn.execute("SAVEPOINT memviz_scan")
    except apsw.Error:
        yield  # cannot open one (the scan still runs; each statement sees a consistent state)
        return
    try:
        yield
    except BaseException:
        # the error stands: a savepoint SQLite already rolled back with its transaction (out of
        # memory, damage) is not released again, which would replace it with "no such savepoint"
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK TO memviz_scan; RELEASE memviz_scan")
            except apsw.Error:
                pass
        raise
    if conn.in_transaction:
        conn.execute("RELEASE memviz_scan")


def _load(conn, model, dim, preview, in_sqlite, rowids=None) -> MemoryArrays:
    if rowids is not None:
        c = _scan_by_row(conn, preview, [int(r) for r in rowids])
    else:
        c = (_scan_in_sqlite(conn, preview) if in_sqlite else None) or _scan_by_row(conn, preview)
    n = len(c["rowid"])

    def num(col, dtype=np.float64):
        return np.asarray(col, dtype=dtype) if n else np.zeros(0, dtype)

    # which (model, size) fills the matrix: model names as bytes (NULL = b""), blob sizes (-1 = no blob)
    model_code = c["model_code"]
    names = {(m.encode("utf-8", "surrogatepass") if isinstance(m, str) else m): i for i, m in enumerate(c["model_names"])}
    size = np.nan_to_num(num(c["size"]), nan=-1).astype(np.int64)
    key, dim = pick_model(list(names), model_code, size,
                           None if model is None else model.encode("utf-8", "surrogatepass"), dim)
    model = None if key is None else decode_text(key)[0]
    nbytes = 4 * dim
    has = (model_code == names.get(key, -1)) & (size == nbytes) & (size > 0)
    if nbytes and has.any():
        emb = normalize_rows(c["vectors"](has, size, nbytes), has)
    else:
        emb = np.zeros((n, dim), dtype=np.float32)
    if c.get("settle"):
        c["settle"]()  # a read of the vectors started early has ended before the savepoint does
    access = num(c["access_count"])
    odd_access = ~np.isfinite(access)  # an agent's inf: read again below with the other odd values
    arrays = MemoryArrays(
        ids=c["ids"],
        rowid=num(c["rowid"], np.int64),
        kind=c["kind"],
        agent=c["agent"],
        importance=num(c["importance"]),
        event_time=num(c["event_time"]),
        created_at=num(c["created_at"]),
        last_accessed=num(c["last_accessed"]),
        valid_until=num(c["valid_until"]),
        confidence=num(c["confidence"]),
        decay_rate=num(c["decay_rate"]),
        access_count=np.clip(np.where(odd_access, 0, access), -2.0 ** 63, 2.0 ** 63 - 1024).astype(np.int64),
        protected=np.nan_to_num(num(c["protected"])).astype(bool),
        embedding=emb,
        has_embedding=has,
        embedding_model=model,
        bad_json=c["bad_json"],
        bad_text=c["bad_text"],
        preview=c["preview"] if preview > 0 else None,
    )
    arrays.bad_value = _read_odd_values(conn, arrays, [*c["odd_types"], *arrays.rowid[odd_access].tolist()])
    return arrays


def _read_odd_values(conn, a: MemoryArrays, odd_types) -> np.ndarray:
    """The rows whose times or numbers are not plain numbers in range (ISO text, milliseconds,
    'yesterday', 'very high', inf: an agent wrote them) read again through the one row reader:
    the scan's CAST AS REAL would make '2026-03-01T12:00Z' the year 2026 seconds. `odd_types`:
    rowids the scan found holding another type; milliseconds and non-finite numbers are found
    here on the arrays. Unreadable times become NaN (valid_until: 0, still retired), unreadable
    numbers the column's default. Returns the per-row flag of values that could not be read."""
    bad = np.zeros(len(a), dtype=bool)
    odd = np.zeros(len(a), dtype=bool)
    for col in TIME_COLUMNS:
        odd |= np.abs(np.nan_to_num(getattr(a, col))) >= MS_ABOVE
    for col in NUMBER_DEFAULTS:
        odd |= ~np.isfinite(getattr(a, col))
    rowids = sorted(set(a.rowid[odd].tolist()) | set(odd_types))
    if not rowids:
        return bad
    where = {r: i for i, r in enumerate(a.rowid.tolist())}
    cols = TIME_COLUMNS + tuple(NUMBER_DEFAULTS)
    for k in range(0, len(rowids), 500):
        chunk = rowids[k:k + 500]
        for rowid, *values in conn.execute(
                f"SELECT rowid, {', '.join(cols)} FROM memories WHERE rowid IN ({','.join('?' * len(chunk))})", chunk):
            i = where.get(rowid)
            if i is None:
                continue
            row = dict(zip(cols, values))
            bad[i] = bool(read_values(row))
            for col in TIME_COLUMNS:
                v = row[col]
                getattr(a, col)[i] = (0.0 if col == "valid_until" and values[cols.index(col)] is not None else np.nan) \
                    if v is None else v
            for col in NUMBER_DEFAULTS:
                getattr(a, col)[i] = row[col]
    return bad


#: the MemoryArrays columns read as numbers (both backends' scans and WrittenColumns')
NUMERIC_COLUMNS = ("importance", "event_time", "created_at", "last_accessed", "valid_until", "confidence", "decay_rate",
            "access_count", "protected")


_SQL = _SQL.replace("{odd_types}", ODD_TYPES_SQL).replace("{json_ok}", JSON_OK_SQL)
#: the columns of _SQL's rows, in order (`preview` only when asked for)
_ROW_COLUMNS = ("rowid", "id", "kind", "agent", *NUMERIC_COLUMNS, "embedding", "json_ok", "model", "size", "odd_type", "preview")


def _scan_by_row(conn, preview: int, rowids: list[int] | None = None) -> dict:
    """Every row (or those of `rowids`) as a tuple: exact for any content (invalid UTF-8 is
    replaced and flagged)."""
    sql = _SQL.replace("{preview}", f", CAST(substr(content, 1, {int(preview)}) AS BLOB)" if preview > 0 else "")
    where = "" if rowids is None else "WHERE rowid IN (SELECT value FROM json_each(?))"
    rows = conn.execute(sql.replace("{where}", where), () if rowids is None else (json.dumps(rowids),)).fetchall()
    cols = dict(zip(_ROW_COLUMNS, zip(*rows))) if rows else dict.fromkeys(_ROW_COLUMNS, ())
    ids, b1 = _texts(cols["id"])
    kind, b2 = _texts(cols["kind"])
    agent, b3 = _texts(cols["agent"])
    kind[:], agent[:] = one_of_each(kind.tolist()), one_of_each(agent.tolist())
    blobs = cols["embedding"]

    def vectors(has, size, nbytes):
        # one writable buffer, zero rows where a memory has no vector of this model: a single copy
        zero = bytes(nbytes)
        buf = bytearray().join(blobs if has.all() else (b if h else zero for b, h in zip(blobs, has.tolist())))
        return np.frombuffer(buf, dtype="<f4").reshape(len(has), nbytes // 4)
    return {"rowid": cols["rowid"], "ids": ids, "kind": kind, "agent": agent, "bad_text": b1 | b2 | b3,
            **{name: cols[name] for name in NUMERIC_COLUMNS}, **_model_codes(cols["model"]),
            "bad_json": ~np.nan_to_num(np.asarray(cols["json_ok"], np.float64)).astype(bool),
            "size": cols["size"], "odd_types": [r for r, odd in zip(cols["rowid"], cols["odd_type"]) if odd],
            "preview": one_line(cols["preview"]) if preview > 0 else None, "vectors": vectors}


# Every column aggregated inside SQLite into one JSON array (numbers round-trip exactly): no Python
# object per cell, and SQLite works with the GIL released, so at launch the scan runs beside the
# imports of Qt. The vectors follow in a second pass (_read_vectors). Text that is not valid UTF-8
# (or a value JSON cannot hold: a blob where a number belongs) makes it fail, and _scan_by_row
# reads the store instead. Times and numbers come as stored, so the JSON says which are not
# numbers (a quoted string, a null where a value belongs: _NULL_IS_VALUE) without a typeof() per
# cell, a quarter of the scan.
_AGG_EXPR = {
    "protected": "CAST(protected AS INTEGER)",
    "model": "coalesce(embedding_model, '')",
    "size": BLOB_SIZE_SQL,
}
# The value most rows hold in a column (SQL; ?1 and ?2: the first row's model and blob size, a store's
# vectors being mostly of one model): only the rows holding another are sent, as [rowid, value]
# pairs, and the column is filled with it. Comparing a value costs less than formatting and parsing
# it (a fifth of the scan at a million rows); a column where most rows differ costs a third more.
_MOSTLY = {"valid_until": "NULL", "confidence": "1.0", "decay_rate": "0.1", "protected": "0",
           "model": "?1", "size": "?2"}
#: the columns of _SQL_AGG's one row, in order: each a JSON array over every row (over the other
#: rows' [rowid, value] for those of _MOSTLY)
_AGG_COLUMNS = ("rowid", "id", *NUMERIC_COLUMNS, "model", "size", "preview")
_AGG = {name: i for i, name in enumerate(_AGG_COLUMNS)}
_SQL_AGG_SELECT = "SELECT " + ",\n       ".join(
    "{preview}" if c == "preview" else
    f"json_group_array(json_array(rowid, {_AGG_EXPR.get(c, c)})) FILTER (WHERE ({_AGG_EXPR.get(c, c)}) IS NOT {_MOSTLY[c]})"
    if c in _MOSTLY else f"json_group_array({_AGG_EXPR.get(c, c)})" for c in _AGG_COLUMNS)
_SQL_AGG = _SQL_AGG_SELECT + "\nFROM memories WHERE rowid BETWEEN ?3 AND ?4"   # in rowid order (checked on the result)
# Where the store has the read index (schema.READ_INDEX), SQLite scans it for every column but the
# previews (a tenth of the pages): in the index's order, which the caller sorts by rowid.
_SQL_AGG_INDEXED = _SQL_AGG_SELECT.replace("{preview}", "NULL") + "\nFROM memories"
_PREVIEWS_ALONE = "SELECT {0} FROM memories WHERE rowid BETWEEN ?1 AND ?2"
# ... and the second connection reads the previews after the vectors, the last share here, after
# the scan and its decoding: both then end about together
_PREVIEWS_HERE = 0.15
_FIRST_ROW = ("SELECT " + ", ".join(_AGG_EXPR[c] for c in ("model", "size")) +
              " FROM memories WHERE rowid = (SELECT min(rowid) FROM memories)")
#: time or number column -> whether NULL is a value there (else it is an odd one, as a string is)
_NULL_IS_VALUE = {"importance": False, "event_time": False, "created_at": False, "last_accessed": True,
                  "valid_until": True, "confidence": False, "decay_rate": False, "access_count": False}
# The previews are most of what the scan sends (240 characters a row): joined by NUL, not as JSON
# strings (SQLite escapes every character, orjson unescapes it), made one line and split in Python.
# A content holding NUL splits into more parts than rows: the column is then read as JSON.
_PREVIEWS = "group_concat(coalesce(substr(content, 1, {0}), ''), char(0))"
_PREVIEWS_JSON = "SELECT json_group_array(coalesce(substr(content, 1, ?1), '')) FROM memories WHERE rowid BETWEEN ?2 AND ?3"
# Kinds and agents are a few distinct texts: read as the rows of each (kind, agent), through the
# index on (agent, kind) where the store has one, not as a string per row (a sixth of the decoding).
# A GROUP BY takes 5 and 5.0 for one value, so a key that is not text falls back to the JSON of each row.
_KIND_AGENT = ("SELECT kind, agent, json_group_array(rowid) FROM memories "
               "GROUP BY agent COLLATE BINARY, kind COLLATE BINARY")   # a NOCASE column's 'Fact' is not 'fact'
_KIND_AGENT_ROWS = "SELECT json_group_array(kind), json_group_array(agent) FROM memories"
# With a second connection (second_read.py) the rows after a split are scanned there, after it has
# copied the vector chunks: it takes this share of the rowids, from this many.
_BESIDE_SHARE = 0.3
_SPLIT_FROM = 20_000
_NO_INT = "-9223372036854775808"   # int64's least value: stands for null in a column of integers


def _pairs(text: str, rowid: np.ndarray) -> tuple[list, np.ndarray]:
    """A column of _MOSTLY as sent: (its values, the positions of their rows in `rowid`)."""
    pairs = _loads(text)
    return [p[1] for p in pairs], np.searchsorted(rowid, np.fromiter((p[0] for p in pairs), np.int64, count=len(pairs)))


def _spread(values: list, at: np.ndarray, n: int, mostly):
    """Every row's value as a float64 array: `mostly`, but `values` at the positions `at` (None: NaN)."""
    out = np.full(n, np.nan if mostly is None else float(mostly))
    if len(at):
        out[at] = np.array(values, dtype=np.float64)
    return out


def _numbers(text: str, n: int) -> np.ndarray | None:
    """A JSON array of `n` integers, whole reals and nulls (times, counts and importances as an
    agent writes them) as float64, null as NaN: parsed by numpy, not as a Python object per value.
    None where it holds anything else (a fraction, a string, an exponent, infinity): the caller
    reads it through _loads."""
    if '"' in text or "e" in text or "E" in text:   # "null" holds no e
        return None
    points = text.count(".")
    if points:   # whole reals as SQLite writes them: "6.0"
        if text.count(".0,") + text.count(".0]") != points or "-0.0" in text:   # -0.0 keeps its sign
            return None
        text = text.replace(".0,", ",").replace(".0]", "]")
    nulls = "null" in text
    if nulls:
        if _NO_INT in text:
            return None
        text = text.replace("null", _NO_INT)
    body = text[1:-1]
    if not body.strip():
        return np.zeros(0) if n == 0 else None
    try:
        ints = np.fromstring(body, dtype=np.int64, sep=",")
    except ValueError:
        return None
    if len(ints) != n:
        return None
    out = ints.astype(np.float64)
    if nulls:
        out[ints == np.iinfo(np.int64).min] = np.nan
    return out


def _kinds_and_agents(conn, rowid: np.ndarray, groups=None) -> tuple[np.ndarray, np.ndarray]:
    """The kind and agent of every row (`rowid`: the scan's, ascending) as object arrays, "" for
    NULL, each distinct text one object (as one_of_each). `groups`: _KIND_AGENT's rows where
    they were read beside the scan."""
    n = len(rowid)
    kind, agent = np.empty(n, dtype=object), np.empty(n, dtype=object)
    groups = conn.execute(_KIND_AGENT).fetchall() if groups is None else groups
    if all(type(k) in (str, type(None)) and type(a) in (str, type(None)) for k, a, _ in groups):
        same: dict = {}
        filled = 0
        for k, a, rows in groups:
            want = json_ints(rows)
            if want is None:
                break
            at = np.searchsorted(rowid, want)
            if len(want) and (at.max() >= n or not np.array_equal(rowid[at], want)):
                break
            kind[at] = same.setdefault(("k", k or ""), k or "")
            agent[at] = same.setdefault(("a", a or ""), a or "")
            filled += len(at)
        else:
            if filled == n:
                return kind, agent
    # a kind or agent stored as a number or a blob: every row's value as it is
    k, a = conn.execute(_KIND_AGENT_ROWS).fetchone()
    kind[:], agent[:] = one_of_each(_loads(k)), one_of_each(_loads(a))
    kind[np.equal(kind, None)] = ""
    agent[np.equal(agent, None)] = ""
    return kind, agent


def _texts_of(col) -> np.ndarray:
    """A column of texts as an object array, NULL read as "" (as in _scan_by_row)."""
    out = np.empty(len(col), dtype=object)
    out[:] = col
    out[np.equal(out, None)] = ""
    return out


def _keys(row: list, mostly: dict, sort: bool = False) -> dict | None:
    """The rowids, ids (and their JSON text) and blob sizes of one part of the scan (_SQL_AGG's
    row); None where the aggregate did not see the rows in rowid order. `sort`: rows in another
    order are put in rowid order, and "order" says from where (None: they were in it)."""
    text = row[_AGG["rowid"]]
    rowid = json_ints(text)
    rowid = np.array(_loads(text), dtype=np.int64) if rowid is None else rowid
    order = None
    if len(rowid) > 1 and not (np.diff(rowid) > 0).all():
        if not sort:
            return None
        order = np.argsort(rowid, kind="stable")
        rowid = rowid[order]
        if not (np.diff(rowid) > 0).all():
            return None   # a rowid twice
    size = np.nan_to_num(_spread(*_pairs(row[_AGG["size"]], rowid), len(rowid), mostly["size"]), nan=-1).astype(np.int64)
    ids_json = row[_AGG["id"]]
    ids = _texts_of(_loads(ids_json))
    if order is not None:
        ids, ids_json = ids[order], None   # the JSON of the sorted ids is made where it is compared
    return {"rowid": rowid, "size": size, "ids": ids, "ids_json": ids_json, "order": order}


def _values(row: list, rowid: np.ndarray, mostly: dict, order: np.ndarray | None = None) -> tuple[dict, list]:
    """The model, time and number columns of one part of the scan (its texts dropped
    from `row` as they are read), and the rowids of its odd values. `order`: _keys' (the
    scan's rows were in another order than `rowid`'s)."""
    n, cols, odd = len(rowid), {}, set()
    place = None   # a row's place in rowid order, by its place in the scan
    if order is not None:
        place = np.empty(n, np.int64)
        place[order] = np.arange(n)
    # one column at a time, its JSON text dropped once read and numbers made an array at once:
    # at a million rows the texts and the lists of floats together would be half a gigabyte
    for name in ("model", *NUMERIC_COLUMNS):
        i = _AGG[name]
        if name in _NULL_IS_VALUE and name not in _MOSTLY:
            fast = _numbers(row[i], n)   # integers and nulls, the usual times and counts
            if fast is not None:
                row[i] = None
                cols[name] = fast if order is None else fast[order]
                if _NULL_IS_VALUE[name] is False:
                    odd.update(np.flatnonzero(np.isnan(cols[name])).tolist())   # NULL where a value belongs
                continue
        # a column of _MOSTLY comes as the other rows' values and their positions `at`
        value, at = _pairs(row[i], rowid) if name in _MOSTLY else (_loads(row[i]), None)
        if name in _NULL_IS_VALUE and '"' in row[i]:   # text in a number column (ISO times, 'very high')
            strings = [j for j, v in enumerate(value) if type(v) is str]
            where = at if at is not None else place   # the rows of the values in rowid order (None: the same)
            odd.update(strings if where is None else where[strings].tolist())
            for j in strings:
                value[j] = None
        row[i] = None
        if name == "model":   # the other rows' names and their rows (_model_codes)
            cols[name] = (value, at)
            continue
        if at is not None:
            value = _spread(value, at, n, mostly[name])
        cols[name] = np.asarray(value, dtype=np.float64)
        if at is None and order is not None:
            cols[name] = cols[name][order]
        if _NULL_IS_VALUE.get(name) is False:
            odd.update(np.flatnonzero(np.isnan(cols[name])).tolist())   # NULL where a value belongs
        del value
    return cols, rowid[sorted(odd)].tolist()


def _mostly(first: tuple) -> dict:
    """_MOSTLY's values as the decoding compares them: numbers (None: NULL), and the first row's
    model and blob size (`first`: _FIRST_ROW's)."""
    return {**{c: None if v == "NULL" else float(v) for c, v in _MOSTLY.items() if c not in ("model", "size")},
            "model": first[0], "size": first[1]}


def _from_chunks(conn, read, ids: np.ndarray, rowid: np.ndarray, size: np.ndarray, has: np.ndarray, nbytes: int,
                 ids_json: str | None) -> np.ndarray | None:
    """The matrix placed from the vec0 chunks a second connection `read` (place_read), with zeros for
    the rows of that size but another model's; None where they cannot give it. `ids_json`: `ids`
    as JSON text, made here where the scan's text is not in rowid order (None)."""
    if read is None or read.nbytes != nbytes:
        return None
    n = len(ids)
    if ids_json is None and n:
        ids_json = orjson.dumps(ids.tolist()).decode()   # compared with the index's ids as text
    out = place_read(conn, read, ids, rowid, size == nbytes, n + spare_rows(n), _matrix, ids_json)
    if out is not None:
        out[(size == nbytes) & ~has] = 0   # the same size but another model's vector
    return out


def _or_none(read):
    """What read() returns, None where it fails: what a second connection cannot read is read
    again on the caller's."""
    try:
        return read()
    except (apsw.Error, UnicodeError, ValueError):
        return None


def _scan_in_sqlite(conn, preview: int) -> dict | None:
    sql = _SQL_AGG.replace("{preview}", _PREVIEWS.format(int(preview)) if preview > 0 else "NULL")
    early = beside = None
    try:
        second = second_reader(conn)   # opened before this connection's read begins (second_read.py)
        first = conn.execute(_FIRST_ROW).fetchone() or ("", None)
        lo, hi = conn.execute("SELECT min(rowid), max(rowid) FROM memories").fetchone()
        lo, hi = (1, 0) if lo is None else (lo, hi)
        split = hi if second is None or hi - lo < _SPLIT_FROM else lo + int((hi - lo) * (1 - _BESIDE_SHARE))
        dim = likely_dim(conn) if second is not None else 0
        if conn.execute(_HAS_READ_INDEX).fetchone():
            return _scan_indexed(conn, second, preview, first, lo, hi, dim)
        if second is not None:
            # on the other core: first the vectors of the dimension with the most (a store's are mostly
            # of one), while this connection scans the rows up to `split` (SQLite: neither thread
            # waits for Python's lock); then the rows after it and the kinds and agents, while this
            # one decodes its part; last the rows with a malformed JSON column, while this one places
            # the vectors and after the arrays are handed out (their bad_json waits for it)
            def work(other):
                try:
                    chunks.set_result(_or_none(lambda: read_chunks(other, dim, _matrix, hi - lo + 1)) if dim else None)
                    part.set_result((_or_none(lambda: other.execute(sql, (*first, split + 1, hi)).fetchone())
                                     if split < hi else None, _or_none(lambda: other.execute(_KIND_AGENT).fetchall())))
                    json_rows.set_result(_bad_json_rows(other, again=True))
                except BaseException as e:  # noqa: BLE001 - handed to whoever reads bad_json
                    if not json_rows.done():
                        json_rows.set_exception(e)
                finally:
                    for f, none in ((chunks, None), (part, (None, None))):
                        if not f.done():
                            f.set_result(none)   # this connection reads them
            chunks, part, json_rows = Future(), Future(), Future()
            beside = read_beside(conn, second, work, "memviz-vectors")
        mostly = _mostly(first)
        row = list(conn.execute(sql, (*first, lo, split)).fetchone())
        values = lines = None
        if split < hi:   # this part decoded while the other connection scans the rest
            keys = _keys(row, mostly)
            if keys is None:
                return None   # the aggregate did not see the rows in rowid order: read them one by one
            values = _values(row, keys["rowid"], mostly)
            if preview > 0:
                lines = _preview_lines(conn, row[_AGG["preview"]], len(keys["rowid"]), preview, lo, split)
            rest, groups = part.result() if beside is not None else (None, None)
            rest = list(rest or conn.execute(sql, (*first, split + 1, hi)).fetchone())
            more = _keys(rest, mostly)
            if more is None or (len(more["rowid"]) and len(keys["rowid"]) and more["rowid"][0] <= keys["rowid"][-1]):
                return None
            values = _merged(values, _values(rest, more["rowid"], mostly), len(keys["rowid"]))
            keys = {"rowid": np.concatenate((keys["rowid"], more["rowid"])), "size": np.concatenate((keys["size"], more["size"])),
                    "ids": np.concatenate((keys["ids"], more["ids"])), "ids_json": _joined(keys["ids_json"], more["ids_json"])}
            if preview > 0:
                lines += _preview_lines(conn, rest[_AGG["preview"]], len(more["rowid"]), preview, split + 1, hi)
            del rest, more
        else:
            groups = part.result()[1] if beside is not None else None
            keys = _keys(row, mostly)
            if keys is None:
                return None
        rowid, size, ids = keys["rowid"], keys["size"], keys["ids"]
        n = len(rowid)
        guess = _common_size(size)
        if preview > 0:   # before the vectors' thread takes the connection (a NUL in a content reads it again)
            if lines is None:
                lines = _preview_lines(conn, row[_AGG["preview"]], n, preview, lo, hi)
            previews = np.empty(n, dtype=object)
            previews[:] = lines
            del lines
        row[_AGG["preview"]] = None
        kind, agent = _kinds_and_agents(conn, rowid, groups)   # before the vectors' thread takes the connection
        if beside is None:   # no second connection: the JSON columns checked here, in the read
            bad_json = _flagged(rowid, _bad_json_rows(conn))
        else:
            bad_json = Future()
            json_rows.add_done_callback(lambda f: _settle(bad_json, lambda: _flagged(rowid, f.result())))
            if guess != 4 * dim:
                chunks.result()   # of another size than most: read below
                beside = None
        if guess and beside is None:
            # the vectors of the most common size are read (SQLite, no GIL) while the columns are decoded
            early = in_thread(lambda: _read_vectors(conn, rowid, size, size == guess, guess, ids), "memviz-vectors")
        cols, odd_types = values if values is not None else _values(row, rowid, mostly)
        del row
    except (apsw.Error, UnicodeError, ValueError, TypeError):
        if early is not None:
            early.exception()   # let it finish before the scan falls back (one reader at a time)
        return None

    def vectors(has, size_, nbytes):
        out = _from_chunks(conn, chunks.result() if beside is not None else None, ids, rowid, size_, has, nbytes,
                           keys["ids_json"])
        if out is not None:
            return out
        if early is not None and nbytes == guess:
            out = early.result()
            out[(size_ == nbytes) & ~has] = 0   # the same size but another model's vector
            return out
        if early is not None:
            early.exception()
        return _read_vectors(conn, rowid, size_, has, nbytes, ids)

    return {"rowid": rowid, "ids": ids, "kind": kind, "agent": agent,
            "bad_text": np.zeros(n, bool), **{name: cols[name] for name in NUMERIC_COLUMNS}, "bad_json": bad_json,
            **_model_codes(*cols["model"], n, mostly["model"]), "size": size,  # str here (valid UTF-8)
            "odd_types": odd_types, "preview": previews if preview > 0 else None, "vectors": vectors,
            "settle": lambda: [f.exception() for f in (early, chunks if beside is not None else None) if f is not None]}


_HAS_READ_INDEX = f"SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = '{READ_INDEX}' AND tbl_name = 'memories'"


def _scan_indexed(conn, second, preview: int, first: tuple, lo: int, hi: int, dim: int) -> dict | None:
    """_scan_in_sqlite's read of a store with the read index: every column but the previews in one
    scan of the index on this connection (a table scan would read every vector's bytes with the
    rows), sorted here by rowid, then the kinds and agents and the rows with a malformed JSON column
    (the index holds that); on the other, the vectors' chunks, then the first part of the previews
    (the table's pages), while this one reads the rest after its own work. `second`:
    second_reader's, None where there is none (all of it read here)."""
    previews_sql = _PREVIEWS_ALONE.format(_PREVIEWS.format(int(preview)))
    split = hi if second is None else lo + int((hi - lo) * (1 - _PREVIEWS_HERE))
    beside = None
    if second is not None:
        def work(other):
            return (_or_none(lambda: read_chunks(other, dim, _matrix, hi - lo + 1)) if dim else None,
                    _or_none(lambda: other.execute(previews_sql, (lo, split)).fetchone()[0]) if preview > 0 else None)
        beside = read_beside(conn, second, work, "memviz-vectors")
        split = split if beside is not None else hi
    mostly = _mostly(first)
    try:
        row = list(conn.execute(_SQL_AGG_INDEXED, first).fetchone())
        keys = _keys(row, mostly, sort=True)
        if keys is None:
            raise ValueError("a rowid twice")
        rowid, size, ids = keys["rowid"], keys["size"], keys["ids"]
        n = len(rowid)
        cols, odd_types = _values(row, rowid, mostly, keys["order"])
        del row
        kind, agent = _kinds_and_agents(conn, rowid)
        bad_json = _flagged(rowid, _bad_json_rows(conn))
        previews = None
        if preview > 0:
            rest = conn.execute(previews_sql, (split + 1, hi)).fetchone()[0] if split < hi else None
            chunks, text = beside.result() if beside is not None else (None, None)
            text = conn.execute(previews_sql, (lo, split)).fetchone()[0] if beside is None else text
            part = int(np.searchsorted(rowid, split, side="right"))   # the rows up to the split
            previews = np.empty(n, dtype=object)
            previews[:part] = _preview_lines(conn, text, part, preview, lo, split)
            previews[part:] = _preview_lines(conn, rest, n - part, preview, split + 1, hi)
            del text, rest
        else:
            chunks = beside.result()[0] if beside is not None else None
    except (apsw.Error, UnicodeError, ValueError, TypeError):
        if beside is not None:
            beside.exception()   # let it end before the scan falls back
        return None

    def vectors(has, size_, nbytes):
        out = _from_chunks(conn, chunks, ids, rowid, size_, has, nbytes, keys["ids_json"])
        return out if out is not None else _read_vectors(conn, rowid, size_, has, nbytes, ids)

    return {"rowid": rowid, "ids": ids, "kind": kind, "agent": agent,
            "bad_text": np.zeros(n, bool), **{name: cols[name] for name in NUMERIC_COLUMNS}, "bad_json": bad_json,
            **_model_codes(*cols["model"], n, mostly["model"]), "size": size,
            "odd_types": odd_types, "preview": previews, "vectors": vectors, "settle": lambda: None}   # nothing left beside


def _preview_lines(conn, text: str | None, n: int, preview: int, lo: int, hi: int) -> list[str]:
    """The previews of the `n` rows of rowids `lo`..`hi` from their NUL-joined text (_PREVIEWS), made
    one line; a content holding NUL splits into more parts than rows: read as JSON instead."""
    lines = [] if text is None else _flat(text).split("\x00")
    if len(lines) != n:
        lines = [_flat(t) for t in _loads(conn.execute(_PREVIEWS_JSON, (int(preview), lo, hi)).fetchone()[0])]
    return lines


def _bad_json_rows(conn, again: bool = False) -> str:
    """The rowids of the rows with a malformed JSON column, as a JSON array. `again`: where
    `conn` (the second connection, after its other reads) fails, on a connection of its own to
    the file's newest state, and a StoreError saying what happened if that fails too."""
    try:
        return conn.execute(_BAD_JSON).fetchone()[0]
    except apsw.Error as e:
        if not again:
            raise
        first = e
    try:
        other = apsw.Connection(conn.filename, flags=apsw.SQLITE_OPEN_READONLY, vfs=conn.open_vfs)
        try:
            return other.execute(_BAD_JSON).fetchone()[0]
        finally:
            other.close()
    except apsw.Error as e:
        raise translate(first, conn.filename, doing="checking the JSON columns of every memory") from e


def _flagged(rowid: np.ndarray, rows: str) -> np.ndarray:
    """Per row of `rowid` (ascending): whether it is among `rows` (a JSON array of rowids)."""
    out = np.zeros(len(rowid), bool)
    at = np.array(_loads(rows), dtype=np.int64)
    pos = np.minimum(np.searchsorted(rowid, at), max(len(rowid) - 1, 0))
    if len(rowid):
        out[pos[rowid[pos] == at]] = True
    return out


def _settle(fut: Future, make) -> None:
    """fut's result: what make() returns, or what it raised."""
    try:
        fut.set_result(make())
    except BaseException as e:  # noqa: BLE001 - handed to whoever asks the Future
        fut.set_exception(e)


def _merged(a: tuple[dict, list], b: tuple[dict, list], offset: int) -> tuple[dict, list]:
    """_values of two parts, in rowid order, as one (`offset`: the first part's rows)."""
    (ca, oa), (cb, ob) = a, b
    out = {name: np.concatenate((ca[name], cb[name])) for name in ca if name != "model"}
    out["model"] = (ca["model"][0] + cb["model"][0], np.concatenate((ca["model"][1], cb["model"][1] + offset)))
    return out, oa + ob


def _model_codes(values, at: np.ndarray | None = None, n: int = 0, mostly=None) -> dict:
    """The model column as "model_code" (per row) and "model_names" (per code): from every row's
    name, or from `mostly` and the other names `values` at the rows `at` (no Python object per row)."""
    if at is None:
        names = dict.fromkeys(values)   # in order of first use
        code = {m: i for i, m in enumerate(names)}
        return {"model_code": np.fromiter(map(code.__getitem__, values), np.int64, count=len(values)),
                "model_names": list(names)}
    code = {mostly: 0}
    for m in values:
        code.setdefault(m, len(code))
    out = np.zeros(n, np.int64)
    out[at] = np.fromiter(map(code.__getitem__, values), np.int64, count=len(values))
    return {"model_code": out, "model_names": list(code)}


def _joined(a: str, b: str) -> str:
    """Two JSON arrays as one."""
    return b if a == "[]" else a if b == "[]" else a[:-1] + "," + b[1:]


def _matrix(n: int, dim: int) -> np.ndarray:
    """The matrix of a whole read (rows_with_room's), its `n` rows faulted in at once: every one
    is written (the vectors, or zeros where a memory has none), and one madvise call costs a
    third less CPU than a page fault at each first write."""
    out = rows_with_room(n, (dim,), "<f4")
    if out.nbytes >= _SMALL_PAGES_FROM:
        madvise(out, MADV_POPULATE_WRITE)
    return out


def one_of_each(values: list) -> list:
    """`values` with every repeat the very object of its first occurrence: a column of a few
    distinct texts (kinds, agents) then holds a few strings, not one per row (110 MB at 1M rows)."""
    first = {v: v for v in dict.fromkeys(values)}
    return list(map(first.__getitem__, values))


def _loads(text):
    """JSON of SQLite's aggregates: orjson (several times faster on a million numbers), Python's
    json for what orjson refuses (SQLite writes infinity as 9.0e+999)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _common_size(size: np.ndarray) -> int:
    """The most common blob size (bytes), 0 if no row has a vector-sized blob."""
    ok = (size > 0) & (size % 4 == 0)
    if not ok.any():
        return 0
    values, counts = np.unique(size[ok], return_counts=True)
    return int(values[counts.argmax()])


_BLOB_ROWS = 2048          # vectors this size or larger (a page of 4 KB holds one or two): one by one
_CHUNK_BYTES = 64 << 20   # otherwise concatenated by SQLite in rowid ranges of this many bytes


def _read_vectors(conn, rowid: np.ndarray, size: np.ndarray, has: np.ndarray, nbytes: int,
                  ids: np.ndarray | None = None) -> np.ndarray:
    """The (n, nbytes/4) float32 matrix of the rows in `has` (zero rows elsewhere), read straight
    into one preallocated array. With the memories' `ids`, from the vector index's chunks where
    it mirrors the rows (vec_chunks.py: a thousand blobs for a million vectors). Otherwise large
    vectors spill to overflow pages, where concatenating them inside SQLite costs more than
    reading them: each is read with incremental blob I/O into its row. Small ones come from
    group_concat over rowid ranges (one blob of every row's vector would pass SQLite's 1 GB limit
    at 1M x 256)."""
    n = len(rowid)
    out = rows_with_room(n, (nbytes // 4,), "<f4")  # a whole read: a live refresh appends below it
    if n == 0 or not has.any():
        return out
    if ids is not None:
        try:
            if read_from_index(conn, ids, rowid, has, nbytes, out):
                return out
        except apsw.Error:
            pass   # the index could not be read as expected: the rows are
        out[:] = 0
    flat = memoryview(out).cast("B")
    step = max(1, _CHUNK_BYTES // nbytes)
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        try:
            if nbytes >= _BLOB_ROWS:
                for i in (lo + np.flatnonzero(has[lo:hi])).tolist():
                    with conn.blob_open("main", "memories", "embedding", int(rowid[i]), False) as blob:
                        blob.read_into(flat, i * nbytes, nbytes)
            else:
                _concatenated(conn, rowid, size, has, nbytes, lo, hi, out)
        except (apsw.Error, ValueError):
            _row_by_row(conn, rowid, has, nbytes, lo, hi, out)  # a value that is not what the scan saw
    return out


def _concatenated(conn, rowid, size, has, nbytes, lo, hi, out) -> None:
    joined = conn.execute(
        "SELECT CAST(group_concat(CASE WHEN typeof(embedding) = 'blob' THEN embedding ELSE X'' END, X'') AS BLOB) "
        "FROM memories WHERE rowid BETWEEN ? AND ?", (int(rowid[lo]), int(rowid[hi - 1]))).fetchone()[0] or b""
    sz = np.maximum(size[lo:hi], 0)
    ends = np.cumsum(sz)
    if ends[-1] != len(joined):
        raise ValueError("the vectors changed during the scan")
    raw = np.frombuffer(joined, dtype=np.uint8)
    block = out[lo:hi].view(np.uint8)
    if has[lo:hi].all():
        block[:] = raw.reshape(hi - lo, nbytes)
        return
    rows = np.flatnonzero(has[lo:hi])
    block[rows] = raw[(ends[rows] - nbytes)[:, None] + np.arange(nbytes)]


def _row_by_row(conn, rowid, has, nbytes, lo, hi, out) -> None:
    want = {int(r): i for i, r in zip(range(lo, hi), rowid[lo:hi].tolist()) if has[i]}
    for rid, blob in conn.execute("SELECT rowid, embedding FROM memories WHERE rowid BETWEEN ? AND ?",
                                  (int(rowid[lo]), int(rowid[hi - 1]))):
        i = want.get(rid)
        if i is not None and isinstance(blob, bytes) and len(blob) == nbytes:
            out[i] = np.frombuffer(blob, dtype="<f4")


def pick_model(names: list[bytes], model_code: np.ndarray, size: np.ndarray, model: bytes | None,
                dim) -> tuple[bytes | None, int]:
    """The (model, dim) whose vectors fill the matrix: most rows first, then model name, then
    the smaller dimension (as `Store.embedding_models()` orders them; no model name counts as
    ""). Counted with numpy over per-row codes, not a Python pass."""
    if model is not None and dim is not None:
        return model, int(dim)
    blob = size >= 0
    if model is not None:
        blob &= model_code == (names.index(model) if model in names else -1)
    if not blob.any():
        return model, 0
    key = model_code[blob] << 32 | size[blob] // 4
    if (key == key[0]).all():   # one model and size (the usual store): no sort
        pairs, counts = key[:1], [len(key)]
    else:
        pairs, counts = np.unique(key, return_counts=True)
    m, d, _ = min(((names[int(p >> 32)], int(p & 0xFFFFFFFF), int(c)) for p, c in zip(pairs, counts)),
                  key=lambda mdc: (-mdc[2], mdc[0], mdc[1]))
    return (m if model is None else model), d


def _texts(col) -> tuple[np.ndarray, np.ndarray]:
    """Decode a column of UTF-8 bytes; invalid rows get replacement characters and a flag.
    Fast path: decode the whole column at once (NUL-joined), row by row only if that fails."""
    n = len(col)
    out = np.empty(n, dtype=object)
    bad = np.zeros(n, dtype=bool)
    try:
        parts = b"\x00".join(b"" if raw is None else raw for raw in col).decode("utf-8").split("\x00")
    except (UnicodeDecodeError, TypeError):
        parts = None
    if parts is not None and len(parts) == n:
        out[:] = parts
        return out, bad
    for i, raw in enumerate(col):
        out[i], bad[i] = decode_text(raw)
    return out, bad


def one_line(col) -> np.ndarray:
    """The texts of `col` on one line, CR, LF and tab made spaces (once on the joined column, not
    per row): str, or bytes as SQLite returns them, decoded as UTF-8 with replacement (None: "")."""
    first = next((t for t in col if t is not None), None)
    if first is None:
        joined = "\x00".join("" for _ in col)
    elif isinstance(first, str):
        joined = "\x00".join(col)
    else:
        joined = b"\x00".join(b"" if raw is None else raw for raw in col).decode("utf-8", errors="replace")
    parts = _flat(joined).split("\x00")
    if len(parts) != len(col):  # a content holding NUL characters: row by row
        parts = [_flat(decode_text(t)[0]) for t in col]
    out = np.empty(len(col), dtype=object)
    out[:] = parts
    return out


def _flat(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ").replace("\t", " ")


def normalize_rows(emb: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (most already are: only those that are not are touched, and a
    read-only matrix is copied only if one needs it). A row with NaN or infinite values (an
    agent wrote it) holds no usable vector: it is zeroed and cleared in `rows` (in place), so one
    such vector does not make every point of a map NaN."""
    sq = np.einsum("ij,ij->i", emb, emb)
    odd = np.flatnonzero(rows & ~np.isfinite(sq))  # NaN or inf, or a square sum past float32's range
    if len(odd):
        if not emb.flags.writeable:
            emb = emb.copy()
        block = emb[odd].astype(np.float64)
        finite = np.isfinite(block).all(axis=1)
        emb[odd[~finite]] = 0.0
        rows[odd[~finite]] = False
        sq[odd[~finite]] = 0.0
        emb[odd[finite]] = block[finite] / np.linalg.norm(block[finite], axis=1)[:, None]
        sq[odd[finite]] = 1.0
    fix = rows & (np.abs(sq - 1.0) > 1e-6) & (sq > 0)
    if fix.any():
        if not emb.flags.writeable:
            emb = emb.copy()
        emb[fix] /= np.sqrt(sq[fix])[:, None]
    return emb


class WrittenColumns:
    """The columns of rows as a bulk load writes them (store/bulk.py), kept so that the store's
    first read needs no scan: `arrays(preview)` is what load_arrays would read back, or None
    when a value is one load_arrays reads through its slower path (milliseconds, non-finite
    numbers), so the caller scans as usual."""

    def __init__(self):
        self.first_rowid: int | None = None
        self.cols: dict[str, list] = {c: [] for c in ("id", "kind", "agent", "content", "embedding", "embedding_model",
                                                       *NUMERIC_COLUMNS)}

    def add(self, rows: list[dict], first_rowid: int) -> None:
        """Rows written with rowids first_rowid, first_rowid + 1, ... (after the ones added before)."""
        if self.first_rowid is None:
            self.first_rowid = first_rowid
        elif first_rowid != self.first_rowid + len(self.cols["id"]):
            raise ValueError("bulk rows written out of rowid order")
        for col, values in self.cols.items():
            values.extend(map(itemgetter(col), rows))

    def arrays(self, preview: int) -> MemoryArrays | None:
        c = self.cols
        n = len(c["id"])
        num = {col: np.array(c[col], dtype=np.float64) if n else np.zeros(0) for col in NUMERIC_COLUMNS}
        odd = np.zeros(n, bool)
        for col in TIME_COLUMNS:
            odd |= np.abs(np.nan_to_num(num[col])) >= MS_ABOVE
        for col in NUMBER_DEFAULTS:
            odd |= ~np.isfinite(num[col])
        if odd.any():
            return None
        names: dict = {}  # a model's name as bytes -> its code; each distinct name encoded once
        code = {m: names.setdefault((m or "").encode("utf-8", "surrogatepass"), len(names))
                for m in set(c["embedding_model"])}
        model_code = np.fromiter(map(code.__getitem__, c["embedding_model"]), dtype=np.int64, count=n)
        size = np.array([len(b) if b is not None else -1 for b in c["embedding"]], dtype=np.int64) if n \
            else np.zeros(0, np.int64)
        key, dim = pick_model(list(names), model_code, size, None, None)
        nbytes = 4 * dim
        has = (model_code == names.get(key, -1)) & (size == nbytes) & (size > 0)
        if nbytes and has.any():
            if has.all():  # the usual case: one join, no pass in Python
                joined = bytearray().join(c["embedding"])
            else:
                zero = bytes(nbytes)
                joined = bytearray().join(b if h else zero for b, h in zip(c["embedding"], has.tolist()))
            emb = normalize_rows(np.frombuffer(joined, dtype="<f4").reshape(n, dim), has)
        else:
            emb = np.zeros((n, dim), dtype=np.float32)

        def texts(col):
            out = np.empty(n, dtype=object)
            out[:] = col
            return out
        return MemoryArrays(
            ids=texts(c["id"]), rowid=np.arange(self.first_rowid or 1, (self.first_rowid or 1) + n, dtype=np.int64),
            kind=texts(c["kind"]), agent=texts(c["agent"]),
            importance=num["importance"], event_time=num["event_time"], created_at=num["created_at"],
            last_accessed=num["last_accessed"], valid_until=num["valid_until"], confidence=num["confidence"],
            decay_rate=num["decay_rate"], access_count=num["access_count"].astype(np.int64),
            protected=num["protected"].astype(bool), embedding=emb, has_embedding=has,
            embedding_model=None if key is None else decode_text(key)[0],
            bad_json=np.zeros(n, bool), bad_text=np.zeros(n, bool),
            preview=one_line([t[:preview] for t in c["content"]]) if preview > 0 else None,
            bad_value=np.zeros(n, bool))
