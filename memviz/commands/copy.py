"""`memviz copy SRC DST`: a whole store between backends (SQLite file <-> PostgreSQL)."""
from ..frameworks import open_source
from ..store.copy import copy_store
from ..store.postgres.dsn import redact
from .interrupt import command_task


def add_parser(sub):
    p = sub.add_parser("copy", help="copy a whole store to a new file or an empty PostgreSQL database",
                       description="Copy every memory (ids, texts, vectors bit for bit, provenance), the audit log, "
                                   "layouts and entities from SRC to DST in one transaction: a failed or cancelled "
                                   "copy (Ctrl-C) leaves DST as it was. SRC/DST: a store file, or "
                                   "postgresql://user@host/db (DST: an existing, empty database).")
    p.add_argument("src", metavar="SRC")
    p.add_argument("dst", metavar="DST")
    p.set_defaults(func=run)


def run(args) -> int:
    with command_task("copy") as task:
        n = copy_store(args.src, args.dst, task=task, opener=open_source)
    print(f"copied {n} memories from {redact(args.src)} to {redact(args.dst)}")
    return 0
