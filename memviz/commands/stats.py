"""`memviz stats DB`: what a store holds, and whether it is sound."""
import json

from ..store import iso, open_store
from ..store.check import fts_findings, vec_findings
from ..store.clock import parse_clock, store_clock
from .clock import add_now_argument

#: above this many memories stats skips the index checks (each reads every row); `memviz check` runs them
INDEX_CHECK_LIMIT = 250_000


def add_parser(sub):
    p = sub.add_parser("stats", help="print what a memory store holds")
    p.add_argument("db")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_now_argument(p)
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
        "clock": _clock_info(store),
        "embedding_models": [{"model": m, "dim": d, "count": n} for m, d, n in store.embedding_models()],
        "entities": store.conn.execute("SELECT count(*) FROM entities").fetchone()[0],
        "integrity": _integrity(store) if integrity else None,
    }


def _integrity(store) -> list[str]:
    """SQLite's integrity_check, then the full-text and vector indexes against the memories
    (store.integrity() alone skips FTS5's check on a read-only open and never looks at vec0)."""
    problems = [r[0] for r in store.conn.execute("PRAGMA integrity_check(20)") if r[0] != "ok"]
    n = store.counts()["total"]
    if n > INDEX_CHECK_LIMIT:
        skipped = f"full-text and vector checks skipped on {n} memories (they read every row): run `memviz check`"
        return problems + [f"skipped: {skipped}"] if problems else [f"ok (SQLite only; {skipped})"]
    for check in (fts_findings, vec_findings):
        found, skipped = check(store)
        problems += [f.title + (f" ({f.count})" if f.count else "") + "; run `memviz check --repair`" for f in found]
        problems += [f"skipped {s}" for s in skipped]
    return problems or ["ok (SQLite, full-text index, vector index)"]
def _clock_info(store) -> dict:
    c = store_clock(store)
    return {"mode": c.mode, "now": iso(c.now()), "source": c.source}


def run(args) -> int:
    with open_store(args.db, read_only=True) as store:
        if args.now:
            store.clock_override = parse_clock(args.now, store)  # this run only; printed below
        info = collect(store, integrity=not args.no_integrity)
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False))
        return 0 if _sound(info) else 1
    c = info["counts"]
    print(f"{info['path']}  (schema v{info['schema_version']})")
    print(f"memories: {c['total']}  live {c['live']}  retired {c['retired']}  entities: {info['entities']}")
    ck = info["clock"]
    print(f"clock: {ck['now']} UTC ({ck['mode']})" + (f" — {ck['source']}" if ck["source"] else ""))
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
    return 0 if _sound(info) else 1


def _sound(info) -> bool:
    return info["integrity"] is None or all(p.startswith(("ok", "skipped")) for p in info["integrity"])
