"""A user's edits of memories as command objects: apply (do or redo) and revert (undo).

Every step runs on the Store's audited primitives, so doing, undoing and redoing are each
one short BEGIN IMMEDIATE transaction covering row, FTS, vectors and audit. An action
remembers what it changed (the audit's before/after) and passes it as `expected` when it is
undone or redone: a change the agent made meanwhile becomes a ConflictError, never an
overwrite. Nothing here deletes a row; undoing a correction retires the new row.
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field

from ..embed import Embedder, EmbedderUnavailable, EmbeddingError, embedder_for
from ..store.errors import StoreError, ValidationError
from ..store.records import as_stored, read_number
from ..words import count

#: Fields of a row as shown that an edit must not silently overwrite. Access counters are
#: left out: the agent bumps them on every recall, which is no reason to refuse an edit.
SHOWN_FIELDS = ("agent", "kind", "content", "importance", "confidence", "decay_rate", "protected",
                "valid_until", "tags")

#: decay_rate given back by Unprotect when no earlier Confirm recorded one (the schema default)
DEFAULT_DECAY_RATE = 0.1


def shown(row: dict) -> dict:
    """The `expected` snapshot of a row as displayed (a dict from `Store.get`)."""
    return {k: row[k] for k in SHOWN_FIELDS if k in row}


def shown_in_arrays(arrays, ids) -> dict[str, dict]:
    """The `expected` snapshots of `ids` as the window's panels show them (the loaded arrays; the
    fields the arrays hold). Unreadable values are the arrays' readings, as the conflict check
    reads the stored row (store.records.shown_value)."""
    out = {}
    for mid in ids:
        r = arrays.index_of(mid)
        if r is None:
            continue
        snap = {"importance": float(arrays.importance[r]), "decay_rate": float(arrays.decay_rate[r]),
                "protected": bool(arrays.protected[r]),
                "valid_until": None if math.isnan(arrays.valid_until[r]) else int(arrays.valid_until[r])}
        if not math.isnan(arrays.confidence[r]):
            snap["confidence"] = float(arrays.confidence[r])
        out[mid] = snap
    return out


@dataclass
class Outcome:
    """What one step did, for the status bar and for refreshing the panels."""

    text: str
    ids: list[str] = field(default_factory=list)
    warning: str | None = None  # something the user must be told (e.g. no embedding was made)
    #: old id -> the new memory that now stands for it (a correction that supersedes): what a
    #: grade given to the old one is shown on
    replaced: dict[str, str] = field(default_factory=dict)


def shown_id(memory_id: str) -> str:
    """A memory's id as status lines and undo labels show it: a generated hex/UUID id by its
    first 8 characters, other ids whole up to 16; a scoped id (a LangGraph `key@namespace`, a
    Chroma `id@collection`) keeps its scope, which says where the memory is."""
    local, at, scope = memory_id.rpartition("@")
    if not at:
        local = memory_id
    if len(local) >= 16 and _GENERATED.fullmatch(local):
        local = local[:8]
    elif len(local) > 16:
        local = local[:16] + "…"
    return local + (f"@{scope if len(scope) <= 24 else scope[:24] + '…'}" if at else "")


_GENERATED = re.compile(r"[0-9a-fA-F-]+")


class Action:
    """Base of all edits. `apply` does (first time) or redoes; `revert` undoes.

    `shown` is the row (or id -> row) as the user saw it; when given, any difference in
    SHOWN_FIELDS at write time raises ConflictError carrying both versions.
    """

    name = "edit"    # the audit action; undo/redo are audited as "undo:<name>" / "redo:<name>"
    verb = "Edit"    # for undo menu texts
    past = None      # for the status line ("Deleted 2 memories"); the verb when None

    def __init__(self, ids, *, shown_rows=None, note: str | None = None):
        self.ids = [ids] if isinstance(ids, str) else list(dict.fromkeys(ids))
        if not self.ids:
            raise ValidationError("no memory chosen")
        if shown_rows is not None and "id" in shown_rows and len(self.ids) == 1:
            shown_rows = {self.ids[0]: shown_rows}
        self.expected = {i: shown(r) for i, r in (shown_rows or {}).items()}
        self.note = note
        self.state = "new"  # new -> done <-> undone

    @property
    def label(self) -> str:
        return f"{self.verb} {shown_id(self.ids[0])}" if len(self.ids) == 1 else f"{self.verb} {count(len(self.ids), 'memory')}"

    def apply(self, store) -> Outcome:
        if self.state == "done":
            raise StoreError(f"{self.label} is already done")
        out = self._do(store) if self.state == "new" else self._redo(store)
        self.state = "done"
        return out

    def revert(self, store) -> Outcome:
        if self.state != "done":
            raise StoreError(f"{self.label} is not done, so it cannot be undone")
        out = self._undo(store)
        self.state = "undone"
        return out

    def retarget(self, current_rows) -> Action:
        """After a conflict the user chose to apply this edit to the row as it is now: the same
        edit, expecting `current_rows` (row or id -> row) instead."""
        if self.state != "new":
            raise StoreError("only an edit that was not written can be retried against the current row")
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        if "id" in current_rows and len(self.ids) == 1:
            current_rows = {self.ids[0]: current_rows}
        clone.expected = {i: shown(r) for i, r in current_rows.items()}
        return clone

    def _rows(self, store) -> dict[str, dict]:
        rows = {r["id"]: r for r in store.get_many(self.ids)}
        missing = [i for i in self.ids if i not in rows]
        if missing:
            raise StoreError(f"No memory with id {missing[0]!r} in this store.")
        return rows

    def _do(self, store) -> Outcome:
        raise NotImplementedError

    def _undo(self, store) -> Outcome:
        raise NotImplementedError

    def _redo(self, store) -> Outcome:
        raise NotImplementedError


class FieldAction(Action):
    """An edit that sets fields of existing rows: all rows in one transaction."""

    def changes_for(self, row: dict) -> dict | None:
        """The fields to set on `row`, or None when the row is already so."""
        raise NotImplementedError

    def refusal(self, row: dict) -> str | None:
        """Why this edit makes no sense for `row` (None = fine)."""
        return None

    def refuse_together(self, rows: dict[str, dict]) -> None:
        """Raise where the rows as a whole refuse the edit (one error naming all of them), before
        any row's own refusal; default: nothing."""

    def _do(self, store) -> Outcome:
        rows = self._rows(store)
        self.refuse_together(rows)
        for i in self.ids:
            why = self.refusal(rows[i])
            if why:
                raise ValidationError(why)
        changes = {i: ch for i in self.ids if (ch := self.changes_for(rows[i]))}
        if not changes:
            raise ValidationError(f"nothing to change: {self.label.lower()} would leave the memory as it is")
        # Without a snapshot from the UI, the rows as just read guard the fields being changed.
        expected = {i: self.expected.get(i) or {k: rows[i][k] for k in ch} for i, ch in changes.items()}
        done = store.update_rows(changes, action=self.name, expected=expected, note=self.note)
        self._before = {i: b for i, (b, _) in done.items()}
        self._after = {i: a for i, (_, a) in done.items()}
        return Outcome(f"{self.past or self.verb + ':'} {count(len(done), 'memory')}", list(done))

    def _undo(self, store) -> Outcome:
        # the values as they were stored (an agent's 'very high' or ISO time too), put back as they were
        store.update_rows({i: as_stored(b) for i, b in self._before.items()}, action="undo:" + self.name,
                          expected=self._after, note=self.note)
        return Outcome(f"Undone: {self.verb.lower()} of {count(len(self._before), 'memory')}", list(self._before))

    def _redo(self, store) -> Outcome:
        store.update_rows(self._after, action="redo:" + self.name, expected=self._before, note=self.note)
        return Outcome(f"Redone: {self.verb.lower()} of {count(len(self._after), 'memory')}", list(self._after))


class Confirm(FieldAction):
    """Protect: never decayed, pruned or superseded by automation."""

    name, verb, past = "confirm", "Confirm", "Confirmed"

    def changes_for(self, row):
        return None if row["protected"] and row["decay_rate"] == 0 else {"protected": 1, "decay_rate": 0.0}


class Unprotect(FieldAction):
    """Undo a confirmation made earlier (or by the agent): decay resumes at its earlier rate."""

    name, verb, past = "unprotect", "Unprotect", "Unprotected"

    def _do(self, store):
        self._rates = {i: _rate_before_confirm(store, i) for i in self.ids}
        return super()._do(store)

    def changes_for(self, row):
        if not row["protected"]:
            return None
        rate = row["decay_rate"] if row["decay_rate"] else self._rates[row["id"]]
        return {"protected": 0, "decay_rate": rate}


def _rate_before_confirm(store, memory_id: str) -> float:
    """The decay rate the latest confirm replaced, as a number (an agent's unreadable rate was shown,
    and is given back, as the default)."""
    for entry in reversed(store.history(memory_id)):
        before = entry["before"] or {}
        if entry["action"] in ("confirm", "redo:confirm") and before.get("decay_rate"):
            return read_number(before["decay_rate"], "decay_rate")[0]
    return DEFAULT_DECAY_RATE


def _holds(row: dict, col: str, value) -> bool:
    """`row` already holds `value` in `col`: it is shown so and stored so (an agent's 'very high',
    shown as 5, does not hold 5: setting 5 repairs it)."""
    return row[col] == value and col not in row["unreadable"]


class ProtectedError(ValidationError):
    """A soft-delete met protected memories it was not told to include: nothing was written.
    `ids` are the protected ones; each surface says how to include them."""

    def __init__(self, ids: list[str], chosen: int):
        self.ids, self.chosen = list(ids), chosen
        super().__init__(self.said())

    def said(self, whole_ids: bool = False) -> str:
        """The message; `whole_ids` for a shell, where the ids are typed again (else shortened)."""
        n = len(self.ids)
        which = ", ".join(self.ids) if whole_ids else ", ".join(shown_id(i) for i in self.ids[:5]) + (", …" if n > 5 else "")
        who = count(n, "memory") if n == self.chosen else f"{n:,} of the {count(self.chosen, 'memory')} chosen"
        return (f"Nothing deleted: {who} {'is' if n == 1 else 'are'} protected ({which}). "
                "Protection keeps a memory from being removed by accident.")


class SoftDelete(FieldAction):
    """valid_until = now; the row stays, listed in the retired view. Protected memories are
    deleted only when `include_protected` says the user chose to (else ProtectedError)."""

    name, verb, past = "soft_delete", "Delete", "Deleted"

    def __init__(self, ids, *, when=None, include_protected: bool = False, **kw):
        super().__init__(ids, **kw)
        self.when = when
        self.include_protected = include_protected

    def refuse_together(self, rows):
        if not self.include_protected:
            protected = [i for i in self.ids if rows[i]["protected"] and rows[i]["valid_until"] is None]
            if protected:
                raise ProtectedError(protected, len(self.ids))

    def refusal(self, row):
        if row["valid_until"] is not None:
            return f"memory {row['id']} is already retired"
        return None

    def changes_for(self, row):
        return {"valid_until": int(self.when if self.when is not None else time.time())}


class Restore(FieldAction):
    """Clear valid_until: the memory is current again."""

    name, verb, past = "restore", "Restore", "Restored"

    def refusal(self, row):
        if row["valid_until"] is None:
            return f"memory {row['id']} is not retired, so there is nothing to restore"
        return None

    def changes_for(self, row):
        return {"valid_until": None}


class SetImportance(FieldAction):
    name, verb = "set_importance", "Set importance"

    def __init__(self, ids, importance: float, **kw):
        super().__init__(ids, **kw)
        try:
            self.importance = float(importance)
        except (TypeError, ValueError):
            raise ValidationError(f"importance must be a number, not {importance!r}") from None
        if not 0 <= self.importance <= 10:
            raise ValidationError(f"importance {self.importance:g} is outside 0-10")
        self.verb = f"Set importance {self.importance:g}"
        self.past = f"Set importance {self.importance:g} on"

    def changes_for(self, row):
        return None if _holds(row, "importance", self.importance) else {"importance": self.importance}


class SetTags(FieldAction):
    """Replace the tags (`tags`), or add / remove some on every chosen memory."""

    name, verb, past = "set_tags", "Set tags", "Set the tags of"

    def __init__(self, ids, tags=None, *, add=(), remove=(), **kw):
        super().__init__(ids, **kw)
        self.tags = None if tags is None else _clean_tags(tags)
        self.add, self.remove = _clean_tags(add), set(_clean_tags(remove))

    def changes_for(self, row):
        tags = list(self.tags) if self.tags is not None else [str(t) for t in row["tags"]]
        tags = [t for t in tags + [a for a in self.add if a not in tags] if t not in self.remove]
        return None if _holds(row, "tags", tags) else {"tags": tags}


def _clean_tags(tags) -> list[str]:
    if isinstance(tags, str):
        tags = tags.split(",")
    out = []
    for t in tags:
        if not isinstance(t, str):
            raise ValidationError(f"a tag must be text, not {t!r}")
        t = t.strip()
        if t and t not in out:
            out.append(t)
    return out


class Correct(Action):
    """Supersede (GLOSSARY: supersede; the assistant memory's `correct_fact`): the old row retires, a new row carries the new text
    and a new embedding from the store's model, computed before the write transaction. When
    that model is unavailable the new row is marked needs_embedding and the outcome says so."""

    name, verb = "correct", "Correct"

    def __init__(self, memory_id: str, new_content: str, *, embedder: Embedder | None = None,
                 embedded: tuple | None = None, **kw):
        """`embedded`: (vector, model, warning) of the new text made beforehand by `embed_text`
        (the window does it on a worker): the write then embeds nothing, it only checks the
        vector's model against the store."""
        super().__init__(memory_id, **kw)
        if len(self.ids) != 1:
            raise ValidationError("a correction applies to one memory")
        if not isinstance(new_content, str) or not new_content.strip():
            raise ValidationError("the corrected text is empty")
        self.content = new_content.strip()
        self.embedder = embedder
        self.new_id: str | None = None
        self._given = embedded
        self._embedded = None  # (vector, model, warning), kept so a retry after busy does not re-embed

    @property
    def old_id(self) -> str:
        return self.ids[0]

    def _do(self, store) -> Outcome:
        row = self._rows(store)[self.old_id]
        if row["valid_until"] is not None:
            raise ValidationError(f"memory {self.old_id} is retired; restore it before correcting it")
        if row["content"] == self.content:
            raise ValidationError("the corrected text is the same as the memory's text")
        if self._embedded is None:
            self._embedded = embed_for_store(store, self.content, self.embedder, embedded=self._given)
        vec, model, warning = self._embedded
        expected = self.expected.get(self.old_id) or {"content": row["content"], "valid_until": None}
        self.when = int(time.time())
        self._before = {k: row[k] for k in ("content", "embedding", "embedding_model")}
        self.new_id = store.supersede(self.old_id, self.content, embedding=vec, embedding_model=model, when=self.when,
                                      expected=expected, note=self.note)
        if self.in_place:
            return Outcome(f"Corrected {shown_id(self.old_id)} in place", [self.old_id], warning)
        return Outcome(f"Corrected {shown_id(self.old_id)}: new memory {shown_id(self.new_id)}", [self.old_id, self.new_id], warning,
                       {self.old_id: self.new_id})

    @property
    def in_place(self) -> bool:
        """A store of a system that corrects a memory by rewriting it (mem0, a LangGraph put)
        keeps its id (memviz.frameworks.Source.corrects_in_place): undo and redo swap texts."""
        return self.new_id == self.old_id

    def _swap_text(self, store, to: dict, shown_text: str, verb: str) -> Outcome:
        changes = {"content": to["content"]}
        if to.get("embedding") is not None:
            changes.update(embedding=to["embedding"], embedding_model=to["embedding_model"])
        store.update_rows({self.old_id: changes}, action=verb + ":" + self.name, note=self.note,
                          expected={self.old_id: {"content": shown_text}})
        return Outcome(f"{verb.capitalize()}ne: correction of {shown_id(self.old_id)}", [self.old_id])

    def _undo(self, store) -> Outcome:
        if self.in_place:
            self._after = {k: v for k, v in (store.get(self.old_id) or {}).items()
                           if k in ("content", "embedding", "embedding_model")}
            return self._swap_text(store, self._before, self.content, "undo")
        self.undone_at = int(time.time())
        store.update_rows({self.new_id: {"valid_until": self.undone_at}, self.old_id: {"valid_until": None}},
                          action="undo:" + self.name, note=self.note,
                          expected={self.new_id: {"valid_until": None, "content": self.content},
                                    self.old_id: {"valid_until": self.when}})
        return Outcome(f"Undone: correction of {shown_id(self.old_id)}", [self.old_id, self.new_id])

    def _redo(self, store) -> Outcome:
        if self.in_place:
            return self._swap_text(store, self._after, self._before["content"], "redo")
        self.when = int(time.time())
        store.update_rows({self.new_id: {"valid_until": None}, self.old_id: {"valid_until": self.when}},
                          action="redo:" + self.name, note=self.note,
                          expected={self.new_id: {"valid_until": self.undone_at, "content": self.content},
                                    self.old_id: {"valid_until": None}})
        return Outcome(f"Redone: correction of {shown_id(self.old_id)}", [self.old_id, self.new_id],
                       replaced={self.old_id: self.new_id})


def embed_for_store(store, text: str, embedder: Embedder | None = None, *, embedded: tuple | None = None):
    """(vector, model, warning): the text embedded by the store's main model, or (None, None,
    why) when that model cannot be used here; never a vector of another model.

    With an `embedder` at hand (the app keeps one per store) only a cheap check runs; without,
    the store's main model is looked up, which reads every row. With `embedded` (what
    `embed_text` made, e.g. on a worker) nothing is embedded: only its model is checked."""
    try:
        if embedded is not None:
            vec, model, _warning = embedded
            if vec is not None:
                _check_model(store, model, len(vec))
            return embedded
        if embedder is not None:
            _check_model(store, embedder.model, embedder.dim)
            emb = embedder
        else:
            emb = embedder_for(*store.main_model())
        vec = emb.embed_one(text)
    except (EmbedderUnavailable, EmbeddingError) as e:
        return without_embedding(e)
    return vec, emb.model, None


def embed_text(embedder: Embedder, text: str):
    """(vector, model, None), or (None, None, why) when the embedder failed. Touches no store,
    so it can run on a worker thread while the window keeps its connection."""
    try:
        return embedder.embed_one(text), embedder.model, None
    except (EmbedderUnavailable, EmbeddingError) as e:
        return without_embedding(e)


def without_embedding(why) -> tuple:
    """The (vector, model, warning) of a correction written without an embedding."""
    return None, None, (f"The corrected memory has no embedding yet ({why}); it is marked as needing one "
                        "and semantic search will not find it until it is embedded.")


def _check_model(store, model: str, dim: int) -> None:
    """Refuse vectors of a model the store does not use (a store with no vectors takes any)."""
    if store.model_dim(model) != dim:
        main, main_dim = store.main_model()
        if main is not None:
            raise EmbedderUnavailable(f"the embedder at hand makes {model} {dim}-d vectors, "
                                      f"but this store uses {main} {main_dim}-d")
