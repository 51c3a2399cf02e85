"""`memviz stats DB`: what a store holds, and whether it is sound."""
import json

import apsw

from ..frameworks import open_source as open_store
from ..store import iso
from ..store.check import fts_findings, vec_findings
from ..store.clock import parse_clock, store_clock
from ..store.errors import StoreError, reasons_besides_asking
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
    """Every figure that can be read; one the store's damage hides is None and named under
    `unreadable` (a damaged page costs that figure, not the whole report)."""
    unreadable: list[str] = []

    def read(label, fn):
        try:
            return fn()
        except (StoreError, apsw.Error) as e:
            unreadable.append(f"{label}: {e}")
            return None
    span = read("time span", store.time_span) or (None, None)
    info = {
        "path": store.path,
        "schema_version": store.schema_version(),
        # stats opens every store read-only itself: say only why an open to edit would be read-only
        "read_only": reasons_besides_asking(store.read_only_reason),
        "notes": read("vector index notes", store.vector_index_notes) or [],
        "counts": read("counts", store.counts),
        "time_span": [iso(span[0]), iso(span[1])] if span[0] is not None else None,
        "clock": read("clock", lambda: _clock_info(store)),
        "embedding_models": _models(read("embedding models", store.embedding_models)),
        "entities": read("entities", lambda: len(store.entities())),
        "integrity": read("integrity", lambda: _integrity(store)) if integrity else None,
    }
    info["unreadable"] = unreadable
    return info


def _models(rows):
    return None if rows is None else [{"model": m, "dim": d, "count": n} for m, d, n in rows]


def _integrity(store) -> list[str]:
    """SQLite's integrity_check, then the full-text and vector indexes against the memories
    (store.integrity() alone skips FTS5's check on a read-only open and never looks at vec0).
    A PostgreSQL store answers with its own integrity() (the server keeps its indexes itself)."""
    if store.backend != "sqlite":
        return store.integrity() or ["ok"]
    problems = [r[0] for r in store.conn.execute("PRAGMA integrity_check(20)") if r[0] != "ok"]
    n = store.counts()["total"]
    if n > INDEX_CHECK_LIMIT:
        skipped = f"full-text and vector checks skipped on {n} memories (they read every row): run `memviz check`"
        return problems + [f"skipped: {skipped}"] if problems else [f"ok (SQLite only; {skipped})"]
    for check in (fts_findings, vec_findings):
        found, skipped = check(store)
        problems += [f.title + (f" ({f.count})" if f.count else "")
                     + ("; run `memviz check --repair`" if f.repairable else f" ({f.meaning})") for f in found]
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
    if info["read_only"]:
        print(f"read-only: {info['read_only']}")
    if c is not None:
        print(f"memories: {c['total']}  live {c['live']}  retired {c['retired']}  entities: {info['entities']}")
    ck = info["clock"]
    if ck is not None:
        print(f"clock: {ck['now']} UTC ({ck['mode']})" + (f" — {ck['source']}" if ck["source"] else ""))
    if info["time_span"]:
        print(f"time span: {info['time_span'][0]} .. {info['time_span'][1]} UTC")
    for title, key in (("by kind", "by_kind"), ("by agent", "by_agent")) if c is not None else ():
        print(f"{title}:")
        for name, (live, retired) in sorted(c[key].items(), key=lambda kv: -sum(kv[1])):
            print(f"  {name or '(none)':<24} {live:>8} live {retired:>6} retired")
    if info["embedding_models"] is not None:
        print("embedding models:")
        for m in info["embedding_models"] or [{"model": "(none)", "dim": 0, "count": 0}]:
            print(f"  {m['model']:<40} {m['dim']:>5}-d {m['count']:>8}")
    for n in info["notes"]:
        print(f"note: {n}")
    if info["integrity"] is not None:
        print("integrity: " + "; ".join(info["integrity"]))
    for u in info["unreadable"]:
        print(f"unreadable: {u}")
    return 0 if _sound(info) else 1


def _sound(info) -> bool:
    return not info["unreadable"] and (
        info["integrity"] is None or all(p.startswith(("ok", "skipped")) for p in info["integrity"]))
