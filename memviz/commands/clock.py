"""`memviz clock DB [--set TIME|wall|newest | --auto]`: show or change the store's own clock,
and the `--now` option every command that measures ages shares."""
from __future__ import annotations

import sys

from ..frameworks import open_source
from ..store.clock import parse_clock, record_clock, store_clock

NOW_HELP = ("measure ages from this time: ISO 8601 (UTC unless zoned), 'wall' or 'newest' "
            "(default: the store's clock)")


def add_now_argument(p) -> None:
    p.add_argument("--now", help=NOW_HELP)


def use_now(store, args, *, out=None):
    """Apply --now for this run only (nothing written), print the clock in force, return it."""
    if getattr(args, "now", None):
        store.clock_override = parse_clock(args.now, store)
    clock = store_clock(store)
    print(f"clock: {clock.describe()}", file=out or sys.stdout)
    return clock


def add_parser(sub):
    p = sub.add_parser("clock", help="show or set the store's clock (the 'now' of recency, decay and consolidation)")
    p.add_argument("db")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--set", metavar="TIME", help="record this clock: ISO 8601 time (simulated), 'wall' or 'newest'")
    g.add_argument("--auto", action="store_true",
                   help="forget the recorded clock: wall clock, or the newest memory's time when that is long past")
    p.set_defaults(func=run)


def run(args) -> int:
    writing = bool(args.set or args.auto)
    with open_source(args.db, read_only=not writing) as store:
        if args.set:
            record_clock(store, parse_clock(args.set, store))
        elif args.auto:
            record_clock(store, None)
        clock = store_clock(store)
        print(f"clock: {clock.describe()}" + (f" — {clock.source}" if clock.source else ""))
    return 0
