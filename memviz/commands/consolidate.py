"""`memviz consolidate DB [--agent A] [--dry-run] [--yes]`: the assistant memory's (ADR 005) decay and prune
(soft-delete below confidence 0.05), previewed; protected memories are never touched."""
from __future__ import annotations

from ..frameworks import open_source as open_store
from ..reflect.consolidation import DECAY_KINDS, PRUNE_BELOW, apply_consolidation, describe, plan_consolidation
from ..reflect.validate import clean_text, shorten
from .clock import NOW_HELP, use_now
from .interrupt import command_task


def add_parser(sub):
    p = sub.add_parser("consolidate", help="decay confidence and soft-delete what falls below 0.05 (as the assistant memory does)")
    p.add_argument("db")
    p.add_argument("--agent")
    p.add_argument("--kinds", default=",".join(DECAY_KINDS),
                   help="kinds that decay, comma-separated, or 'all' (default: fact,preference)")
    p.add_argument("--below", type=float, default=PRUNE_BELOW, help="prune threshold (0.05)")
    p.add_argument("--keep", action="append", default=[], metavar="ID", help="never prune this memory (repeatable)")
    p.add_argument("--now", "--as-of", dest="now", help=NOW_HELP)
    p.add_argument("--dry-run", action="store_true", help="show what would change and write nothing")
    p.add_argument("--yes", action="store_true", help="apply without asking")
    p.set_defaults(func=run)


def run(args) -> int:
    kinds = None if args.kinds.strip() == "all" else tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    with open_store(args.db, read_only=args.dry_run) as store:
        for mid in args.keep:  # a typo would be ignored, and the memory meant pruned
            if store.get(mid) is None:
                raise ValueError(f"--keep {mid!r}: no memory with that id in this store (give the whole id, as the "
                                 "preview lists it); nothing was written")
        clock = use_now(store, args)
        with command_task("consolidate") as task:  # Ctrl-C cancels the preview: nothing is written
            plan = plan_consolidation(store, agent=args.agent, kinds=kinds, prune_below=args.below,
                                      now=clock.now(), task=task)
        plan.untick(*args.keep)
        for d in plan.decay[:20]:
            print(f"decay {d.id}: {d.before:.3f} -> {d.after:.3f} ({d.days:.1f} days)")
        if len(plan.decay) > 20:
            print(f"... and {len(plan.decay) - 20} more")
        for p in plan.prune:
            mark = "x" if p.selected else " "
            print(f"[{mark}] prune {p.id} ({p.kind}, confidence {p.confidence:.3f}): "
                  f"{shorten(clean_text(p.content, 10_000)[0], 80)}")
        print(describe(plan))
        if args.dry_run:
            print("dry run: nothing written")
            return 0
        if not plan.decay and not any(p.selected for p in plan.prune):
            print("nothing to do")
            return 0
        if not args.yes:
            try:
                answer = input("apply? [y/N] ")
            except EOFError:
                answer = ""
            if answer.strip().lower() not in ("y", "yes"):
                print("nothing written")
                return 1
        res = apply_consolidation(store, plan)
    for mid, why in res.skipped:
        print(f"skipped {mid}: {why}")
    print(f"decayed {len(res.decayed)}, soft-deleted {len(res.pruned)}, skipped {len(res.skipped)}")
    return 0
