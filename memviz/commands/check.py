"""`memviz check DB [--repair]`: SQLite's and memviz's own checks of a store; the repair
rebuilds only what is derived from the memories (full-text index, vector rows)."""
import json
import sys

from ..frameworks import open_source, recognise
from ..store import open_store
from ..store.check import check_store, repair, repair_plan


def add_parser(sub):
    p = sub.add_parser("check", help="check a store's integrity and indexes; --repair rebuilds the derived indexes",
                       description="Exit code: 0 clean, 1 findings, 2 error.")
    p.add_argument("db")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.add_argument("--repair", action="store_true",
                   help="rebuild the full-text index and vector rows from the memories (asks first)")
    p.add_argument("--yes", action="store_true", help="repair without asking")
    p.set_defaults(func=run)


def _open(args):
    """The store to check: another system's through its mirror (as the window checks it), else
    memviz's own, which a repair opens writable in spite of what it mends."""
    if args.repair and recognise(args.db) is None:
        return open_store(args.db, to_repair=True)
    return open_source(args.db, read_only=not args.repair)


def run(args) -> int:
    with _open(args) as store:
        report = check_store(store)
        out = report.as_dict()
        plan = repair_plan(report) if args.repair else []
        if not args.json:
            _print(report)
        if plan:
            if not args.json:
                print("repair will:")
                for line in plan:
                    print(f"  - {line}")
            if not args.yes and not _confirm():
                print("nothing repaired", file=sys.stderr)
                return 1
            out["repaired"] = repair(store, report)
            after = check_store(store)
            out["after"] = after.as_dict()
            if not args.json:
                print("repaired: " + "; ".join(out["repaired"]))
                print("after repair:")
                _print(after)
            report = after
        elif args.repair and not args.json and not report.clean:
            print("nothing here can be repaired by memviz")
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    return 0 if report.clean else 1


def _print(report) -> None:
    if report.clean:
        print(f"{report.path}: clean")
    else:
        print(f"{report.path}: {len(report.findings)} finding{'s' if len(report.findings) != 1 else ''}")
        for f in report.findings:
            print("- " + f.describe())
    for s in report.skipped:
        print(f"skipped: {s}")


def _confirm() -> bool:
    if not sys.stdin.isatty():
        print("memviz: not repairing without --yes (standard input is not a terminal)", file=sys.stderr)
        return False
    return input("repair now? [y/N] ").strip().lower() in ("y", "yes")
