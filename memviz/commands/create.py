"""`memviz create DB`: a new, empty native store (a file, or a PostgreSQL database)."""
from ..store import create
from ..store.postgres.dsn import redact


def add_parser(sub):
    p = sub.add_parser("create", help="create a new, empty memory store")
    p.add_argument("db", help="path of the new store (must not exist), or postgresql://user@host/db "
                              "(an existing, empty database; the password comes from PGPASSWORD or ~/.pgpass)")
    p.set_defaults(func=run)


def run(args) -> int:
    create(args.db).close()
    print(f"created {redact(args.db)}")
    return 0
