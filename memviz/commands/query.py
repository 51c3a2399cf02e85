"""`memviz query DB TEXT`: rank a store's memories with a retrieval preset and show why."""
import json
import sys

from ..embed import EmbedderUnavailable
from ..frameworks import open_source as open_store
from ..retrieval import PRESETS, Engine, preset, preset_params
from ..store import iso
from .clock import add_now_argument, use_now
from .context import moment

_CONTRACT_KEYS = ("relevance", "recency", "importance")


def add_parser(sub):
    p = sub.add_parser("query", help="rank memories for a query with a retrieval preset, with each component",
                       description="Score every memory with a preset's formula and print the top k with each "
                                   "component, raw and weighted. Presets: " + "; ".join(
                                       f"{n}: {d}" for n, d in PRESETS.items()))
    p.add_argument("db")
    p.add_argument("text", nargs="?", help="the query (optional with --like)")
    p.add_argument("--preset", default="dual-memory", choices=list(PRESETS))
    p.add_argument("--alpha", type=float, help="relevance weight")
    p.add_argument("--beta", type=float, help="recency weight")
    p.add_argument("--gamma", type=float, help="importance weight")
    p.add_argument("--tau", type=float, dest="tau_hours", help="dual-memory recency time constant, hours")
    p.add_argument("--decay", type=float, help="generative-agents recency decay / ada lambda")
    p.add_argument("-k", type=int, help="how many results")
    p.add_argument("--agent", action="append", help="only this agent (repeatable)")
    p.add_argument("--kind", action="append", help="only this kind (repeatable)")
    p.add_argument("--tag", action="append", help="only memories with this tag (repeatable: any of them)")
    p.add_argument("--from", dest="time_from", help="only memories whose event time is at or after this")
    p.add_argument("--to", dest="time_to", help="only memories whose event time is at or before this")
    p.add_argument("--as-of", help="replay the store as it was then (ISO 8601, UTC unless a zone is given)")
    add_now_argument(p)
    p.add_argument("--like", metavar="MEMORY_ID", help="query by a memory's own vector")
    p.add_argument("--include-retired", action="store_true", help="also superseded and soft-deleted memories")
    p.add_argument("--protected-only", action="store_true")
    p.add_argument("--confidence-decay", action="store_true",
                   help="multiply by the Ebbinghaus-decayed confidence x exp(-decay_rate x days^0.8)")
    p.add_argument("--json", action="store_true", help="print the results as a JSON list")
    p.set_defaults(func=run)


def params_from_args(args):
    overrides = {k: getattr(args, k) for k in ("alpha", "beta", "gamma", "tau_hours", "decay", "k")
                 if getattr(args, k) is not None}
    time_range = None
    if args.time_from or args.time_to:
        time_range = (moment(args.time_from, "--from"), moment(args.time_to, "--to"))
    return preset_params(
        args.preset, **overrides, as_of=moment(args.as_of, "--as-of"),
        agents=tuple(args.agent) if args.agent else None, kinds=tuple(args.kind) if args.kind else None,
        tags=tuple(args.tag) if args.tag else None, time_range=time_range,
        include_retired=args.include_retired, protected_only=args.protected_only,
        confidence_decay=args.confidence_decay)


def run(args) -> int:
    if args.text is None and args.like is None:
        raise ValueError("give the query text, or --like MEMORY_ID")
    if args.text is not None and args.like is not None:
        raise ValueError("give either the query text or --like, not both")
    params = params_from_args(args)
    with open_store(args.db, read_only=True) as store:
        use_now(store, args, out=sys.stderr if args.json else sys.stdout)  # stdout stays pure JSON
        engine = Engine(store)
        try:
            engine.set_query(args.text, like=args.like)
        except EmbedderUnavailable as e:
            if preset(params.preset).needs_vector:
                raise ValueError(str(e)) from None
            print(f"memviz: note: {e}", file=sys.stderr)
        result = engine.score(params)
        rows = {r["id"]: r for r in store.get_many(result.ids)}
    for note in result.notes:
        print(f"memviz: note: {note}", file=sys.stderr)
    items = []
    for i, mid in enumerate(result.ids):
        item = result.explain(i)
        for key in _CONTRACT_KEYS:
            item.setdefault(key, None)
            item.setdefault(key + "_weighted", None)
        row = rows.get(mid, {})
        item.update(kind=row.get("kind"), agent=row.get("agent"), event_time=iso(row.get("event_time")) or None,
                    content=row.get("content"))
        items.append(item)
    if args.json:
        print(json.dumps(items, indent=2, ensure_ascii=False))
        return 0
    _print_table(items, result, params)
    return 0


def _fmt(v):
    return "-" if v is None else f"{v:.3f}"


def _print_table(items, result, params):
    info = preset(params.preset)
    print(f"{params.preset}: {info.description}")
    print(f"{len(items)} of {result.candidates} candidates")
    comps = list(result.weighted)
    head = f"{'#':>3} {'score':>8}  " + "  ".join(f"{c[:18]:>18}" for c in comps) + "  memory"
    print(head)
    for it in items:
        cells = []
        for c in comps:
            raw = it.get(c)
            cells.append(f"{_fmt(raw) + ' → ' + _fmt(it.get(c + '_weighted')) if raw is not None else _fmt(it.get(c + '_weighted')):>18}")
        text = (it["content"] or "").replace("\n", " ")
        if len(text) > 70:
            text = text[:69] + "…"
        print(f"{it['rank']:>3} {it['score']:>8.4f}  " + "  ".join(cells) + f"  [{it['kind']}] {text}")
