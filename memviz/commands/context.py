"""`memviz context DB`: what goes into the agent's prompt from memory under a token budget (HTM's two-tier memory)."""
import json
import sys

import numpy as np

from ..context import DEFAULT_BUDGET, MARGIN, STRATEGIES, Timeline, TokenCounter, assemble, load_texts, query_ranking, report
from ..frameworks import open_source as open_store
from ..store import iso, to_epoch
from ..store.clock import store_clock


def add_parser(sub):
    p = sub.add_parser("context", help="the prompt the agent would get from memory under a token budget",
                       description="Assemble the working-memory context as a hierarchical-memory agent does: strategies recent, "
                                   "important, balanced (importance × 1/(1 + age hours)); eviction lowest "
                                   "importance/(seconds since access + 1) first; a 10% margin off the budget; "
                                   "protected memories pinned. --query ranks with a retrieval preset instead.")
    p.add_argument("db")
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="tokens (default 128000; 10%% is kept as margin)")
    p.add_argument("--strategy", choices=STRATEGIES, help="default: balanced, or query when --query is given")
    p.add_argument("--query", help="rank by this query with --preset (strategy query)")
    p.add_argument("--preset", default="dual-memory", help="retrieval preset for --query (default dual-memory)")
    p.add_argument("--as-of", help="the store as it was then (ISO 8601, UTC unless a zone is given)")
    p.add_argument("--now", help="the time ages are measured from (default: --as-of, else the store's clock)")
    p.add_argument("--agent", action="append", help="only this agent's memories (repeatable)")
    p.add_argument("--margin", type=float, default=MARGIN, help="share of the budget kept free (default 0.1)")
    p.add_argument("--estimate", action="store_true", help="count tokens as characters/4 instead of the tokenizer")
    p.add_argument("--below", type=int, default=5, help="how many left-out memories to explain (default 5)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="everything as JSON")
    out.add_argument("--text", action="store_true", help="only the assembled context, exactly as it would be sent")
    p.set_defaults(func=run)


def moment(value, flag):
    """A time from the command line: epoch seconds or ISO 8601."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return float(to_epoch(value))
    except ValueError as e:
        raise ValueError(f"{flag}: {e}") from None


def run(args) -> int:
    strategy = args.strategy or ("query" if args.query else "balanced")
    if strategy == "query" and not args.query:
        raise ValueError("the query strategy needs --query TEXT")
    if args.query and strategy != "query":
        raise ValueError(f"--query ranks with a preset; it cannot be combined with --strategy {strategy}")
    as_of = moment(args.as_of, "--as-of")
    now = moment(args.now, "--now")
    now = now if now is not None else as_of
    with open_store(args.db, read_only=True) as store:
        arrays = store.arrays()
        if now is None:
            now = store_clock(store, arrays).now()
        view = Timeline(store, arrays).at(as_of)
        live = view.live
        if args.agent:
            live = live & np.isin(view.arrays.agent, np.array(args.agent, dtype=object))
        content, _ = load_texts(store, arrays)
        for r, t in view.content.items():
            content[r] = t
        counter = TokenCounter(use_tokenizer=not args.estimate)
        tokens = counter.count_many(content)
        ranking, notes = None, []
        if strategy == "query":
            ranking, notes = _ranking(store, view, args, now, as_of)
        plan = assemble(view.arrays, tokens, now=now, strategy=strategy, budget=args.budget, margin=args.margin,
                        candidates=live, ranking=ranking, show_below=args.below)
    text = plan.text(content)
    for note in notes + plan.notes:
        print(f"memviz: note: {note}", file=sys.stderr)
    if args.text:
        sys.stdout.write(text + ("\n" if text else ""))
        return 0
    out = report(plan, view.arrays, content, counter, as_of=as_of, query=args.query, preset=args.preset, notes=notes)
    out["margin"] = args.margin
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    _print(out)
    return 0


def _ranking(store, view, args, now, as_of):
    from ..embed import EmbedderUnavailable
    from ..retrieval import Engine, preset, preset_params
    info = preset(args.preset)
    engine = Engine(store, arrays=view.arrays, now=now)
    notes = []
    try:
        engine.set_query(args.query)
    except EmbedderUnavailable as e:
        if info.needs_vector:
            raise ValueError(str(e)) from None
        notes.append(str(e))
    params = preset_params(info.name, as_of=as_of, agents=tuple(args.agent) if args.agent else None)
    return query_ranking(engine, params), notes


def _short(text, width=72):
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 1] + "…"


def _print(r):
    how = f"query {r['query']!r} ranked by {r['preset']}" if r["strategy"] == "query" else f"strategy {r['strategy']}"
    tok = r["tokenizer"] if r["exact_tokens"] else f"≈ {r['tokenizer']}"
    print(f"{how}; now {r['now']}" + (f"; as of {r['as_of']}" if r["as_of"] else ""))
    print(f"budget {r['budget']:,} tokens less {r['margin']:.0%} margin = {r['usable']:,} usable; "
          f"tokens counted by {tok}")
    print(f"{len(r['included']):,} of {r['candidates']:,} memories in, {r['used']:,} tokens "
          f"(the assembled text: {r['text_tokens']:,}); {r['evicted']:,} evicted from working memory")
    recent = r["strategy"] == "recent"  # its score is the creation time, shown as a date
    w = 16 if recent else 9
    print(f"{'#':>4} {'tokens':>7} {'total':>8}  {'created' if recent else 'score':>{w}}  memory")
    for it in r["included"]:
        pin = "📌 " if it["pinned"] else ""
        if it["score"] is None:
            score = "-"
        elif recent:
            score = iso(it["score"])[:16]
        else:
            score = f"{it['score']:.4g}"
        print(f"{it['rank']:>4} {it['tokens']:>7,} {it['cumulative']:>8,}  {score:>{w}}  {pin}[{it['kind']}] "
              f"{_short(it['content'])}")
    print(f"---- cut: {r['used']:,} of {r['usable']:,} tokens " + "-" * 30)
    for d in r["below"]:
        print(f"  out {d['tokens']:>6,} tokens  {_short(d['content'], 50)}\n        why: {d['reason']}")
