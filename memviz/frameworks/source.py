"""What memviz needs from another system's memory store (mem0, LangGraph, Letta, Chroma, HTM):
recognise it, read its memories as memviz records, tell when it changed, and write back the
edits that system's own semantics allow. One subclass of `Source` per system. No Qt here.

A source is read into a mirror (mirror.py): a native SQLite store in the user cache, kept in
step with the source at open and whenever the source's `token()` moves. Every panel, the
engine and the presets then work unchanged; writes go to the source first, the way its own
client would write them, and then to the mirror.
"""
from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from typing import Any, ClassVar

import numpy as np

from ..embed import LOCAL_DIM, LOCAL_MODEL, EmbedderUnavailable, EmbeddingError, LocalEmbedder, unknown_model
from ..store import ReadOnlyError
from ..store.judged import AgentQuery
from ..tasks import Task

#: the memory fields an edit in memviz may change (store.update_rows), by what they mean to a user
EDIT_NAMES = {
    "content": "correcting a memory's text",
    "importance": "changing importance",
    "tags": "changing tags",
    "protected": "protecting",
    "valid_until": "retiring (soft-deleting) and restoring",
    "insert": "adding memories (reflections, consolidation)",
}


def scoped_id(local_id: str, scope: str) -> str:
    """A memviz id for a record whose own id is unique only within a scope (a namespace, a
    collection): local@scope, with '%' and '@' in the local id escaped so ids never collide."""
    return local_id.replace("%", "%25").replace("@", "%40") + "@" + scope


def identify_model(system: str, dim: int, samples) -> str:
    """The model of a store that does not record it (LangGraph, Chroma): memviz's local model
    when it reproduces the sampled (text, stored vector) pairs, else unknown/<system>-<dim>d,
    which memviz never embeds with (so a correction never mixes another model's vector in)."""
    if dim == LOCAL_DIM and samples:
        try:
            mine = LocalEmbedder().embed([t for t, _v in samples])
        except (EmbedderUnavailable, EmbeddingError):
            return unknown_model(system, dim)
        theirs = np.stack([v for _t, v in samples]).astype(np.float32)
        cos = np.sum(mine * theirs, axis=1) / (np.linalg.norm(mine, axis=1) * np.linalg.norm(theirs, axis=1) + 1e-12)
        if bool(np.all(cos > 0.999)):
            return LOCAL_MODEL
    return unknown_model(system, dim)


class Source:
    """One memory store of another system, opened in place. Subclasses set `system` and
    `title`, implement `recognise`, `records` and `token`, and, for the edits they support,
    list the fields in `edits` and implement `write`."""

    system: ClassVar[str] = ""   # short key: "mem0", "langgraph", ...
    title: ClassVar[str] = ""    # the system's name as users know it: "mem0", "LangGraph store"
    #: fields of EDIT_NAMES this system lets memviz write back (empty: read-only)
    edits: ClassVar[frozenset[str]] = frozenset()
    #: a correction rewrites the memory in place (same id, the system keeps its own history)
    #: rather than retiring it and adding a new memory (memviz's native supersede)
    corrects_in_place: ClassVar[bool] = True

    def __init__(self, target: str, label: str | None = None):
        self.target = target            # what to open again (may hold a DSN's password: never shown)
        self.label = label or target    # for titles and messages

    # ---------------------------------------------------------------- recognising
    @classmethod
    def recognise(cls, probe) -> Source | None:
        """This system's source at `probe.target` (probe.py: cached, cheap looks at the file,
        folder or database), or None when it is not this system's. Never a false match: look
        for the tables/files and columns that only this system makes. Raise a StoreError
        when it IS this system's store but cannot be read (say what is wrong)."""
        raise NotImplementedError

    def describe(self) -> str:
        """One line for the status bar and `memviz SOURCE`: what this is, where, how many."""
        return f"{self.title} store at {self.label}"

    # ---------------------------------------------------------------- reading
    def token(self) -> Any:
        """A cheap value that changes whenever the source's memories change (a count and the
        newest update time, a file's size and mtime, ...). Compared for equality only."""
        raise NotImplementedError

    def records(self, task: Task | None = None) -> Iterable[dict]:
        """Every memory (retired ones with `valid_until`) as a memviz record: a dict of
        memviz.store.schema.MEMORY_COLUMNS — id, agent, kind, content, created_at, importance,
        tags, embedding (float32) + embedding_model, attributes (the system's own fields, under
        its name), source_ids ... Report progress through `task` on long reads."""
        raise NotImplementedError

    def changed_since(self, token: Any, known: Collection[str], task: Task | None = None
                      ) -> tuple[list[dict], set[str]] | None:
        """Optional, for sources too large to read whole at every change: (the records that are
        new or may have changed since `token`, an earlier value of `token()`, given the ids the
        mirror holds; the ids of every record now, so the mirror retires the others). None (the
        default): the mirror reads `records()` and compares every fingerprint."""
        return None

    def in_step(self, token: Any, model: tuple[str, int] | None) -> None:
        """The mirror holds the source as it was at `token` (a reopen with nothing changed): a
        source whose `changed_since` keeps its own row versions may note them now, if its token
        still is `token`, instead of reading everything at the next change. `model`: the
        (embedding_model, dimension) most of the mirror's vectors carry, as the source's last
        read named them (None: the mirror holds no vector). A source that names its model by
        looking at its vectors (identify_model) takes it from there rather than naming it again,
        if its token still is `token`. Default: nothing."""

    def history(self) -> Iterator[dict]:
        """The system's own change history, if it keeps one, as audit rows: dicts with at
        (epoch s), action, memory_id, before, after (dicts or None), note. Default: none."""
        return iter(())

    def agent_queries(self, limit: int = 100) -> list[AgentQuery]:
        """The retrieval queries the system's agent ran, newest first, where the system records
        them (HTM's operations log). Default: it does not."""
        return []

    # ---------------------------------------------------------------- writing
    def write(self, rows: dict[str, dict], changes: dict[str, dict]) -> dict[str, dict]:
        """Apply `changes` (id -> fields, all in `edits`) to the source in one transaction, the
        way the system's own client writes them; `rows` are the memories as memviz shows them
        now (records as `records` made them). Return id -> the changes as they landed in memviz's
        terms (e.g. with a new embedding the system computed). Raise ConflictError when the
        source changed under the edit."""
        raise ReadOnlyError(self.read_only_reason())

    def read_only_reason(self) -> str | None:
        """Why some or all edits are refused here; None when every edit is supported."""
        lacking = [text for field, text in EDIT_NAMES.items() if field not in self.edits]
        if not lacking:
            return None
        if not self.edits:
            return (f"memviz reads {self.title} stores but does not write to them; "
                    "`memviz copy` makes an editable native copy")
        return f"{self.title} stores do not support {', '.join(lacking)} from memviz"

    def refusal(self, fields: Iterable[str]) -> str | None:
        """Why edits of `fields` cannot be written to this system's store (None: they can)."""
        bad = [f for f in fields if f not in self.edits]
        if not bad:
            return None
        names = ", ".join(EDIT_NAMES.get(f, f) for f in bad)
        return (f"{self.label} is a {self.title} store: memviz cannot write {names} to it "
                f"(it supports: {', '.join(EDIT_NAMES[f] for f in sorted(self.edits)) or 'no edits'}). "
                "`memviz copy` makes an editable native copy.")

    def refuse(self, fields: Iterable[str]) -> None:
        """ReadOnlyError naming the edits this system lacks among `fields`."""
        if why := self.refusal(fields):
            raise ReadOnlyError(why)

    def close(self) -> None:
        """Release connections; the default holds none between calls."""
