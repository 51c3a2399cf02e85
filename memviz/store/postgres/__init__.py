"""The PostgreSQL + pgvector backend of the memory store. No Qt here.

`create(dsn)` makes the native schema on a server; `open(dsn)` returns a PgStore, which
implements `memviz.store.interface.MemoryStore` like the SQLite Store.
"""
from __future__ import annotations

import json
from contextlib import contextmanager

from ..errors import ASKED_READ_ONLY, NotAStoreError
from . import foreign, schema
from .connect import _psycopg, connect, no_vector_message, prepare_new_store, translate, vector_oid
from .dsn import is_dsn, redact
from .store import PgStore

__all__ = ["PgStore", "create", "open_store", "is_dsn", "redact"]

MIGRATE_LOCK_WAIT = "5s"


def create(dsn: str) -> PgStore:
    """Make the native schema in the (existing, empty) database of `dsn`; refuses a database
    that already holds memories."""
    psycopg = _psycopg()
    conn = connect(dsn, need_vector=False)
    with _closed_on_error(conn, dsn, psycopg):
        prepare_new_store(conn, redact(dsn), taken="memviz will not overwrite it.")
        schema.migrate(conn)
        conn.execute("INSERT INTO memviz_meta(key, value) VALUES ('created_by', %s)", (json.dumps("memviz"),))
    conn.close()
    return open_store(dsn)


def open_store(dsn: str, *, read_only: bool = False) -> PgStore:
    """Open the memory store in the database of `dsn`. Read-only (with the reason) when asked,
    when the role may not write, when the server is read-only, or when a newer memviz wrote it."""
    psycopg = _psycopg()
    where = redact(dsn)
    conn = connect(dsn, need_vector=False)
    with _closed_on_error(conn, dsn, psycopg):
        missing = schema.missing_parts(conn)
        if "table memories" in missing:
            raise NotAStoreError(f"{where} holds no memviz memory store (no `memories` table); "
                                 "use `memviz create` to make one.")
        reasons = [ASKED_READ_ONLY] if read_only else []
        if missing:  # a table memviz did not make: read-only through stand-ins, if it has enough
            _select, differs, unusable = foreign.plan(conn)
            if unusable:
                raise NotAStoreError(f"{where} has a `memories` table memviz cannot read: it lacks "
                                     f"{' and '.join(unusable)}.")
            tables = foreign.missing_tables(conn)
            differs += ["no table " + ", ".join(tables)] if tables else []
            reasons.append("its schema was not made by memviz (" + "; ".join(differs) + ")")
        elif vector_oid(conn) is None:
            raise NotAStoreError(no_vector_message(where))
        else:
            reasons += _write_refusals(conn)
            if not reasons:
                _upgrade(conn, psycopg)
    has_vector = vector_oid(conn) is not None
    conn.close()
    on_connect = foreign.install if missing else None
    store_conn = connect(dsn, need_vector=has_vector)
    try:
        if on_connect:
            on_connect(store_conn)
    except psycopg.Error as e:
        store_conn.close()
        raise translate(e, dsn) from None
    return PgStore(dsn, store_conn, read_only_reason="; ".join(reasons) or None, on_connect=on_connect,
                   need_vector=has_vector)


@contextmanager
def _closed_on_error(conn, dsn: str, psycopg):
    """The block's failure closes `conn`; a psycopg error becomes the StoreError that says it."""
    try:
        yield conn
    except psycopg.Error as e:
        conn.close()
        raise translate(e, dsn) from None
    except BaseException:
        conn.close()
        raise


def _upgrade(conn, psycopg) -> None:
    """Apply the migrations a store from an older memviz lacks (a writable open only). A role
    that may write rows but not create the change log's table, function and triggers (it
    needs CREATE on the schema and to own `memories`) opens it as it is: changes are then
    read as a whole (postgres/changes.py). So is a store whose agents hold `memories` longer
    than MIGRATE_LOCK_WAIT (adding triggers waits for their transactions): the next open tries
    again. This is the open's own connection, closed after it."""
    if schema.applied_version(conn) >= schema.SCHEMA_VERSION:
        return
    conn.execute(f"SET lock_timeout = '{MIGRATE_LOCK_WAIT}'")
    try:
        schema.migrate(conn)
    except (psycopg.errors.InsufficientPrivilege, psycopg.errors.LockNotAvailable):
        pass


def _write_refusals(conn) -> list[str]:
    """Why this connection may not write the store (empty: it may)."""
    out = []
    version = schema.applied_version(conn)
    if version > schema.SCHEMA_VERSION:
        out.append(f"it was written by a newer memviz (schema {version}, this one knows {schema.SCHEMA_VERSION})")
    if conn.execute("SELECT current_setting('transaction_read_only')").fetchone()[0] == "on":
        out.append("the server only allows reading (a standby, or default_transaction_read_only)")
    role, can_write, can_audit = conn.execute(
        "SELECT current_user, has_table_privilege('memories', 'INSERT, UPDATE'), "
        "has_table_privilege('memviz_audit', 'INSERT')").fetchone()
    if not (can_write and can_audit):
        out.append(f"the role {role} may only read (it lacks INSERT/UPDATE on memories or INSERT on memviz_audit)")
    return out
