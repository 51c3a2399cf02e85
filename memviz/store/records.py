"""Validation of memory records before they are written, and decoding when read."""
from __future__ import annotations

import json
import math
import time
import uuid

import numpy as np
import orjson

from .errors import ValidationError
from .schema import JSON_LIST_COLUMNS, MEMORY_COLUMNS
from .times import to_epoch

_DEFAULTS = {
    "agent": "", "importance": 5.0, "confidence": 1.0, "access_count": 0,
    "decay_rate": 0.1, "protected": 0, "source_ids": [], "entity_ids": [], "tags": [],
    "attributes": {},
}


def new_id() -> str:
    return uuid.uuid4().hex


def embedding_blob(vec, expected_dim: int | None = None, *, what: str = "embedding") -> bytes:
    """float32 little-endian bytes of a 1-D finite vector; rejects NaN/inf and wrong lengths."""
    if isinstance(vec, (bytes, bytearray, memoryview)):
        raw = bytes(vec)
        if len(raw) % 4:
            raise ValidationError(f"{what} has {len(raw)} bytes, not a whole number of float32 values")
        arr = np.frombuffer(raw, dtype="<f4")
    elif isinstance(vec, np.ndarray) and vec.dtype == np.float32:
        arr = vec.astype("<f4", copy=False)  # the usual case: no round trip through float64
        if arr.ndim != 1:
            raise ValidationError(f"{what} must be a 1-D vector, got shape {arr.shape}")
    else:
        arr = np.asarray(vec, dtype=np.float64)
        if arr.ndim != 1:
            raise ValidationError(f"{what} must be a 1-D vector, got shape {arr.shape}")
        arr = arr.astype("<f4")
    if arr.size == 0:
        raise ValidationError(f"{what} is empty")
    if not np.all(np.isfinite(arr)):
        raise ValidationError(f"{what} contains NaN or infinite values")
    if expected_dim is not None and arr.size != expected_dim:
        raise ValidationError(f"{what} has {arr.size} dimensions, but this store's model uses {expected_dim}")
    return arr.tobytes()


def has_direction(blob: bytes) -> bool:
    """A vector (embedding_blob's bytes) that is not all zeros: a zero vector has no cosine to
    anything, so nothing is near it (sqlite-vec gives NULL distances, pgvector NaN)."""
    return bool(np.any(np.frombuffer(blob, dtype="<f4")))


_COLUMN_SET = frozenset(MEMORY_COLUMNS)
_NONE_ROW = dict.fromkeys(MEMORY_COLUMNS)  # a row's keys in column order, every value None
#: json.dumps(value, ensure_ascii=False, separators=(",", ":")) without building an encoder per call
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS  # to the refusal _JSON gives them


def _encode(value) -> str:
    """_JSON.encode(value), by orjson (several times faster: a bulk load encodes two values per memory)
    where its text is the same: it escapes and orders as _JSON does; what it refuses (keys that
    are not strings, a lone surrogate, an integer over 64 bits) or may write otherwise
    (_may_differ) goes to _JSON. A test compares the two on generated values."""
    try:
        out = orjson.dumps(value, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError
        return _JSON.encode(value)
    if _may_differ(out):
        return _JSON.encode(value)
    return out.decode()


def _may_differ(out: bytes) -> bool:
    """orjson's text may not be _JSON's: a float below 1e-4 (1e-05 against 0.00001 or 1e-5), NaN
    or an infinity (null against NaN). Text that merely looks like these costs only speed.
    Substring searches: a regular expression over every value cost as much as the encoding."""
    if b"null" in out or b"0.0000" in out:
        return True
    at = out.find(b"e-")
    while at > 0:
        if 48 <= out[at - 1] <= 57:  # a digit before: an exponent
            return True
        at = out.find(b"e-", at + 2)
    return False


def normalize(rec: dict, *, model_dims: dict[str, int], now: float | None = None) -> dict:
    """A complete row dict ready for INSERT; raises ValidationError with the field at fault."""
    row = _fields(rec, time.time() if now is None else now)
    emb = row.get("embedding")
    if emb is not None:
        row["embedding"] = embedding_blob(emb, model_dims.get(_model(row)), what=f"memory {row['id']}: embedding")
    return row


def normalize_many(records, *, model_dims: dict[str, int], now: float | None = None) -> list[dict]:
    """normalize() of every record, as rows in order; the first model's vectors set its dimension
    for the rest (`model_dims` is updated). float32 vectors, as arrays or as their little-endian
    bytes (kept as given), are checked together (one isfinite over a stacked matrix per dimension,
    not one per row: most of a 100k load's validation).
    A bad record raises the ValidationError normalize() gives it (with several bad records, the
    one named may not be the first)."""
    now = time.time() if now is None else now
    rows: list[dict] = []
    stacked: dict[int, tuple[list[int], list[np.ndarray]]] = {}  # dim -> (row indices, vectors)
    blobs: dict[int, tuple[list[int], list[bytes]]] = {}  # dim -> (row indices, float32 bytes as given)
    for rec in records:
        row = _fields(rec, now)
        emb = row.get("embedding")
        if emb is not None:
            model = _model(row)
            want = model_dims.get(model)
            if type(emb) is bytes and len(emb) % 4 == 0 and emb and want in (None, len(emb) // 4):
                group = blobs.setdefault(len(emb) // 4, ([], []))  # kept as given: no copy per row
                group[0].append(len(rows))
                group[1].append(emb)
                dim = len(emb) // 4
            elif isinstance(emb, np.ndarray) and emb.dtype == np.float32 and emb.ndim == 1 and emb.size \
                    and want in (None, emb.size):
                group = stacked.setdefault(emb.size, ([], []))
                group[0].append(len(rows))
                group[1].append(emb)
                dim = emb.size
            else:
                row["embedding"] = embedding_blob(emb, want, what=f"memory {row['id']}: embedding")
                dim = len(row["embedding"]) // 4
            model_dims.setdefault(model, dim)
        rows.append(row)
    for at, vectors in stacked.values():
        matrix = np.concatenate(vectors).reshape(len(vectors), -1)  # np.stack costs several times more
        _check_finite(rows, at, matrix)
        for i, v in zip(at, vectors):
            rows[i]["embedding"] = v.astype("<f4", copy=False).tobytes()
    for at, raw in blobs.values():
        _check_finite(rows, at, np.frombuffer(b"".join(raw), dtype="<f4").reshape(len(raw), -1))
    return rows


def _check_finite(rows: list[dict], at: list[int], matrix: np.ndarray) -> None:
    """The ValidationError embedding_blob gives the first row of `matrix` (rows[at[i]]'s vectors) with a NaN or inf."""
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        bad = rows[at[int(np.argmin(finite))]]["id"]
        raise ValidationError(f"memory {bad}: embedding contains NaN or infinite values")


def _model(row: dict) -> str:
    model = row.get("embedding_model")
    if not model:
        raise ValidationError(f"memory {row['id']}: an embedding needs its `embedding_model`")
    return model


def _fields(rec: dict, now: float) -> dict:
    """normalize() but the embedding, which is left as given. Values already of the stored type
    (an int time, a float number, an empty list) are taken as they are: this runs once per
    memory of a bulk load, where the checks cost more than the writing."""
    if not _COLUMN_SET.issuperset(rec):
        raise ValidationError(f"unknown memory fields: {', '.join(sorted(set(rec) - _COLUMN_SET))}")
    row = _NONE_ROW.copy()
    row.update(rec)
    for col, default in _DEFAULTS.items():
        if row[col] is None:
            row[col] = default
    rid = row["id"] or new_id()
    row["id"] = rid = rid if type(rid) is str else str(rid)
    for col in ("kind", "content"):
        if not isinstance(row[col], str) or (col == "kind" and not row[col]):
            raise ValidationError(f"memory {rid}: `{col}` must be a non-empty string")
    try:
        v = row["created_at"]
        row["created_at"] = made = v if type(v) is int else to_epoch(now if v is None else v)
        v = row["event_time"]
        row["event_time"] = v if type(v) is int else to_epoch(made if v is None else v)
        for col in ("valid_until", "last_accessed"):
            v = row[col]
            if v is not None and type(v) is not int:
                row[col] = to_epoch(v)
    except ValueError as e:
        raise ValidationError(f"memory {rid}: {e}") from None
    try:
        for col in ("importance", "confidence", "decay_rate"):
            v = row[col]
            if type(v) is not float:
                row[col] = float(v)
        v = row["access_count"]
        if type(v) is not int:
            row["access_count"] = int(v)
        row["protected"] = 1 if row["protected"] else 0
    except (TypeError, ValueError) as e:
        raise ValidationError(f"memory {rid}: bad number: {e}") from None
    if not 0 <= row["importance"] <= 10:
        raise ValidationError(f"memory {rid}: importance {row['importance']} is outside 0-10")
    for col in JSON_LIST_COLUMNS:
        v = row[col]
        row[col] = "[]" if type(v) is list and not v else encode_json(v, col, rid)
    v = row["attributes"]
    row["attributes"] = "{}" if type(v) is dict and not v else encode_json(v, "attributes", rid)
    return row


def encode_json(value, col: str, mid: str = "") -> str:
    if not value and isinstance(value, (list, tuple, dict)):  # the common empty case, without json.dumps
        if isinstance(value, dict) == (col not in JSON_LIST_COLUMNS):
            return "{}" if isinstance(value, dict) else "[]"
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValidationError(f"memory {mid}: `{col}` is not valid JSON: {value[:60]!r}") from None
    if col in JSON_LIST_COLUMNS:
        if isinstance(value, (tuple, set)):
            value = list(value)
        if not isinstance(value, list):
            raise ValidationError(f"memory {mid}: `{col}` must be a JSON list")
    elif not isinstance(value, dict):
        raise ValidationError(f"memory {mid}: `{col}` must be a JSON object")
    return _encode(value)


def json_ints(text: str) -> np.ndarray | None:
    """A JSON array of integers (rowids as json_group_array writes them) as int64, parsed by numpy
    rather than as a Python object per value; None where it holds anything else."""
    if not (text.startswith("[") and text.endswith("]")) or any(c in text for c in '".eEn'):
        return None   # a string, a real, an exponent, null
    count = text.count(",") + 1 if text[1:-1].strip() else 0
    try:
        out = np.fromstring(text[1:-1], dtype=np.int64, sep=",") if count else np.zeros(0, np.int64)
    except ValueError:
        return None
    return out if len(out) == count else None


def decode_text(raw) -> tuple[str, bool]:
    """Text of a column read as bytes; invalid UTF-8 is replaced and reported."""
    if raw is None:
        return "", False
    if isinstance(raw, str):
        return raw, False
    try:
        return bytes(raw).decode("utf-8"), False
    except UnicodeDecodeError:
        return bytes(raw).decode("utf-8", errors="replace"), True


def decode_json(text, col: str):
    """(value, ok): malformed JSON gives the column's empty value and ok=False."""
    empty = {} if col == "attributes" else []
    if text is None or text == "":
        return empty, True
    try:
        value = json.loads(text)
    except (ValueError, TypeError):   # TypeError: a number where the JSON text belongs
        return empty, False
    if isinstance(value, dict) if col == "attributes" else isinstance(value, list):
        return value, True
    return empty, False


# ------------------------------------------------------------------ reading values an agent wrote
# An agent writes with plain SQL, so a column may hold any type: a time as ISO text, in
# milliseconds or as 'yesterday'; an importance as 'very high' or inf. Every reader (the arrays,
# the row select, stats, the retired list, check) goes through these two functions.
TIME_COLUMNS = ("event_time", "created_at", "valid_until", "last_accessed")
#: numeric columns and the value shown (and scored) when the stored one cannot be read
NUMBER_DEFAULTS = {"importance": 5.0, "confidence": 1.0, "decay_rate": 0.1, "access_count": 0.0}
MS_ABOVE = 1e11  # seconds reach 1e11 in the year 5138; a larger number is milliseconds (2001 onwards)
UNREADABLE_TIME = "unreadable time"

_NULLABLE = ("valid_until", "last_accessed")


def _not_a_number(col: str) -> str:
    kinds = "'integer', 'real', 'null'" if col in _NULLABLE else "'integer', 'real'"
    return f"typeof({col}) NOT IN ({kinds})"


#: SQL: true for a row whose times or numbers are stored as another type than a number (the
#: array scan finds these; milliseconds and inf it finds on its arrays)
ODD_TYPES_SQL = "(" + " OR ".join(_not_a_number(c) for c in TIME_COLUMNS + tuple(NUMBER_DEFAULTS)) + ")"
#: SQL: true for a row whose times or numbers are not plain numbers in range (rare; such rows
#: are read again through read_time / read_number)
ODD_VALUES_SQL = " OR ".join(
    [ODD_TYPES_SQL] + [f"abs(coalesce({c}, 0)) >= {MS_ABOVE:.0f}" for c in TIME_COLUMNS]
    + [f"abs({c}) > 1e308" for c in NUMBER_DEFAULTS])


def read_time(value) -> tuple[float | None, bool]:
    """(UTC epoch seconds or None, readable). Numbers in seconds or milliseconds, numeric text,
    ISO 8601 text ('Z', offsets, a space for 'T'; naive = UTC). NULL is (None, True)."""
    if value is None:
        return None, True
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = decode_text(value)[0]
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None, False
        try:
            value = float(text)
        except ValueError:
            try:
                return float(to_epoch(text)), True
            except (ValueError, OverflowError):
                return None, False
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None, False
    value = float(value)
    if abs(value) >= MS_ABOVE:
        value /= 1000.0
        if abs(value) >= MS_ABOVE:
            return None, False
    return value, True


def read_number(value, col: str) -> tuple[float, bool]:
    """(the number, readable): a finite number or numeric text; otherwise the column's default."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = decode_text(value)[0]
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            value = None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return NUMBER_DEFAULTS[col], False
    return float(value), True


def read_typed_columns(columns: dict) -> np.ndarray:
    """read_values over whole numeric columns (name -> float64 array, changed in place) of a store
    whose columns are typed (PostgreSQL: a double holds inf or NaN, a bigint time milliseconds, but
    none holds text): milliseconds become seconds, an unreadable time NaN (valid_until 0: still
    retired), a non-finite number the column's default. Returns the per-row flag of values that
    could not be read."""
    bad = np.zeros(len(next(iter(columns.values()))) if columns else 0, dtype=bool)
    for col in TIME_COLUMNS:
        t = columns.get(col)
        if t is None:
            continue
        big = np.abs(np.nan_to_num(t, nan=0.0, posinf=np.inf, neginf=np.inf)) >= MS_ABOVE
        t[big] /= 1000.0
        lost = np.isinf(t) | (np.abs(np.nan_to_num(t)) >= MS_ABOVE)
        t[lost] = 0.0 if col == "valid_until" else np.nan
        bad |= lost
    for col, default in NUMBER_DEFAULTS.items():
        v = columns.get(col)
        if v is None:
            continue
        odd = ~np.isfinite(v)
        v[odd] = default
        bad |= odd
    return bad


def read_values(row: dict, unreadable: list | None = None) -> list[str]:
    """Make a row's times epoch seconds (None when unreadable) and its numbers floats, in place;
    returns a problem line per value that could not be read (and appends its column to
    `unreadable`). An unreadable `valid_until` is 0: the memory is retired (the column is set),
    at a time that cannot be read; the arrays read it so too."""
    problems = []
    for col in TIME_COLUMNS:
        if col in row:
            raw = row[col]
            row[col], ok = read_time(raw)
            if row[col] is not None and row[col] == int(row[col]):
                row[col] = int(row[col])
            if not ok:
                if col == "valid_until":
                    row[col] = 0
                problems.append(f"`{col}` holds {_shown(raw)}: {UNREADABLE_TIME}"
                                + (" (the memory counts as retired)" if col == "valid_until" else ""))
                if unreadable is not None:
                    unreadable.append(col)
    for col in NUMBER_DEFAULTS:
        if col in row:
            raw = row[col]
            row[col], ok = read_number(raw, col)
            if col == "access_count":
                row[col] = int(row[col])
            if not ok:
                problems.append(f"`{col}` holds {_shown(raw)}, not a number (shown as {NUMBER_DEFAULTS[col]:g})")
                if unreadable is not None:
                    unreadable.append(col)
    return problems


def shown_value(value, col: str):
    """A time or number of `col` (stored, or as shown) as the panels show it, for comparing: the
    conflict check reads the row in the store and the row the user was shown through this one
    reader, so an agent's 'very high', inf or ISO time is the value the user saw, not a change.
    Times in whole seconds (the window's snapshot keeps whole seconds)."""
    if col in NUMBER_DEFAULTS:
        return read_number(value, col)[0]
    t, ok = read_time(value)
    if not ok:
        return 0 if col == "valid_until" else None
    return None if t is None else int(t)


class Stored:
    """A value as it was read from the store (an audit `before`), written back as it is by an undo:
    an agent's 'very high', its ISO time or its JSON spacing comes back byte for byte instead of
    being checked as a user's input (which it would fail, or be rewritten by)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self) -> str:
        return f"Stored({self.value!r})"


def clean_value(col: str, value):
    """A value for `col` (a time, a number, a JSON column, protected, kind or content) as update_rows
    writes it, checked as normalize() checks a new record's; ValidationError when it cannot be
    written. A Stored value is written as it is."""
    if isinstance(value, Stored):
        return value.value
    if col in JSON_LIST_COLUMNS or col == "attributes":
        return encode_json(value, col)
    if col in TIME_COLUMNS:
        try:
            return to_epoch(value)
        except ValueError as e:
            raise ValidationError(str(e)) from None
    if col in NUMBER_DEFAULTS:
        try:
            v = int(value) if col == "access_count" else float(value)
        except (TypeError, ValueError, OverflowError):
            raise ValidationError(f"`{col}` must be a number, not {_shown(value)}") from None
        if col == "importance" and not 0 <= v <= 10:
            raise ValidationError(f"importance {v:g} is outside 0-10")
        return v
    if col == "protected":
        return 1 if value else 0
    if col in ("kind", "content") and not isinstance(value, str):
        raise ValidationError(f"`{col}` must be text")
    return value


def as_stored(before: dict) -> dict:
    """An audit `before` (values as they were stored) made into changes that put them back as they
    were: a value clean_value would refuse or rewrite is marked Stored."""
    out = {}
    for col, v in before.items():
        try:
            same = col != "embedding" and _same(clean_value(col, v), v)
        except ValidationError:
            same = False
        out[col] = v if same or col == "embedding" else Stored(v)
    return out


def _same(a, b) -> bool:
    return type(a) is type(b) and a == b


def _shown(raw) -> str:
    text = decode_text(raw)[0] if isinstance(raw, (bytes, bytearray, memoryview)) else raw
    return repr(text if not isinstance(text, str) or len(text) <= 40 else text[:40] + "…")
