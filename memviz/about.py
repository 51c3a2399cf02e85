"""What this memviz runs on, for `memviz --version` and Help ▸ About (no Qt: the versions come
from the installed packages' metadata, so the report opens no window and loads no Qt library),
and the plugins installed, each with its state (memviz/plugins.py).

Given a PostgreSQL connection string, it also asks that server for its version and the
database's pgvector version."""
from __future__ import annotations

import importlib
import os
import platform
import sys
from importlib import metadata

import apsw
import sqlite_vec

import memviz
from memviz import plugins

#: entry point group -> the registry that loads it (imported only when plugins of the group are installed)
REGISTRIES = {
    "memviz.sources": "memviz.frameworks",
    "memviz.presets": "memviz.retrieval.presets.registry",
    "memviz.importers": "memviz.importers",
    "memviz.embedders": "memviz.embed",
}


def _version(*dists: str) -> str | None:
    """The installed version of the first of these distributions that is installed."""
    for dist in dists:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def report(dsn: str | None = None) -> str:
    """Lines naming memviz's version and those of what it runs on (and, given a PostgreSQL DSN,
    the server's and pgvector's). Never raises: what cannot be found is said so."""
    lines = [f"memviz {memviz.__version__} ({os.path.dirname(memviz.__file__)})",
             f"Python {platform.python_version()} ({platform.python_implementation()}, {sys.executable})"]
    pyside = _version("PySide6-Essentials", "PySide6")
    # a PySide6 release carries the version of the Qt it is built with and (as a wheel) bundles
    lines.append(f"Qt {'.'.join(pyside.split('.')[:3])} (PySide6 {pyside}, pyqtgraph {_version('pyqtgraph') or 'missing'})"
                 if pyside else "Qt: not installed (the window needs PySide6; the commands work without it)")
    lines.append(f"SQLite {apsw.sqlite_lib_version()} (apsw {apsw.apsw_version()})")
    lines.append(f"sqlite-vec {_sqlite_vec_version()}")
    psycopg = _version("psycopg")
    lines.append(f"psycopg {psycopg} (PostgreSQL stores; `memviz --version postgresql://…` names the server's pgvector)"
                 if psycopg else "psycopg: not installed (PostgreSQL stores need `pip install 'memviz[pg]'`)")
    found = load_plugins()
    lines.append("plugins: " + (f"{len(found)}" if found else
                                f"none installed (entry point groups {', '.join(plugins.GROUPS)})"))
    lines.extend(f"  {p.line()}" for p in found)
    if dsn:  # last: the one line that asked a server
        lines.append(_server_line(dsn))
    return "\n".join(lines)


def load_plugins() -> list[plugins.Plugin]:
    """Every installed plugin, loaded by its registry (the window does this at start-up, so that
    what is skipped is said then), with its state."""
    for group in plugins.installed():
        importlib.import_module(REGISTRIES[group]).load_plugins()
    return plugins.plugins()


def _sqlite_vec_version() -> str:
    from memviz.store.connection import connect

    try:
        conn = connect(":memory:")
        try:
            return conn.execute("SELECT vec_version()").fetchall()[0][0]
        finally:
            conn.close()
    except apsw.Error as e:  # the extension did not load: the stores cannot be read either
        return f"{sqlite_vec.__version__} (not loadable here: {e})"


def _server_line(dsn: str) -> str:
    from memviz.store import StoreError, is_dsn, redact

    where = redact(dsn)
    if not is_dsn(dsn):
        return f"{where}: not a PostgreSQL connection string (postgresql://…); only a server has versions to ask"
    try:
        from memviz.store.postgres.connect import _psycopg, connect, translate

        psycopg = _psycopg()
        conn = connect(dsn, need_vector=False)
        try:
            server = conn.execute("SHOW server_version").fetchone()[0]
            row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        except psycopg.Error as e:  # said as the store says them
            raise translate(e, dsn, write=False) from None
        finally:
            conn.close()
    except StoreError as e:
        return f"{where}: {e}"
    vector = f"pgvector {row[0]}" if row else "no pgvector in this database (CREATE EXTENSION vector;)"
    return f"PostgreSQL {server} at {where}, {vector}"
