"""A `memories` table memviz did not make (another app's, or a hand-made one): read it through
session-local stand-ins, read-only. No Qt here.

PostgreSQL looks up names in the session's temporary schema first, so a TEMP VIEW named
`memories` that maps the table's columns onto the native ones (defaults for what it lacks,
epoch seconds from timestamps, `embedding_<d>` from any pgvector column of a fixed size) and
empty TEMP tables for the native tables it lacks let every read of PgStore work unchanged,
while nothing is created in the database itself. `install` runs on each new connection
(they vanish with the session). Writing is refused, with what differs.
"""
from __future__ import annotations

from ..schema import MEMORY_COLUMNS
from . import schema

# native column -> (SQL default when absent, kind of value it takes)
_NATIVE = {
    "rowid": ("NULL", "int"), "id": (None, "text"), "agent": ("''", "text"), "kind": ("'fact'", "text"),
    "content": (None, "text"), "importance": ("5", "float"), "embedding_model": ("NULL", "text"),
    "event_time": ("0", "time"), "created_at": ("0", "time"), "valid_until": ("NULL", "time"),
    "confidence": ("1.0", "float"), "access_count": ("0", "int"), "last_accessed": ("NULL", "time"),
    "decay_rate": ("0.1", "float"), "protected": ("0", "int"), "source_ids": ("'[]'", "json"),
    "entity_ids": ("'[]'", "json"), "tags": ("'[]'", "json"), "attributes": ("'{}'", "json"),
}
_NUMBER = {"smallint", "integer", "bigint", "real", "double precision", "numeric"}
_TEXT = {"text", "character varying", "character", "name", "uuid"}
_TIME = {"timestamp with time zone", "timestamp without time zone", "date"}
_CAST = {"int": "bigint", "float": "double precision", "time": "bigint"}


def _columns(conn) -> dict[str, tuple[str, int]]:
    """The real `memories` table's columns: name -> (type name, typmod)."""
    return {name: (typ, mod) for name, typ, mod in conn.execute(
        "SELECT a.attname, format_type(a.atttypid, NULL), a.atttypmod FROM pg_attribute a "
        "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
        (_real_memories(conn),)).fetchall()}


def _real_memories(conn) -> str:
    return conn.execute("SELECT quote_ident(current_schema()) || '.memories'").fetchone()[0]


def _expr(col: str, typ: str, kind: str) -> str | None:
    """SQL giving the native value from a column of type `typ`, or None when it cannot."""
    q = f'"{col}"'
    if kind == "text" and (typ in _TEXT or typ in _NUMBER or typ in ("json", "jsonb")):
        return f"{q}::text"
    if kind == "json" and typ in ("json", "jsonb", *_TEXT):
        return f"{q}::text"
    if kind == "json" and typ.endswith("[]"):
        return f"to_json({q})::text"
    if kind in ("int", "float") and typ in _NUMBER | {"boolean"}:
        return f"{q}::integer::{_CAST[kind]}" if typ == "boolean" else f"{q}::{_CAST[kind]}"
    if kind == "time" and typ in _TIME:
        return f"extract(epoch FROM {q})::bigint"
    if kind == "time" and typ in _NUMBER:
        return f"{q}::bigint"
    return None


def plan(conn) -> tuple[list[str], list[str], list[str]]:
    """(select list of the stand-in view, what differs from the native schema, what is unusable).
    Unusable (no id or no content to show) means memviz cannot read it at all."""
    cols = _columns(conn)
    select, differs, unusable, absent = [], [], [], []
    for native, (default, kind) in _NATIVE.items():
        if native in cols:
            expr = _expr(native, *((cols[native][0], kind)))
            if expr is None:
                differs.append(f"memories.{native} is {cols[native][0]}")
        else:
            expr = None
            if native != "rowid":
                absent.append(native)
        if expr is None:
            if default is None:
                unusable.append(f"a text column `{native}`")
                continue
            if native == "rowid":  # the row's place in the table: unique and steady while read
                default = "(((ctid::text::point)[0])::bigint * 65536 + ((ctid::text::point)[1])::bigint)"
            elif kind == "time" and native == "event_time" and "created_at" in cols:
                default = _expr("created_at", cols["created_at"][0], "time") or default
            expr = f"{default}::{_CAST.get(kind, 'text')}" if default != "NULL" else f"NULL::{_CAST.get(kind, 'text')}"
        select.append(f"{expr} AS {native}")
    if absent:
        differs.insert(0, "memories lacks " + ", ".join(absent))
    dims = set()
    for name, (typ, mod) in cols.items():
        if typ == "vector" and mod > 0 and mod not in dims:
            dims.add(mod)
            select.append(f'"{name}" AS {schema.vec_column(mod)}')
        elif typ == "vector":
            differs.append(f"memories.{name} is a vector of no fixed size (not shown)")
    select.append("to_tsvector('simple', coalesce(" + _expr("content", cols.get("content", ("text", 0))[0], "text")
                  + ", '')) AS content_tsv" if "content" in cols else "NULL::tsvector AS content_tsv")
    native_names = set(_NATIVE) | {"content_tsv", *MEMORY_COLUMNS}
    extra = [c for c in cols if c not in native_names and not schema.VEC_COLUMN.match(c)
             and cols[c][0] != "vector"]
    if extra:
        differs.append("extra columns " + ", ".join(extra))
    return select, differs, unusable


def missing_tables(conn) -> list[str]:
    return [t for t in schema.NATIVE_TABLES if t != "memories"
            and conn.execute("SELECT to_regclass(%s)", (t,)).fetchone()[0] is None]


def install(conn) -> None:
    """The stand-ins on this connection (session-local; nothing is written to the database)."""
    select, _differs, _unusable = plan(conn)
    real = _real_memories(conn)
    for table in missing_tables(conn):
        ddl = next((s for s in schema.MIGRATIONS[0][2] if s.startswith(f"CREATE TABLE {table} ")), None)
        if ddl is None:  # memviz_migrations
            ddl = f"CREATE TABLE {table} (version integer PRIMARY KEY, name text NOT NULL, applied_at double precision)"
        conn.execute(ddl.replace("CREATE TABLE", "CREATE TEMP TABLE", 1))
    conn.execute(f"CREATE TEMP VIEW memories AS SELECT {', '.join(select)} FROM {real}")
