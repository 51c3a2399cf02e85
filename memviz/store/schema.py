"""The native schema, its registered migrations, and recognition of what a file holds.

Migrations are numbered and recorded in `memviz_migrations`; `migrate()` applies
the ones a store lacks inside one transaction each. A new schema change is a new
function appended to MIGRATIONS, never an edit of an old one.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from .vectors import VEC_PREFIX, declared_dim, native_vec_triggers, vec_shadow_tables

MEMORY_COLUMNS = (
    "id", "agent", "kind", "content", "importance", "embedding", "embedding_model",
    "event_time", "created_at", "valid_until", "confidence", "access_count",
    "last_accessed", "decay_rate", "protected", "source_ids", "entity_ids", "tags",
    "attributes",
)
JSON_LIST_COLUMNS = ("source_ids", "entity_ids", "tags")
JSON_COLUMNS = JSON_LIST_COLUMNS + ("attributes",)

_V1 = [
    """CREATE TABLE memories (
        id              TEXT PRIMARY KEY,
        agent           TEXT NOT NULL DEFAULT '',
        kind            TEXT NOT NULL,           -- episode | fact | preference | reflection | ...
        content         TEXT NOT NULL,
        importance      REAL NOT NULL DEFAULT 5, -- 1-10 poignancy
        embedding       BLOB,                    -- float32, little-endian
        embedding_model TEXT,
        event_time      INTEGER NOT NULL,        -- UTC epoch seconds
        created_at      INTEGER NOT NULL,
        valid_until     INTEGER,                 -- NULL = current; set = superseded or soft-deleted
        confidence      REAL NOT NULL DEFAULT 1.0,
        access_count    INTEGER NOT NULL DEFAULT 0,
        last_accessed   INTEGER,
        decay_rate      REAL NOT NULL DEFAULT 0.1,
        protected       INTEGER NOT NULL DEFAULT 0,
        source_ids      TEXT NOT NULL DEFAULT '[]',
        entity_ids      TEXT NOT NULL DEFAULT '[]',
        tags            TEXT NOT NULL DEFAULT '[]',
        attributes      TEXT NOT NULL DEFAULT '{}'
    )""",
    "CREATE INDEX idx_memories_agent_kind ON memories(agent, kind)",
    "CREATE INDEX idx_memories_event_time ON memories(event_time)",
    "CREATE INDEX idx_memories_valid_until ON memories(valid_until)",
    """CREATE TABLE entities (
        id             TEXT PRIMARY KEY,
        canonical_name TEXT NOT NULL,
        type           TEXT NOT NULL,            -- person | project | org | concept | tool
        aliases        TEXT DEFAULT '[]',
        summary        TEXT,
        embedding      BLOB,
        mention_count  INTEGER DEFAULT 1,
        protected      INTEGER DEFAULT 0
    )""",
    "CREATE VIRTUAL TABLE memories_fts USING fts5(content, content='memories', content_rowid='rowid', tokenize='unicode61')",
    "CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN "
    "INSERT INTO memories_fts(rowid, content) VALUES (new.rowid, new.content); END",
    "CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN "
    "INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.rowid, old.content); END",
    "CREATE TRIGGER memories_fts_au AFTER UPDATE OF content ON memories BEGIN "
    "INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.rowid, old.content); "
    "INSERT INTO memories_fts(rowid, content) VALUES (new.rowid, new.content); END",
    "CREATE TABLE memviz_meta (key TEXT PRIMARY KEY, value TEXT)",
    """CREATE TABLE memviz_audit (
        id        INTEGER PRIMARY KEY,
        at        REAL NOT NULL,                 -- UTC epoch seconds
        action    TEXT NOT NULL,                 -- insert | update | soft_delete | restore | supersede | ...
        memory_id TEXT NOT NULL,
        before    TEXT,                          -- JSON of the changed fields before, NULL for inserts
        after     TEXT,                          -- JSON of the changed fields after
        actor     TEXT NOT NULL DEFAULT 'memviz',
        note      TEXT
    )""",
    "CREATE INDEX idx_audit_memory ON memviz_audit(memory_id, id)",
    """CREATE TABLE memviz_layouts (
        key        TEXT PRIMARY KEY,             -- method + model + params + memory-set hash
        method     TEXT NOT NULL,
        model      TEXT,
        params     TEXT NOT NULL DEFAULT '{}',
        created_at REAL NOT NULL,
        ids        TEXT NOT NULL,                -- JSON list of memory ids, row order of coords
        coords     BLOB NOT NULL                 -- float32 (n, 2)
    )""",
]

NATIVE_TRIGGERS = {
    re.match(r"CREATE TRIGGER (\S+)", s).group(1): s for s in _V1 if s.startswith("CREATE TRIGGER")
}


def _m1_native_schema(conn):
    for sql in _V1:
        conn.execute(sql)


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    apply: object  # callable(conn)


# The change log (memviz.store.changes): one row per memory rowid holding the sequence number of
# its last update or delete, kept by triggers so that the agent's own SQL is logged too. Inserts
# need no entry (they are the rowids above the last one seen). One row per memory, so it never
# outgrows the store; the index on seq makes "what changed since N" a range read.
_V2 = [
    "CREATE TABLE memviz_changes (memory_rowid INTEGER PRIMARY KEY, seq INTEGER NOT NULL)",
    "CREATE INDEX idx_changes_seq ON memviz_changes(seq)",
    "CREATE TRIGGER memviz_changes_au AFTER UPDATE ON memories BEGIN "
    "INSERT INTO memviz_changes(memory_rowid, seq) VALUES (new.rowid, "
    "(SELECT coalesce(max(seq), 0) + 1 FROM memviz_changes)) "
    "ON CONFLICT(memory_rowid) DO UPDATE SET seq = excluded.seq; END",
    "CREATE TRIGGER memviz_changes_ad AFTER DELETE ON memories BEGIN "
    "INSERT INTO memviz_changes(memory_rowid, seq) VALUES (old.rowid, "
    "(SELECT coalesce(max(seq), 0) + 1 FROM memviz_changes)) "
    "ON CONFLICT(memory_rowid) DO UPDATE SET seq = excluded.seq; END",
]
CHANGE_TRIGGERS = {re.match(r"CREATE TRIGGER (\S+)", s).group(1): s for s in _V2 if s.startswith("CREATE TRIGGER")}


def _m2_change_log(conn):
    for sql in _V2:
        conn.execute(sql)


# memviz's own records about the store (memviz.store.judged): judged queries, each a JSON object
# of judge/files.py's JSON Lines form kept in a named set at its place (`position`), and named
# parameter sets (a preset's weights and knobs, `values_json`). Neither names a memory by rowid:
# a judged query names memories by id, inside its JSON.
JUDGED_TABLES = ("memviz_judged", "memviz_parameter_sets")
_V3 = [
    """CREATE TABLE IF NOT EXISTS memviz_judged (
        set_name   TEXT NOT NULL,
        query_id   TEXT NOT NULL,
        position   INTEGER NOT NULL,             -- the query's place in its set
        query      TEXT NOT NULL,                -- the judged query as a JSON object
        judged_by  TEXT NOT NULL DEFAULT '',
        judged_at  REAL,                         -- UTC epoch seconds
        PRIMARY KEY (set_name, query_id)
    )""",
    """CREATE TABLE IF NOT EXISTS memviz_parameter_sets (
        name        TEXT PRIMARY KEY,
        preset      TEXT NOT NULL,
        values_json TEXT NOT NULL DEFAULT '{}',  -- Params fields -> values, a JSON object
        description TEXT NOT NULL DEFAULT '',
        created_at  REAL NOT NULL
    )""",
]


def _m3_judged(conn):
    for sql in _V3:
        conn.execute(sql)


# The columns a whole read scans (arrays.py), apart from the vectors: a memories row holds its
# embedding, so a scan of the table reads every vector's bytes; this index holds the rest (a
# tenth of the table's size), and SQLite scans it instead where a read asks for nothing else.
# Its last two columns are expressions the read asks for as written here (a blob's size; whether
# the JSON columns are well-formed: arrays.py builds its queries from these texts), and SQLite
# takes an expression's value from an index only where the two are the same expression.
READ_INDEX = "memviz_read_columns"
BLOB_SIZE_SQL = "CASE WHEN typeof(embedding) = 'blob' THEN length(embedding) END"
JSON_OK_SQL = """CASE WHEN source_ids = '[]' THEN 1 ELSE json_valid(source_ids) END
              AND CASE WHEN entity_ids = '[]' THEN 1 ELSE json_valid(entity_ids) END
              AND CASE WHEN tags = '[]' THEN 1 ELSE json_valid(tags) END
              AND CASE WHEN attributes = '{}' THEN 1 ELSE json_valid(attributes) END"""
READ_INDEX_SQL = (f"CREATE INDEX IF NOT EXISTS {READ_INDEX} ON memories(id, importance, event_time, created_at, "
                  "valid_until, confidence, access_count, last_accessed, decay_rate, protected, embedding_model, "
                  f"({BLOB_SIZE_SQL}), ({JSON_OK_SQL}))")


def _m4_read_index(conn):
    conn.execute(READ_INDEX_SQL)


MIGRATIONS: list[Migration] = [
    Migration(1, "native schema: memories, entities, fts5, meta, audit, layouts", _m1_native_schema),
    Migration(2, "change log: memviz_changes kept by triggers (live refresh by delta)", _m2_change_log),
    Migration(3, "judged queries and parameter sets: memviz_judged, memviz_parameter_sets", _m3_judged),
    Migration(4, "read index: the columns a whole read scans, apart from the vectors", _m4_read_index),
]
SCHEMA_VERSION = MIGRATIONS[-1].version


def applied_version(conn) -> int:
    if not _table_exists(conn, "memviz_migrations"):
        return 0
    row = conn.execute("SELECT max(version) FROM memviz_migrations").fetchone()
    return int(row[0] or 0)


def migrate(conn) -> list[int]:
    """Apply every registered migration the store lacks, each in its own transaction."""
    done = []
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memviz_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
    )
    current = applied_version(conn)
    for m in MIGRATIONS:
        if m.version <= current:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            m.apply(conn)
            conn.execute(
                "INSERT INTO memviz_migrations(version, name, applied_at) VALUES (?,?,?)",
                (m.version, m.name, time.time()),
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite may have rolled back already (a full disk): keep its error
                conn.execute("ROLLBACK")
            raise
        done.append(m.version)
    return done


def _table_exists(conn, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone() is not None


def _norm_sql(sql: str) -> str:
    return re.sub(r"\s+", " ", sql or "").strip().rstrip(";").lower()


@dataclass
class SchemaReport:
    """What a file holds, compared with the native schema."""

    kind: str  # "native" | "empty" | "foreign"
    version: int = 0
    missing_columns: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    vec_tables: dict[int, str] = field(default_factory=dict)  # declared dim -> table
    #: vec0 tables whose declared dimension is not the one their name says: table -> declared dim
    #: (None: none found). Vector search cannot use them; `memviz check --repair` makes them again.
    misdeclared: dict[str, int | None] = field(default_factory=dict)
    foreign_objects: list[tuple[str, str, str]] = field(default_factory=list)  # (type, name, sql)
    problems: list[str] = field(default_factory=list)

    def describe_difference(self) -> str:
        if self.kind == "empty":
            return "it is an empty SQLite database (use `memviz create` to make a new store)"
        if self.missing_columns:
            return "its `memories` table lacks the columns " + ", ".join(self.missing_columns)
        shown = ", ".join(self.tables[:12]) + (" …" if len(self.tables) > 12 else "")
        return f"it has no `memories` table (its tables: {shown or 'none'})"


def inspect(conn) -> SchemaReport:
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    tables = sorted(n for t, n, _, _ in rows if t == "table" and not n.startswith("sqlite_"))
    if not rows:
        return SchemaReport("empty")
    if "memories" not in tables:
        return SchemaReport("foreign", tables=tables)
    cols = {r[1] for r in conn.execute("PRAGMA table_info(memories)").fetchall()}
    missing = [c for c in MEMORY_COLUMNS if c not in cols]
    if missing:
        return SchemaReport("foreign", tables=tables, missing_columns=missing)

    report = SchemaReport("native", version=applied_version(conn), tables=tables)
    expected_triggers = {**NATIVE_TRIGGERS, **CHANGE_TRIGGERS}
    shadow = {"memories_fts_data", "memories_fts_idx", "memories_fts_docsize", "memories_fts_config", "memories_fts_content"}
    for t, name, _, sql in rows:
        if t == "table" and name.startswith(VEC_PREFIX) and sql and "vec0" in sql.lower():
            dim = declared_dim(sql)
            suffix = name[len(VEC_PREFIX):]
            if dim is None or not suffix.isdigit() or int(suffix) != dim:
                report.misdeclared[name] = dim
            else:
                report.vec_tables[dim] = name
            if suffix.isdigit() or dim is not None:
                expected_triggers.update(native_vec_triggers(int(suffix) if suffix.isdigit() else dim))
            shadow |= vec_shadow_tables(name)
    for t, name, _, sql in rows:
        if t in ("trigger", "view"):
            native = expected_triggers.get(name)
            if native is None or _norm_sql(native) != _norm_sql(sql):
                report.foreign_objects.append((t, name, sql or ""))
    return report
