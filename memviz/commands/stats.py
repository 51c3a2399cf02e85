"""`memviz stats DB`: what a store holds, and whether it is sound."""
import json

from ..store import iso, open_store


def add_parser(sub):
    p = sub.add_parser("stats", help="print what a memory store holds")
    p.add_argument("db")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--no-integrity", action="store_true", help="skip the full integrity check (faster on big stores)")
    p.set_defaults(func=run)


def collect(store, integrity: bool = True) -> dict:
    first, last = store.time_span()
    return {
        "path": store.path,
        "schema_version": store.report.version if store.report else None,
        "read_only": store.read_only_reason,
        "notes": store.vector_index_notes(),
        "counts": store.counts(),
        "time_span": [iso(first), iso(last)] if first is not None else None,
        "embedding_models": [{"model": m, "dim": d, "count": n} for m, d, n in store.embedding_models()],
        "entities": len(store.entities()),
        "integrity": (store.integrity() or ["ok"]) if integrity else None,
    }


def run(args) -> int:
    with open_store(args.db, read_only=True) as store:
        info = collect(store, integrity=not args.no_integrity)
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False))
        return 0 if info["integrity"] in (None, ["ok"]) else 1
    c = info["counts"]
    print(f"{info['path']}  (schema v{info['schema_version']})")
    print(f"memories: {c['total']}  live {c['live']}  retired {c['retired']}  entities: {info['entities']}")
    if info["time_span"]:
        print(f"time span: {info['time_span'][0]} .. {info['time_span'][1]} UTC")
    for title, key in (("by kind", "by_kind"), ("by agent", "by_agent")):
        print(f"{title}:")
        for name, (live, retired) in sorted(c[key].items(), key=lambda kv: -sum(kv[1])):
            print(f"  {name or '(none)':<24} {live:>8} live {retired:>6} retired")
    print("embedding models:")
    for m in info["embedding_models"] or [{"model": "(none)", "dim": 0, "count": 0}]:
        print(f"  {m['model']:<40} {m['dim']:>5}-d {m['count']:>8}")
    for n in info["notes"]:
        print(f"note: {n}")
    if info["integrity"] is not None:
        print("integrity: " + "; ".join(info["integrity"]))
    return 0 if info["integrity"] in (None, ["ok"]) else 1
