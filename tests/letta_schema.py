"""Letta's PostgreSQL schema as Letta's own ORM (`letta.orm`, the version pinned in
tests/letta_requirements.txt) declares it, printed as the DDL SQLAlchemy's `create_all` runs.

Run by Letta's environment, not memviz's (letta's dependencies hold openai, protobuf and
websockets below the versions memviz is tested with); tests/letta_db.py runs it once a session:

    <letta env>/bin/python tests/letta_schema.py

The first line is a comment naming the letta version; statements are separated by blank lines.
Nothing connects to a database here (a mock engine records the statements). Letta's package
ships no migrations (its server runs alembic from Letta's source tree), so its ORM's metadata is
the schema the package defines.
"""
from __future__ import annotations

import os
import sys
import tempfile


def main() -> None:
    # letta.settings picks the ORM's column types when imported: PostgreSQL's (pgvector's vector)
    # once a PostgreSQL URI is set. HOME: importing letta writes its config under ~/.letta.
    os.environ["LETTA_PG_URI"] = "postgresql://letta@localhost/letta"
    os.environ["HOME"] = tempfile.mkdtemp(prefix="letta-home-")
    from importlib.metadata import version

    from letta.orm import Base
    from sqlalchemy import create_mock_engine

    statements = []
    engine = create_mock_engine("postgresql://", lambda sql, *a, **kw: statements.append(
        str(sql.compile(dialect=engine.dialect)).strip()))
    Base.metadata.create_all(engine, checkfirst=False)
    sys.stdout.write(f"-- letta {version('letta')}: {len(Base.metadata.tables)} tables\n")
    sys.stdout.write("".join(f"{s};\n\n" for s in statements))


if __name__ == "__main__":
    main()
