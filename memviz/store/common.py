"""What both store backends (the SQLite `Store`, `postgres.PgStore`) do the same way, written once."""
from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass

from .errors import ConflictError, ValidationError
from .records import decode_json, normalize, normalize_many, read_values
from .schema import JSON_COLUMNS, MEMORY_COLUMNS
from .times import to_epoch

#: the columns get_many(fields=...) and rewrite_rows read and write by name (the vector has its own methods)
SCALAR_COLUMNS = tuple(c for c in MEMORY_COLUMNS if c != "embedding")


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
    """Built on each backend's own `update_rows`, `embedding_models`, `close` and `read_only_reason`."""

    @property
    def read_only(self) -> bool:
        return self.read_only_reason is not None

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
