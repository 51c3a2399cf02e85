"""A second process for the editing tests.

`agent` mode plays the agent that owns the store: plain SQL INSERTs through the schema (its
triggers keep FTS and vectors) at a steady rate, and recall bumps of access counters, as an
agent's hot path would; it prints one JSON summary of everything it committed at the end.

`edit` mode is memviz editing in a loop (actions, undo, redo) until it is killed; it prints
"ready" once warmed up and one line per step written (after its transaction committed).
`edit-server` loads memviz and the embedding model once, then for each stdin line
"DB SEED OUTFILE" forks an editor (output to OUTFILE) and prints its pid; "reap PID" waits
for a killed editor and prints "reaped". Forking from a warm process makes a kill loop fast.

    python tests/agent_writer.py agent DB --rate 50 --seconds 3 --dim 256 --model M
    python tests/agent_writer.py edit DB --seed 7
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import apsw  # noqa: E402
import numpy as np  # noqa: E402

WORDS = "river lamp meeting budget coffee garden invoice train berlin python deadline sister".split()


def write(conn, sql, params, patience=60.0) -> int:
    """Run one write, tried again while another connection holds the database (the test's edits);
    returns how many tries were refused. Held for `patience` seconds, the agent gives up with the error."""
    refused, deadline = 0, time.monotonic() + patience
    while True:
        try:
            conn.execute(sql, params)
            return refused
        except apsw.BusyError:
            refused += 1
            if time.monotonic() > deadline:
                raise


def schedule(rates: dict, seconds: float):
    """(time, op) of every write in order: each op at its own steady rate (k / rate seconds after the
    start, k = 1, 2, ...); writes due at the same moment in the order of `rates`."""
    due = sorted((k / rate, i, op) for i, (op, rate) in enumerate(rates.items()) if rate > 0
                 for k in range(1, int(seconds * rate) + 1))
    return [(t, op) for t, _, op in due]


def run_agent(args) -> int:
    """Inserts at --rate and, unless --recall-rate is given, a recall after every other insert
    (the shape of the agent the tests have always run); every other write at its own rate:
    recalls of older memories, rewrites of its own memories' text (content and a re-embedded
    vector: the vec0 and FTS triggers follow), soft-deletes and tag changes of its own memories,
    --retire-every: a soft-delete of an older memory every N inserts."""
    from memviz.store.connection import connect

    conn = connect(args.db)
    rng = random.Random(args.seed)
    vrng = np.random.default_rng(args.seed)
    inserted, touches, retired, busy = [], {}, [], 0
    rewritten, deleted, tagged = {}, [], {}
    own: dict[str, np.ndarray] = {}  # the agent's own memories still current: id -> vector
    existing = [r[0] for r in conn.execute("SELECT id FROM memories")]
    recall_rate = args.rate / 2 if args.recall_rate is None else args.recall_rate
    rates = {"insert": args.rate, "recall": recall_rate,
             "retire": args.rate / args.retire_every if args.retire_every else 0,
             "rewrite": args.rewrite_rate, "delete": args.delete_rate, "tag": args.tag_rate}
    log = open(args.log, "w", buffering=1) if args.log else None
    start = time.monotonic()
    n = 0

    def vector(near=None):
        v = vrng.normal(size=args.dim) if near is None else near + 0.3 * vrng.normal(size=args.dim) / np.sqrt(args.dim)
        return (v / np.linalg.norm(v)).astype("<f4")

    for at, op in schedule(rates, args.seconds):
        time.sleep(max(0.0, start + at - time.monotonic()))
        if args.stop_file and os.path.exists(args.stop_file):
            break
        now = int(time.time())
        mid = None
        if op == "insert":
            n += 1
            mid = f"agent-{os.getpid()}-{n}"
            content = f"agent observation {n}: " + " ".join(rng.choice(WORDS) for _ in range(6))
            vec = vector()
            busy += write(conn, "INSERT INTO memories(id, agent, kind, content, embedding, embedding_model, event_time, "
                                "created_at) VALUES (?, 'agent', 'episode', ?, ?, ?, ?, ?)",
                          (mid, content, vec.tobytes(), args.model, now, now))
            inserted.append([mid, content])
            own[mid] = vec
        elif op == "recall" and existing:  # the agent's retrieval counts what it read
            mid = rng.choice(existing)
            busy += write(conn, "UPDATE memories SET access_count = access_count + 1, last_accessed = ? WHERE id = ?",
                          (now, mid))
            touches[mid] = touches.get(mid, 0) + 1
        elif op == "retire" and len(existing) > 1:  # the agent forgets an older memory
            mid = existing.pop(rng.randrange(len(existing)))
            busy += write(conn, "UPDATE memories SET valid_until = ? WHERE id = ? AND valid_until IS NULL", (now, mid))
            retired.append(mid)
        elif op == "rewrite" and own:  # its own memory's text revised, and embedded again
            mid = rng.choice(list(own)[-200:])
            k = rewritten.get(mid, 0) + 1
            content = f"agent observation revised {k}: " + " ".join(rng.choice(WORDS) for _ in range(6))
            own[mid] = vec = vector(near=own[mid])
            busy += write(conn, "UPDATE memories SET content = ?, embedding = ? WHERE id = ?", (content, vec.tobytes(), mid))
            rewritten[mid] = k
        elif op == "delete" and own:  # one of its own, soft-deleted
            mid = rng.choice(list(own)[-200:])
            del own[mid]
            busy += write(conn, "UPDATE memories SET valid_until = ? WHERE id = ? AND valid_until IS NULL", (now, mid))
            deleted.append(mid)
        elif op == "tag" and own:
            mid = rng.choice(list(own)[-200:])
            tags = sorted(rng.sample(WORDS, 2))
            busy += write(conn, "UPDATE memories SET tags = ? WHERE id = ?", (json.dumps(tags), mid))
            tagged[mid] = tags
        if log is not None and mid is not None:
            log.write(f"{op} {mid} {time.time():.6f}\n")  # after the commit
    conn.close()
    if log is not None:
        log.close()
    print(json.dumps({"inserted": inserted, "touches": touches, "retired": retired, "busy": busy,
                      "rewritten": rewritten, "deleted": deleted, "tagged": tagged,
                      "seconds": round(time.monotonic() - start, 2)}))
    return 0


def _warm_embedder():
    import memviz.edits  # noqa: F401 - loaded before any fork
    from memviz.embed import default_embedder

    embedder = default_embedder()
    embedder.embed_one("warm up")
    return embedder


def run_editor(args) -> int:
    edit_loop(args.db, args.seed, sys.stdout, _warm_embedder())
    return 0


def run_edit_server(args) -> int:
    embedder = _warm_embedder()
    for line in sys.stdin:
        cmd = line.split()
        if cmd[0] == "reap":
            os.waitpid(int(cmd[1]), 0)
            print("reaped", flush=True)
            continue
        db, seed, outfile = cmd
        pid = os.fork()
        if pid == 0:  # the editor: its own process and its own SQLite connection
            with open(outfile, "w", buffering=1) as out:
                try:
                    edit_loop(db, int(seed), out, embedder)
                except BaseException:
                    traceback.print_exc(file=out)
                finally:
                    out.flush()
                    os._exit(1)
        print(pid, flush=True)
    return 0


def edit_loop(db, seed, out, embedder):
    import memviz.store as ms
    from memviz.edits import Confirm, Correct, History, Restore, SetImportance, SetTags, SoftDelete, Unprotect

    rng = random.Random(seed)
    store = ms.open(db)
    h = History(store)
    ids = [r[0] for r in store.conn.execute("SELECT id FROM memories")]
    print("ready", file=out, flush=True)
    step = 0
    while True:
        step += 1
        mid = rng.choice(ids)
        row = store.get(mid)
        op = rng.choice(["correct", "delete", "restore", "confirm", "unprotect", "importance", "tags",
                         "undo", "undo", "redo"])
        try:
            if op in ("undo", "redo"):
                if (h.undo() if op == "undo" else h.redo()) is None:
                    continue  # nothing to undo/redo: nothing written
            else:
                action = {
                    "correct": lambda: Correct(mid, f"{row['content']} (corrected {step})", embedder=embedder,
                                               shown_rows=row),
                    "delete": lambda: SoftDelete(mid, shown_rows=row),
                    "restore": lambda: Restore(mid, shown_rows=row),
                    "confirm": lambda: Confirm(mid, shown_rows=row),
                    "unprotect": lambda: Unprotect(mid, shown_rows=row),
                    "importance": lambda: SetImportance(mid, rng.choice([1, 3, 5, 7, 9]), shown_rows=row),
                    "tags": lambda: SetTags(mid, rng.sample(WORDS, 2), shown_rows=row),
                }[op]()
                h.perform(action)
                if op == "correct":
                    ids.append(action.new_id)
        except ms.ValidationError:
            continue  # e.g. deleting a retired memory: refused before any write
        print(f"{step} {op} {mid}", file=out, flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="mode", required=True)
    a = sub.add_parser("agent")
    a.add_argument("db")
    a.add_argument("--rate", type=float, default=50)
    a.add_argument("--seconds", type=float, default=3)
    a.add_argument("--dim", type=int, default=256)
    a.add_argument("--model", default="wordllama/l2_supercat-256")
    a.add_argument("--seed", type=int, default=1)
    a.add_argument("--retire-every", type=int, default=0, help="retire (soft-delete) an older memory every N writes")
    a.add_argument("--stop-file", default="", help="stop early once this file exists")
    a.add_argument("--recall-rate", type=float, default=None, help="recalls per second (default: one per two inserts)")
    a.add_argument("--rewrite-rate", type=float, default=0, help="rewrites of its own memories' text per second")
    a.add_argument("--delete-rate", type=float, default=0, help="soft-deletes of its own memories per second")
    a.add_argument("--tag-rate", type=float, default=0, help="tag changes of its own memories per second")
    a.add_argument("--log", default="", help="one line 'op id commit-time' per write, after its commit")
    e = sub.add_parser("edit")
    e.add_argument("db")
    e.add_argument("--seed", type=int, default=1)
    sub.add_parser("edit-server")
    args = p.parse_args(argv)
    return {"agent": run_agent, "edit": run_editor, "edit-server": run_edit_server}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
