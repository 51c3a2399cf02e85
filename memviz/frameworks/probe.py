"""Cheap, cached looks at a source (a file, a folder or a database) that every system's
`recognise` shares, so recognising among all systems costs one connection, not one each."""
from __future__ import annotations

import functools
import os

import apsw

from ..sniff import sniff
from ..store import BusyError, StoreError, is_dsn, redact, translate
from ..store.connection import connect as connect_sqlite
from ..store.fileheader import MAGIC, read_head
from ..store.read_only_media import detour, needs_detour, release_copy


class Probe:
    def __init__(self, target: str):
        self.target = target if is_dsn(target) else os.path.abspath(os.path.expanduser(os.fspath(target)))
        self.label = redact(self.target) if is_dsn(self.target) else self.target

    @property
    def is_dsn(self) -> bool:
        return is_dsn(self.target)

    @property
    def is_dir(self) -> bool:
        return not self.is_dsn and os.path.isdir(self.target)

    @property
    def is_file(self) -> bool:
        return not self.is_dsn and os.path.isfile(self.target)

    def path(self, *parts: str) -> str:
        return os.path.join(self.target, *parts)

    @functools.cache  # noqa: B019 - one probe per recognition, dropped after it
    def files(self) -> tuple[str, ...]:
        """The folder's entry names (empty for anything but a folder)."""
        try:
            return tuple(sorted(os.listdir(self.target))) if self.is_dir else ()
        except OSError:
            return ()

    @functools.cache  # noqa: B019
    def head(self, n: int = 1 << 16) -> bytes:
        """The first `n` bytes of the file (b"" for anything else or when unreadable)."""
        if not self.is_file:
            return b""
        try:
            with open(self.target, "rb") as f:
                return f.read(n)
        except OSError:
            return b""

    def is_sqlite(self, path: str | None = None) -> bool:
        path = path or self.target
        try:
            return os.path.isfile(path) and read_head(path, 16) == MAGIC
        except (OSError, apsw.Error):
            return False

    @functools.cache  # noqa: B019
    def sqlite_tables(self, path: str | None = None) -> dict[str, set[str]]:
        """table -> column names of an SQLite file (the target, or `path` inside a folder);
        {} when it is not a readable SQLite file. Read-only; sqlite-vec loaded (vec0 tables)."""
        path = path or self.target
        if not self.is_sqlite(path):
            return {}
        # on read-only media a WAL file is read through a copy, as a native open does (no -shm left behind)
        conn_path = detour(path)[0] if needs_detour(path) else path
        try:
            conn = connect_sqlite(conn_path, readonly=True)
        except (apsw.Error, OSError):
            release_copy(conn_path)
            return {}
        try:
            names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")]
            out = {}
            for name in names:
                try:
                    out[name] = {r[1] for r in conn.execute(f'PRAGMA table_info("{name}")')}
                except apsw.Error:
                    out[name] = set()  # a virtual table of a module not loaded here
            return out
        except apsw.Error as e:
            err = translate(e, path, doing="opening it")
            if isinstance(err, BusyError):  # said now, after SQLite's one busy wait: the open would wait again
                raise err from None
            return {}  # not readable as SQLite: the native open says why
        finally:
            conn.close()
            release_copy(conn_path)

    @functools.cache  # noqa: B019
    def pg_tables(self) -> dict[str, dict[str, str]]:
        """table -> {column: data type} of the database's visible tables (public schema first);
        {} for anything but a DSN. Connection failures raise their StoreError (unreachable
        host, wrong password): no system can be recognised without the database."""
        if not self.is_dsn:
            return {}
        from ..store.postgres.connect import _psycopg, connect, translate
        psycopg = _psycopg()
        conn = connect(self.target, need_vector=False)
        try:
            rows = conn.execute(
                "SELECT c.table_name, c.column_name, c.udt_name FROM information_schema.columns c "
                "WHERE c.table_schema = ANY (current_schemas(false)) ORDER BY c.table_name, c.ordinal_position").fetchall()
        except psycopg.Error as e:
            raise translate(e, self.target) from None
        finally:
            conn.close()
        out: dict[str, dict[str, str]] = {}
        for table, col, typ in rows:
            out.setdefault(table, {})[col] = typ
        return out

    def describe_unknown(self) -> str:
        """What the target looked like, for the one message an unrecognised source gets."""
        if self.is_dsn:
            try:
                tables = sorted(self.pg_tables())
            except StoreError as e:
                return str(e)
            shown = ", ".join(tables[:8]) + (" …" if len(tables) > 8 else "")
            return f"{self.label} is a PostgreSQL database with tables: {shown or 'none'}"
        if self.is_dir:
            names = self.files()
            shown = ", ".join(names[:8]) + (" …" if len(names) > 8 else "")
            return f"{self.label} is a folder holding: {shown or 'nothing'}"
        if not os.path.exists(self.target):
            return f"No such file or folder: {self.label}"
        if self.is_sqlite():
            tables = sorted(self.sqlite_tables())
            return f"{self.label} is an SQLite database with tables: {', '.join(tables[:8]) or 'none'}"
        return f"{self.label} is not an SQLite database: it is {sniff(self.target).looks_like()}"
