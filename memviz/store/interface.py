"""The store interface: what the engine, edits, reflection, importers and the window may
call on a memory store, whichever backend holds it (SQLite file or PostgreSQL server).

Both `memviz.store.store.Store` (SQLite) and `memviz.store.postgres.PgStore` implement it.
Values cross it in one form for both backends: ids and texts as str, times as UTC epoch
seconds (int), embeddings as float32 little-endian bytes, JSON columns as JSON text (rows
from get()/get_many() decode them), `arrays()` as MemoryArrays in store order.

`transaction()` yields the backend's own cursor and `audit(c, …)` writes into it: the SQL a
caller runs inside is backend-specific, so only the store's own modules (memviz/store) do
that. Everything else asks a method here; a read-decide-write in one transaction is
`rewrite_rows`. What only one backend has is asked for by `backend` and said where it is
used: the SQLite file's own checks and repairs (`store/check.py`, `stats`, the vec0 tables in
`edits/verify.py`); the samples and imports build SQLite files (their entity rows, checkpoint
and VACUUM), an import into a database is then copied there (`store/copy.py`). What a store
whose `backend` is "sqlite" gives besides is `SqliteFile` below.

Whatever another layer asks a store is declared here: nothing outside memviz/store probes a
store with getattr/hasattr (tests/test_contracts.py checks the app). The implementations:
the SQLite `Store`, `postgres.PgStore`, and `frameworks.mirror.MirroredStore` (another system's
store read into an SQLite mirror); `common.StoreCommon` gives the defaults they share.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .arrays import MemoryArrays
from .judged import SAVE_JUDGED, SAVE_PARAMETERS, UNCHECKED, AgentQuery, JudgedRow, SavedParameters

if TYPE_CHECKING:
    import apsw
    import numpy as np

    from .changes import Changes
    from .clock import Clock
    from .schema import SchemaReport


@runtime_checkable
class MemoryStore(Protocol):
    # ------------------------------------------------------------- what the store is, where it lives
    #: how titles, recent files and messages name where it lives: a file's path, a DSN without
    #: its password, another system's store by its label
    path: str
    #: what opens it again (`memviz.store.open_store`, `frameworks.open_source`; a copy's source): a
    #: path, or a DSN with its password (never shown)
    location: str
    #: which backend answers ("sqlite", "postgresql"): for what only one of them has (FTS5, vec0, pg indexes)
    backend: str
    read_only_reason: str | None
    #: the clock this session measures the store's ages from, chosen by the user (`--now`, Tools ▸
    #: Set store clock), over the store's own (store/clock.py `store_clock`); None: the store's own
    clock_override: Clock | None
    #: a correction rewrites the memory where it is, keeping its id (another system's store that
    #: keeps one version of each); False: the old memory is retired for a new one superseding it
    corrects_in_place: bool

    def describe(self) -> str:
        """The store as a message names it ("Opened …"): a path, a server's database, another
        system's store with what it holds."""

    @property
    def read_only(self) -> bool: ...

    # ------------------------------------------------------------- work begun at the open that goes on after it
    @property
    def checking(self) -> bool:
        """A check of the store's file is still running (SQLite's quick check of a large file,
        begun once it was read: open_and_read(check_later=True)); edits wait for it."""
    @property
    def indexing(self) -> bool:
        """Its full-text and vector indexes are still being built (a framework mirror's first
        build, after it was read); edits, and the searches that read those indexes, wait for them."""
    @property
    def index_failure(self) -> str | None:
        """Why those indexes could not be built, once that is known (the store is then read-only)."""
    @property
    def answers_later(self) -> bool:
        """Work begun at the open goes on after it returned (`checking`, `indexing`): its outcome
        (damage, an `index_failure`) comes later, and the window follows it."""
    def checked(self) -> list[str]:
        """Wait for the check still running, if any; the damage it found (empty: none, or none ran
        after the open). Damage makes the store read-only."""
    def refuses(self, field: str) -> str | None:
        """Why edits of one field (or "insert") cannot be written to a writable store; None: they can."""
    def close(self) -> None: ...
    def reopen(self) -> MemoryStore: ...
    def __enter__(self): ...
    def __exit__(self, *exc): ...

    # ------------------------------------------------------------- reads
    def data_version(self) -> Any:
        """A value that changes when anyone commits a change to the memories."""
    def meta(self, key: str, default=None): ...
    def embedding_models(self) -> list[tuple[str, int, int]]:
        """(model, dim, count), most used first."""
    def main_model(self) -> tuple[str | None, int]: ...
    def model_dim(self, model: str | None) -> int | None: ...
    def arrays(self, model: str | None = None, preview: int = 0, snapshot: bool = False) -> MemoryArrays: ...
    def arrays_of(self, rowids, model: str | None, dim: int | None, preview: int = 0) -> MemoryArrays:
        """Only the rows of `rowids` (a live refresh), vectors of (`model`, `dim`)."""
    def links_of(self, rowids) -> list[tuple[str, list[str], list[str]]]:
        """(id, source ids, superseded ids) of those of `rowids` that have links."""
    def get(self, memory_id: str) -> dict | None: ...
    def get_many(self, ids, fields=None) -> list[dict]:
        """Rows as get() gives them; with `fields` (names of columns other than the embedding)
        only those and the id, none of the vectors."""
    def counts(self) -> dict: ...
    def time_span(self) -> tuple[int | None, int | None]: ...
    def provenance(self): ...
    def supersede_links(self) -> list[tuple[str, str]]: ...
    def entities(self) -> list[dict]: ...
    def history(self, memory_id: str) -> list[dict]: ...
    def fts_search(self, query: str, limit: int = 100) -> list[tuple[str, float]]:
        """(id, score) best first, lower is better (FTS5 bm25 on SQLite; minus ts_rank on PostgreSQL)."""
    def fts_hits(self, query: str) -> np.ndarray:
        """(rowid, score) of every memory matching any word of `query`, shape (n, 2), unordered
        (the hybrid preset ranks them): fts_search's scores without its join and sort."""
    def vec_search(self, vector, k: int = 50) -> list[tuple[str, float]]:
        """(id, cosine distance) nearest first, from the backend's vector index; none for an
        all-zero vector (it has no cosine to anything)."""
    def integrity(self) -> list[str]: ...
    def vector_index_notes(self) -> list[str]:
        """What the backend's vector indexes lack, in words (`memviz stats`)."""
    # what reflection, the change watcher and the layout cache once asked in raw SQL
    def live_agent_exists(self, agent: str) -> bool: ...
    def importance_since_reflection(self, agent: str, now: float | None = None) -> tuple[int | None, float, int]: ...
    def recent_ids(self, agent: str, n: int) -> list[str]: ...
    def row_meta_columns(self) -> list[list]: ...
    def max_rowid(self) -> int: ...
    def memories_after(self, rowid: int) -> list[tuple[int, str]]: ...
    # a live refresh (store/changes.py asks these; tokens are the backend's own, opaque to callers)
    def change_token(self) -> Any:
        """Where the store stands now (take it just before reading the arrays)."""
    def changes_since(self, token, max_share: float) -> Changes:
        """Rows added and changed since `token`, or why they must be read as a whole (`full`)."""
    def retired_rows(self, limit: int | None = None) -> list[tuple]: ...
    def last_retirements(self) -> dict[str, tuple]: ...
    def layout_row(self, method: str, model: str | None, params: str): ...
    # ... and what consolidation, duplicate checks, the detail panel and context once asked in raw SQL
    def decay_references(self) -> dict[str, float]: ...
    def live_texts_with_words(self, agent: str, words) -> list[tuple[str, str]]: ...
    def missing_entities(self, entity_ids) -> list[str]: ...
    def texts_and_tags(self) -> list[tuple[int, str, str | None]]: ...
    def audit_entries(self, actions=None, *, with_before: bool = False) -> list[tuple]: ...
    def schema_version(self) -> int | None: ...
    def malformed_json(self, column: str) -> list[str]: ...
    def entity_links(self) -> list[tuple[str, str]]: ...

    # ------------------------------------------------------------- memviz's own records about the store (judged.py)
    def judged_sets(self) -> list[tuple[str, int]]:
        """(set name, number of queries) of every judged set kept with the store, by name."""
    def judged_queries(self, set_name: str) -> list[JudgedRow]:
        """A judged set's queries in their order (empty: no such set)."""
    def change_judged(self, set_name: str, write: Sequence[JudgedRow] = (), remove: Iterable[str] = (), *,
                      expected=UNCHECKED, action: str = SAVE_JUDGED, actor: str = "memviz",
                      note: str | None = None) -> dict[str, JudgedRow | None]:
        """Write (add or replace) and remove queries of a set in one audited transaction; the rows
        as they were. A query naming no memory of the store is refused (ValidationError)."""
    def parameter_sets(self) -> list[SavedParameters]:
        """The parameter sets saved with the store, by name."""
    def change_parameter_set(self, name: str, saved: SavedParameters | None, *, expected=UNCHECKED,
                             action: str = SAVE_PARAMETERS, actor: str = "memviz",
                             note: str | None = None) -> SavedParameters | None:
        """Save (or with `saved` None remove) a parameter set, audited; the set as it was."""
    def agent_queries(self, limit: int = 100) -> list[AgentQuery]:
        """The retrieval queries the agent itself ran, newest first, where the store records them
        (HTM's operations log); empty for a store that does not (memviz's own)."""

    # ------------------------------------------------------------- writes (each one short transaction)
    def set_meta(self, key: str, value) -> None: ...
    def put_layout(self, key, method, model, params, created_at, ids_json, coords: bytes) -> None: ...
    def forget_layouts(self, method: str | None = None) -> None: ...
    def transaction(self) -> AbstractContextManager: ...
    def audit(self, c, action, memory_id, before, after, actor, note) -> None: ...
    def insert_memories(self, records, *, audit: bool = True, actor: str = "memviz",
                        note: str | None = None) -> list[str]: ...
    def update_fields(self, memory_id: str, changes: dict, *, action: str = "update", expected: dict | None = None,
                      actor: str = "memviz", note: str | None = None) -> dict: ...
    def update_rows(self, changes: dict[str, dict], *, action: str = "update",
                    expected: dict[str, dict] | None = None, actor: str = "memviz",
                    note: str | None = None) -> dict[str, tuple[dict, dict]]: ...
    def set_valid_until(self, memory_id: str, when, *, action: str | None = None, expected: dict | None = None,
                        actor: str = "memviz", note: str | None = None) -> None: ...
    def rewrite_rows(self, ids, fields, decide, *, actor: str = "memviz") -> list:
        """decide(id -> {field: value as stored}) -> [store.common.RowWrite], written with their
        audit entries, all in one transaction (the rows locked from the read to the commit)."""
    def supersede(self, memory_id: str, new_content: str, *, embedding=None, embedding_model: str | None = None,
                  when=None, new_id_: str | None = None, expected: dict | None = None,
                  actor: str = "memviz", note: str | None = None) -> str: ...


@runtime_checkable
class SqliteFile(MemoryStore, Protocol):
    """What a store whose `backend` is "sqlite" gives besides: its connection, for the file's own
    checks, repairs and statistics (store/check.py, edits/verify.py, commands/stats.py) and for
    the files memviz makes itself (samples, imports, framework mirrors)."""

    conn: apsw.Connection
    #: the file SQLite opens: `location`, a copy of a file on read-only media, a framework store's mirror
    conn_path: str
    #: the schema as the open found it (its vec0 tables, its version); repair() updates it
    report: SchemaReport | None
