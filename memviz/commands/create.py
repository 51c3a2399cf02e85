"""`memviz create DB`: a new, empty native store."""
from ..store import create


def add_parser(sub):
    p = sub.add_parser("create", help="create a new, empty memory store")
    p.add_argument("db", help="path of the new store (must not exist)")
    p.set_defaults(func=run)


def run(args) -> int:
    create(args.db).close()
    print(f"created {args.db}")
    return 0
