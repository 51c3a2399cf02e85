"""`memviz index DSN`: build the HNSW indexes a PostgreSQL store lacks (a copy cut off before it)."""
from ..store import StoreError, is_dsn
from ..store.postgres.dsn import redact
from .interrupt import command_task


def add_parser(sub):
    p = sub.add_parser("index", help="build the pgvector HNSW indexes a PostgreSQL store lacks",
                       description="Build, each in a transaction of its own, the HNSW index of every vector column "
                                   "that pgvector can index and that has none (`memviz copy` builds them after its "
                                   "commit; a cancelled or cut-off build leaves them absent). Safe to run again.")
    p.add_argument("db", metavar="DSN", help="postgresql://user@host/db")
    p.set_defaults(func=run)


def run(args) -> int:
    if not is_dsn(args.db):
        raise StoreError(f"{args.db} is not a PostgreSQL connection string: an SQLite store keeps its vector "
                         "index up to date itself.")
    from ..store.postgres.index import build_missing_indexes  # noqa: PLC0415 - psycopg only for PostgreSQL
    with command_task("index") as task:
        dims = build_missing_indexes(args.db, task=task)
    print(f"built {len(dims)} vector index{'es' if len(dims) != 1 else ''} in {redact(args.db)}"
          + (f" ({', '.join(map(str, dims))} dimensions)" if dims else " (none was missing)"))
    return 0
