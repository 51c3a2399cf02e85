"""Connections to a PostgreSQL server, and psycopg's errors said as memviz's StoreError.

The password is libpq's business (PGPASSWORD, ~/.pgpass, or the DSN itself); memviz never
stores it, and every message below shows the DSN through `redact`/`scrub`. Connections are
in autocommit: a read holds no transaction open, and each write is an explicit short one.
"""
from __future__ import annotations

import struct

import numpy as np

from ..errors import NotAStoreError, StoreError
from .dsn import redact, scrub

CONNECT_TIMEOUT_S = 10


def _psycopg():
    try:
        import psycopg
    except ImportError:
        raise StoreError("PostgreSQL stores need psycopg: pip install 'memviz[pg]'") from None
    return psycopg


class PgVector(bytes):
    """float32 little-endian bytes meant for a pgvector `vector` column (sent in binary)."""


def _vector_dumper(psycopg, oid: int):
    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    class VectorBinaryDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj):
            raw = np.frombuffer(bytes(obj), dtype="<f4")
            # pgvector's binary form: int16 dim, int16 unused, then big-endian float4s (exact)
            return struct.pack(">HH", raw.size, 0) + raw.astype(">f4").tobytes()
    VectorBinaryDumper.oid = oid
    return VectorBinaryDumper


def connect(dsn: str, *, need_vector: bool = True):
    """An autocommit connection; errors become StoreError with what to do."""
    psycopg = _psycopg()
    where = redact(dsn)
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.OperationalError as e:
        raise StoreError(_connect_message(scrub(str(e), dsn), where)) from None
    except psycopg.ProgrammingError as e:  # a malformed DSN
        raise StoreError(f"Cannot read the connection string {where}: {scrub(str(e), dsn)}") from None
    if need_vector and not register_vector(conn):
        conn.close()
        raise NotAStoreError(no_vector_message(where))
    return conn


def register_vector(conn) -> bool:
    """Let PgVector values be sent to this connection's `vector` type (False: no extension)."""
    oid = vector_oid(conn)
    if oid is not None:
        conn.adapters.register_dumper(PgVector, _vector_dumper(_psycopg(), oid))
    return oid is not None


def vector_oid(conn) -> int | None:
    row = conn.execute("SELECT t.oid FROM pg_type t JOIN pg_extension e ON e.extname = 'vector' "
                       "WHERE t.typname = 'vector' AND t.typnamespace = e.extnamespace").fetchone()
    return None if row is None else int(row[0])


def no_vector_message(where: str) -> str:
    return (f"The database {where} has no `vector` extension (pgvector), which memviz needs for embeddings. "
            "A superuser (or the database owner, where pgvector is trusted) can add it with "
            "`CREATE EXTENSION vector;` in that database; the server needs pgvector installed "
            "(e.g. the postgresql-NN-pgvector package).")


def prepare_new_store(conn, where: str, *, taken: str) -> None:
    """Before memviz makes its schema in the database of `conn` (a create, a copy into it): a
    database that holds a `memories` table already is refused (`taken` ends the message), and
    the `vector` extension it lacks is added, or a StoreError says why it cannot be."""
    psycopg = _psycopg()
    if conn.execute("SELECT to_regclass('memories')").fetchone()[0] is not None:
        raise StoreError(f"{where} already has a `memories` table; {taken}")
    if vector_oid(conn) is not None:
        return
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.errors.InsufficientPrivilege:
        raise StoreError(no_vector_message(where) + " This role may not add it.") from None
    except (psycopg.errors.UndefinedFile, psycopg.errors.FeatureNotSupported) as e:
        raise StoreError(no_vector_message(where) + f" The server said: {str(e).splitlines()[0]}") from None


def _connect_message(msg: str, where: str) -> str:
    # libpq's first line ends in the reason ("... port 5432 failed: Connection refused"); its
    # later lines are hints ("\tIs the server running on that host ...?") that the message below gives better
    lines = [line.strip() for line in msg.strip().splitlines() if line.strip()]
    first = lines[0].rsplit("failed: ", 1)[-1].removeprefix("FATAL:").strip().rstrip(".") if lines else msg
    low = msg.lower()
    if "password authentication failed" in low or "no password supplied" in low:
        return (f"The server at {where} refused the login: wrong or missing password. Set PGPASSWORD or add the "
                "password to ~/.pgpass (memviz never stores it).")
    if "does not exist" in low and "database" in low:
        return f"The server at {where} has no such database ({first}). Create it first (createdb), then `memviz create`."
    if any(s in low for s in ("connection refused", "no such file or directory", "could not translate host",
                              "failed to resolve host", "timeout expired", "could not connect",
                              "network is unreachable", "connection failed")):
        return f"Cannot reach the PostgreSQL server at {where} ({first}). Is it running, and are the host and port right?"
    return f"Cannot connect to {where}: {first}"


def scrub_first_line(e, dsn: str) -> str:
    """The first line of a psycopg error, the DSN's password removed."""
    text = str(e).strip()
    return scrub(text.splitlines()[0] if text else type(e).__name__, dsn)


def translate(e, dsn: str, *, write: bool = True) -> StoreError:
    """A psycopg error met while using a store, as a StoreError with a clean message. `write`:
    it ended a write (the message then says nothing was written: the transaction rolled back)."""
    psycopg = _psycopg()
    nothing = " Nothing was written." if write else ""
    where = redact(dsn)
    msg = scrub_first_line(e, dsn)
    if isinstance(e, psycopg.errors.UniqueViolation):
        from ..errors import ValidationError
        detail = scrub(e.diag.message_detail or msg, dsn)
        return ValidationError(f"cannot insert: {detail} (is an id already in the store?) Nothing was written.")
    if isinstance(e, psycopg.errors.InsufficientPrivilege):
        from ..errors import ReadOnlyError
        return ReadOnlyError(f"The role used for {where} may not do this: {msg}")
    if isinstance(e, psycopg.errors.LockNotAvailable):
        from ..errors import BusyError
        return BusyError(f"The store at {where} is busy: another session holds the row (lock_timeout). "
                         "Nothing was written; try again.")
    if isinstance(e, psycopg.errors.QueryCanceled) and "statement timeout" in msg:
        return StoreError(f"The server at {where} cancelled the statement: it ran longer than the server's "
                          f"statement_timeout.{nothing} Ask for less at once, or raise the limit for memviz's role "
                          "(ALTER ROLE ... SET statement_timeout, or options=-c statement_timeout=... in the "
                          "connection string).")
    if isinstance(e, psycopg.errors.QueryCanceled):
        return StoreError(f"The server at {where} cancelled the statement: {msg}.{nothing}")
    if isinstance(e, psycopg.OperationalError):
        return StoreError(f"The connection to {where} failed: {msg}.{nothing}")
    return StoreError(f"PostgreSQL error on {where}: {msg}")
