"""A read-only connection to another system's SQLite file (Chroma's, LangGraph's SqliteStore),
opened when first read: every apsw error is worded as a StoreError saying what memviz was
doing. No Qt here."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..store.connection import connect as connect_sqlite
from ..store.errors import store_errors


class SqliteReader:
    def __init__(self, path: str, reading: str, opening: str | None = None):
        self.path = path
        self.reading = reading            # what an error says memviz was doing: "reading the Chroma folder"
        self.opening = opening or reading
        self._conn = None

    def connection(self):
        if self._conn is None:
            with store_errors(self.path, doing=self.opening):
                self._conn = connect_sqlite(self.path, readonly=True)
        return self._conn

    def query(self, sql: str, params=()) -> list:
        with store_errors(self.path, doing=self.reading):
            return list(self.connection().execute(sql, params))

    @contextmanager
    def snapshot(self) -> Iterator:
        """The connection in one read transaction: what is read inside agrees (rows, their
        vectors, the count)."""
        with store_errors(self.path, doing=self.reading):
            conn = self.connection()
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
