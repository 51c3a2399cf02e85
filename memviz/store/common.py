"""What both store backends (the SQLite `Store`, `postgres.PgStore`) do the same way, written once."""
from __future__ import annotations

import base64
import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .clock import Clock
from .errors import ConflictError, ValidationError
from .records import (
    NUMBER_DEFAULTS,
    TIME_COLUMNS,
    clean_value,
    decode_json,
    decode_text,
    embedding_blob,
    new_id,
    normalize,
    normalize_many,
    read_values,
    shown_value,
)
from .schema import JSON_COLUMNS, MEMORY_COLUMNS
from .times import to_epoch

#: the columns get_many(fields=...) and rewrite_rows read and write by name (the vector has its own methods)
SCALAR_COLUMNS = tuple(c for c in MEMORY_COLUMNS if c != "embedding")
#: the columns update_rows may change
EDITABLE = frozenset(MEMORY_COLUMNS) - {"id"}
#: the text columns a row is read with (SQLite reads them as bytes: invalid UTF-8 is replaced, not fatal)
TEXT_COLUMNS = ("id", "agent", "kind", "content", "embedding_model")


@dataclass
class Provenance:
    """Links between memories: derived-from (source_ids) and supersedes."""

    sources: list[tuple[str, str]] = field(default_factory=list)     # (derived id, source id)
    supersedes: list[tuple[str, str]] = field(default_factory=list)  # (new id, old id)
    dangling: list[tuple[str, str, str]] = field(default_factory=list)  # (from id, missing id, "source"|"supersedes")

    def add(self, memory_id: str, sources, olds, exists: Callable[[str], bool]) -> None:
        """One memory's links (its source ids, the ids it supersedes); a link to an id for which
        `exists` is false is dangling."""
        for s in sources:
            (self.sources.append((memory_id, s)) if exists(s) else self.dangling.append((memory_id, s, "source")))
        for o in olds:
            (self.supersedes.append((memory_id, o)) if exists(o) else self.dangling.append((memory_id, o, "supersedes")))


def supersede_ids(sup) -> list[str]:
    """The old ids named by an `attributes.supersedes` value (one id, or a JSON list of them)."""
    if not sup:
        return []
    olds = sup if isinstance(sup, list) else [sup]
    if isinstance(sup, str) and sup.startswith("["):
        olds, _ = decode_json(sup, "source_ids")
    return [str(o) for o in olds]


def pick_fields(fields) -> tuple[str, ...]:
    """`fields` checked against the memory columns (they are put into SQL by name)."""
    fields = tuple(dict.fromkeys(f for f in fields if f != "id"))
    bad = [f for f in fields if f not in SCALAR_COLUMNS]
    if bad:
        raise ValidationError(f"not a memory column that can be read or written by name: {', '.join(bad)}")
    return fields


def json_column(column: str) -> str:
    """`column` if it is one of the JSON columns (it is put into SQL by name)."""
    if column not in JSON_COLUMNS:
        raise ValidationError(f"{column!r} is not a JSON column")
    return column


def audit_dump(d) -> str | None:
    """An audit entry's `before`/`after` as JSON text (bytes, a vector, as {"$b64": …})."""
    if d is None:
        return None
    out = {}
    for k, v in d.items():
        out[k] = {"$b64": base64.b64encode(v).decode()} if isinstance(v, (bytes, bytearray)) else v
    return json.dumps(out, ensure_ascii=False)


def audit_load(text):
    """An audit entry's `before`/`after` as audit_dump wrote it (malformed JSON: {"$malformed": text})."""
    if text is None:
        return None
    try:
        d = json.loads(text)
    except ValueError:
        return {"$malformed": text}
    return {k: base64.b64decode(v["$b64"]) if isinstance(v, dict) and "$b64" in v else v for k, v in d.items()}


def decode_row(row, cols=MEMORY_COLUMNS) -> dict:
    """A row of `cols` as get() gives it (text decoded, JSON parsed, times and numbers read), with
    `problems` (a line per value that could not be read) and `unreadable` (their columns)."""
    d = dict(zip(cols, row))
    texts, jsons, values = _column_kinds(cols)
    problems = []
    for col in texts:
        d[col], bad = decode_text(d[col])
        if bad:
            problems.append(f"`{col}` is not valid UTF-8 (shown with replacement characters)")
    unreadable = []
    for col in jsons:
        d[col], ok = decode_json(d[col], col)
        if not ok:
            problems.append(f"`{col}` holds malformed JSON (shown as empty)")
            unreadable.append(col)
    if values:
        problems += read_values(d, unreadable)
    if "protected" in d:
        d["protected"] = bool(d["protected"])
    d["problems"] = problems
    d["unreadable"] = unreadable  # the columns whose stored value is not what is shown (problems says why)
    return d


@functools.cache
def _column_kinds(cols: tuple) -> tuple[tuple, tuple, bool]:
    """(text columns, JSON columns, any time or number column) of a row of `cols`: worked out once
    per column set, not per row (get_many(fields=…) reads tens of thousands)."""
    return (tuple(c for c in TEXT_COLUMNS if c in cols), tuple(c for c in JSON_COLUMNS if c in cols),
            any(c in cols for c in (*TIME_COLUMNS, *NUMBER_DEFAULTS)))


def check_expected(memory_id, cur, expected) -> None:
    """ConflictError when a field of `expected` (the row as the user was shown it, or as stored)
    differs from `cur` (the row as read inside the write). Both are read through the reader the
    panels show values by (records.shown_value): an agent's 'very high' is the 5 the user saw."""
    if not expected:
        return
    changed = [k for k, v in expected.items() if _comparable(cur.get(k), k) != _comparable(v, k)]
    if changed:
        raise ConflictError(
            f"Memory {memory_id} was changed by someone else since it was shown ({', '.join(changed)}).",
            current=cur, expected=dict(expected))


def _comparable(v, key):
    if key in JSON_COLUMNS:
        return decode_json(v, key)[0] if isinstance(v, (str, bytes)) else v
    if key == "protected":
        return bool(v)
    if key in TIME_COLUMNS or key in NUMBER_DEFAULTS:
        return shown_value(v, key)
    return v


@dataclass
class RowWrite:
    """One row's change in `rewrite_rows`: the columns set, and the audit entry written with it
    (`before`/`after` may say more than the columns, e.g. consolidation's `decayed_to`)."""

    id: str
    set: dict
    action: str
    before: dict | None
    after: dict | None
    note: str | None = None


class StoreCommon:
    """Built on each backend's own `update_rows`, `embedding_models`, `model_dim`, `close` and
    `read_only_reason`; the defaults of a store that has no work going on after its open."""

    clock_override: Clock | None = None
    corrects_in_place = False
    checking = False
    indexing = False
    index_failure: str | None = None
    answers_later = False

    @property
    def read_only(self) -> bool:
        return self.read_only_reason is not None

    def describe(self) -> str:
        return self.path

    def checked(self) -> list[str]:
        return []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def refuses(self, field: str) -> str | None:
        """Why edits of `field` (a memory column, or "insert") cannot be written here although the
        store is writable; None for memviz's own stores (another system's may allow only some)."""
        return None

    def main_model(self) -> tuple[str | None, int]:
        models = self.embedding_models()
        return (models[0][0], models[0][1]) if models else (None, 0)

    def _normalized(self, records) -> tuple[list[dict], float]:
        """Every record validated and normalised before anything is written (a bad one raises),
        and the time they are stamped with (their audit entries use it too).
        Only the models these records use are looked up: a full scan per call made bulk imports
        quadratic."""
        records = list(records)
        models = {r.get("embedding_model") for r in records if r.get("embedding") is not None}
        dims = {m: d for m in models if (d := self.model_dim(m)) is not None}
        now = time.time()
        rows = normalize_many(records, model_dims=dims, now=now)
        return rows, now

    def _cleaned(self, changes: dict[str, dict]) -> dict[str, dict]:
        """update_rows' `changes` (id -> fields) checked and made into stored values, before
        anything is written (a bad one raises ValidationError)."""
        out = {}
        for memory_id, ch in changes.items():
            bad = set(ch) - EDITABLE
            if bad:
                raise ValidationError(f"these fields cannot be edited: {', '.join(sorted(bad))}")
            out[memory_id] = self._clean_changes(ch)
        return out

    def _clean_changes(self, changes: dict) -> dict:
        clean = {}
        for k, v in changes.items():
            if k == "embedding" and v is not None:
                model = changes.get("embedding_model")
                v = embedding_blob(v, self.model_dim(model) if model else None)
            elif k != "embedding":
                v = clean_value(k, v)
            clean[k] = v
        return clean

    def supersede(self, memory_id: str, new_content: str, *, embedding=None, embedding_model: str | None = None,
                  when=None, new_id_: str | None = None, expected: dict | None = None,
                  actor: str = "memviz", note: str | None = None) -> str:
        """The assistant memory's `correct_fact`: the old row gets valid_until, a new row carries the new text,
        `attributes.supersedes` and the old kind/agent/sources/event time (it restates the same
        event; `created_at` is the correction's time). Without an embedding the new row is
        marked `attributes.needs_embedding` (never given the old text's vector). Returns the new id.
        One transaction; each backend gives `_supersede_write` (it), `_current` (the old row, locked),
        `_insert` and `_retire`."""
        when = to_epoch(when) if when is not None else int(time.time())
        nid = new_id_ or new_id()
        dim = self.model_dim(embedding_model) if embedding is not None else None
        with self._supersede_write() as c:
            cur = self._current(c, memory_id)
            check_expected(memory_id, cur, expected)
            row = self._superseding_row(cur, memory_id, new_content, nid, when, embedding, embedding_model, dim)
            self._insert(c, [row])
            self._retire(c, memory_id, when)
            self.audit(c, "supersede", memory_id, {"valid_until": None}, {"valid_until": when, "superseded_by": nid},
                       actor, note)
            self.audit(c, "insert", nid, None, row, actor, note or f"correction of {memory_id}")
        return nid

    def _superseding_row(self, cur: dict, memory_id: str, new_content: str, nid: str, when: int, embedding,
                         embedding_model: str | None, dim: int | None) -> dict:
        """The new row of a correction (supersede), normalised: the old row's agent, kind, sources and
        event time (read as values: an agent's 'very high' or 'yesterday' is not copied), its
        attributes with `supersedes`, and `needs_embedding` when no vector came with the text.
        `cur`: the old row as read inside the write transaction (a retired one is a conflict); `dim`:
        the store's dimension for `embedding_model`, looked up before the transaction."""
        if cur["valid_until"] is not None:
            raise ConflictError(f"Memory {memory_id} is already retired; restore it before correcting it.", current=cur)
        attrs, _ = decode_json(cur["attributes"], "attributes")
        attrs = {k: v for k, v in attrs.items() if k != "needs_embedding"}
        attrs["supersedes"] = memory_id
        if embedding is None:
            attrs["needs_embedding"] = True
        readable = dict(cur)
        read_values(readable)
        new = {k: readable[k] for k in ("agent", "kind", "importance", "confidence", "decay_rate", "protected",
                                        "source_ids", "entity_ids", "tags")}
        new["importance"] = min(max(new["importance"], 0.0), 10.0)  # an agent's 100 (a percentage?) is 10 here
        new.update(id=nid, content=new_content, attributes=attrs, event_time=readable["event_time"], created_at=when,
                   embedding=embedding, embedding_model=embedding_model if embedding is not None else None)
        return normalize(new, model_dims={embedding_model: dim} if dim else {}, now=when)

    def update_fields(self, memory_id: str, changes: dict, *, action: str = "update", expected: dict | None = None,
                      actor: str = "memviz", note: str | None = None) -> dict:
        """Change fields of one memory, audited. `expected` (field -> value as last shown) turns a
        concurrent change into a ConflictError instead of overwriting it. Returns the audit `before`."""
        done = self.update_rows({memory_id: changes}, action=action,
                                expected={memory_id: expected} if expected else None, actor=actor, note=note)
        return done[memory_id][0]

    def set_valid_until(self, memory_id: str, when, *, action: str | None = None, expected: dict | None = None,
                        actor: str = "memviz", note: str | None = None) -> None:
        """Soft-delete (a time) or restore (None)."""
        when = to_epoch(when)
        self.update_fields(memory_id, {"valid_until": when}, action=action or ("soft_delete" if when else "restore"),
                           expected=expected, actor=actor, note=note)
