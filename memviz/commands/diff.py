"""`memviz diff A [B]`: what changed between two moments of a store, two stores, or two agents."""
import json

from ..context import Timeline, diff_agents, diff_moments, diff_stores, heading
from ..frameworks import open_source as open_store
from .context import moment


def add_parser(sub):
    p = sub.add_parser("diff", help="changes between two moments, two stores or two agents",
                       description="List memories added, retired, corrected (old → new), importance, protection "
                                   "and tag changes, reflections gained with their evidence, and how a query's "
                                   "top k moved. One store: --from T1 [--to T2] (two moments) or --agent X "
                                   "--vs-agent Y (two agents). Two stores: A B (matched by memory id).")
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B", nargs="?")
    p.add_argument("--from", dest="t_from", help="first moment (ISO 8601, UTC unless a zone is given)")
    p.add_argument("--to", dest="t_to", help="second moment (default: now)")
    p.add_argument("--agent", help="only this agent (with --vs-agent: the first of the two agents)")
    p.add_argument("--vs-agent", help="compare --agent's memories with this agent's, by text")
    p.add_argument("--query", help="also show how this query's top k changed")
    p.add_argument("--preset", default="dual-memory", help="retrieval preset for --query")
    p.add_argument("-k", type=int, default=10, help="top k for --query (default 10)")
    p.add_argument("--json", action="store_true", help="the changes as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    t1, t2 = moment(args.t_from, "--from"), moment(args.t_to, "--to")
    if args.vs_agent and not args.agent:
        raise ValueError("--vs-agent needs --agent (the agent to compare with)")
    if args.b is not None and (args.vs_agent or t1 is not None or t2 is not None):
        raise ValueError("two stores are compared as they are now; --from/--to and --vs-agent take one store")
    if args.b is None and not args.vs_agent and t1 is None:
        raise ValueError("give a second store, --from T1 [--to T2], or --agent X --vs-agent Y")
    with open_store(args.a, read_only=True) as a:
        if args.b is not None:
            with open_store(args.b, read_only=True) as b:
                d = diff_stores(a, b, query=args.query, preset=args.preset, k=args.k,
                                agents=[args.agent] if args.agent else None)
        else:
            arrays = a.arrays()
            timeline = Timeline(a, arrays)
            if args.vs_agent:
                view = timeline.at(t2) if t2 is not None else None
                d = diff_agents(a, arrays, args.agent, args.vs_agent, view=view)
            else:
                d = diff_moments(a, timeline, t1, t2, query=args.query, preset=args.preset, k=args.k,
                                 agents=[args.agent] if args.agent else None)
    if args.json:
        print(json.dumps(d.as_dict(), indent=2, ensure_ascii=False, default=str))
        return 0
    print(f"{d.what}: {d.a_label} → {d.b_label}")
    counts = d.counts()
    print(", ".join(d.headings()) or "no changes")
    for note in d.notes:
        print(f"note: {note}")
    kind = None
    for c in d.changes:  # grouped by kind (ORDER), each group under its heading, as in the Diff panel
        if c.kind != kind:
            kind = c.kind
            print(f"\n{heading(kind, counts[kind])}:")
        print(f"  {c.summary}  [{', '.join(i[:12] for i in c.ids)}]")
    return 0
