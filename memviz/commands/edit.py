"""`memviz edit DB ACTION ...`: the editing actions from the shell, plus the retired view and a
memory's audit history. Each action is one audited transaction, as in the window."""
import json

from ..edits import Confirm, Correct, EditKept, History, ProtectedError, Restore, SetImportance, SetTags, SoftDelete, Unprotect, retired
from ..edits.retired import as_json
from ..frameworks import open_source as open_store
from ..store import BusyError, StoreError, iso
from ..store.errors import IN_USE

ACTIONS = ("correct", "confirm", "unprotect", "delete", "restore", "importance", "tags", "retired", "history")


def add_parser(sub):
    p = sub.add_parser("edit", help="correct, confirm, delete, restore, re-rate or tag memories; list retired ones",
                       description="Actions: correct ID TEXT | confirm ID.. | unprotect ID.. | delete ID.. | "
                                   "restore ID.. | importance VALUE ID.. | tags ID.. [--add T] [--remove T] [--set T,..] "
                                   "| retired | history ID")
    p.add_argument("db")
    p.add_argument("action", choices=ACTIONS)
    p.add_argument("args", nargs="*")
    p.add_argument("--note", help="why (kept in the audit log)")
    p.add_argument("--set", dest="set_tags", help="tags to set, comma-separated (tags action)")
    p.add_argument("--add", action="append", default=[], help="a tag to add (tags action; repeatable)")
    p.add_argument("--remove", action="append", default=[], help="a tag to remove (tags action; repeatable)")
    p.add_argument("--include-protected", action="store_true",
                   help="delete: also delete protected memories (refused without it)")
    p.add_argument("--json", action="store_true", help="print JSON (retired, history)")
    p.add_argument("--read-only", action="store_true", help="open without any write (for retired, history)")
    p.set_defaults(func=run)


def _need(args, n, usage):
    if len(args.args) < n:
        raise ValueError(f"usage: memviz edit DB {usage}")


def build(args):
    a, note = args.args, args.note
    if args.action == "correct":
        _need(args, 2, "correct ID TEXT")
        return Correct(a[0], " ".join(a[1:]), note=note)
    if args.action == "importance":
        _need(args, 2, "importance VALUE ID..")
        return SetImportance(a[1:], a[0], note=note)
    _need(args, 1, f"{args.action} ID..")
    if args.action == "tags":
        if args.set_tags is None and not args.add and not args.remove:
            raise ValueError("tags needs --set, --add or --remove")
        return SetTags(a, args.set_tags, add=args.add, remove=args.remove, note=note)
    if args.action == "delete":
        return SoftDelete(a, note=note, include_protected=args.include_protected)
    kinds = {"confirm": Confirm, "unprotect": Unprotect, "restore": Restore}
    return kinds[args.action](a, note=note)


def run(args) -> int:
    read_only = args.read_only or args.action in ("retired", "history")
    with open_store(args.db, read_only=read_only) as store:
        if args.action == "retired":
            items = retired(store)
            if args.json:
                print(as_json(items))
            for r in [] if args.json else items:
                print(f"{r.retired_when}  {r.id}  {r.why}  | {r.content[:70]}")
            return 0
        if args.action == "history":
            _need(args, 1, "history ID")
            mid = args.args[0]
            entries = store.history(mid)
            if not entries and store.get(mid) is None:
                raise StoreError(f"No memory with id {mid!r} in this store.")
            if not entries and not args.json:
                print(f"{mid}: nothing in the audit log (no edit of it recorded)")
            if args.json:
                print(json.dumps(entries, default=lambda b: f"<{len(b)} bytes>", ensure_ascii=False, indent=2))
            for e in [] if args.json else entries:
                after = {k: v for k, v in (e["after"] or {}).items() if k != "embedding"}
                print(f"{iso(e['at'])}  {e['action']:<16} {e['actor']}  {json.dumps(after, ensure_ascii=False)[:100]}")
            return 0
        try:
            out = History(store).perform(build(args))
        except EditKept:
            raise BusyError(f"{args.db} is {IN_USE} (memviz waited and retried); your edit was not written. "
                            "Run the command again when that process is done.") from None
        except ProtectedError as e:
            them = "it" if len(e.ids) == 1 else "them"
            raise ValueError(f"{e.said(whole_ids=True)} Add --include-protected to delete {them} anyway, "
                             f"or unprotect {them} first.") from None
        print(out.text)
        for old, new in out.replaced.items():  # the status line shortens ids; the shell needs them whole
            print(f"new memory: {new} (supersedes {old})")
        if out.warning:
            print(f"warning: {out.warning}")
        return 0
