"""Editing while a second process plays the agent, and a writer killed mid-action.

The agent (tests/agent_writer.py) inserts memories with plain SQL at ~50/s and bumps recall
counters; memviz edits at the same time. Nothing either side wrote may be lost, and the file
must pass SQLite's and FTS5's integrity checks. Then an editing process is SIGKILLed at random
moments, again and again: on reopen every action is wholly there or wholly absent.
"""
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

import memviz.store as ms
from memviz.edits import Confirm, Correct, EditKept, History, SetImportance, SoftDelete, consistency_problems
from memviz.embed import LOCAL_MODEL, default_embedder
from memviz.store.changes import ChangeWatcher

HERE = os.path.dirname(os.path.abspath(__file__))
WRITER = os.path.join(HERE, "agent_writer.py")
ROOT = os.path.dirname(HERE)


def _env():
    return {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _seed_store(path, n):
    texts = [f"seed memory {i} about {w}" for i, w in
             enumerate(("tea", "trains", "budgets", "gardens", "python", "berlin", "invoices", "lamps") * 4)][:n]
    s = ms.create(path)
    s.insert_memories([{"id": f"s{i}", "kind": "fact", "content": t, "embedding": v, "embedding_model": LOCAL_MODEL}
                       for i, (t, v) in enumerate(zip(texts, default_embedder().embed(texts)))])
    return s


def _write(h, action=None):
    """An edit (or, without one, an undo) the agent's lock may hold up: it is kept and retried."""
    try:
        return h.perform(action) if action else h.undo()
    except EditKept:
        deadline = time.monotonic() + 60
        while True:
            time.sleep(0.05)
            try:
                return h.retry()
            except EditKept:
                assert time.monotonic() < deadline, "the agent held the edit up for a minute"


def test_edits_and_a_live_agent_lose_nothing(tmp_path):
    path = str(tmp_path / "live.db")
    store = _seed_store(path, 24)
    watcher = ChangeWatcher(store)
    agent = subprocess.Popen([sys.executable, WRITER, "agent", path, "--rate", "50", "--seconds", "3",
                              "--model", LOCAL_MODEL], stdout=subprocess.PIPE, env=_env(), text=True)
    h = History(store)
    rng = random.Random(5)
    importance, confirmed, corrections, seen_new = {}, set(), [], set()
    agent_rows = []
    steps = 0
    deadline = time.monotonic() + 120  # the agent writes for 3 s
    while agent.poll() is None:
        assert time.monotonic() < deadline, "the agent did not finish"
        change = watcher.poll()
        if change:
            seen_new.update(change.new_ids)
            agent_rows.extend(i for i in change.new_ids if i.startswith("agent-"))
        steps += 1
        mid = f"s{rng.randrange(24)}"
        row = store.get(mid)
        pick = steps % 5
        if pick == 0 and agent_rows:  # confirm a memory the agent just wrote
            target = rng.choice(agent_rows)
            if not store.get(target)["protected"]:
                _write(h, Confirm(target, shown_rows=store.get(target)))
                confirmed.add(target)
        elif pick == 1 and row["valid_until"] is None and mid not in [c[0] for c in corrections]:
            act = Correct(mid, row["content"] + " (corrected)", shown_rows=row)
            _write(h, act)
            corrections.append((mid, act.new_id))
        elif pick == 2 and row["valid_until"] is None and mid not in [c[0] for c in corrections]:
            _write(h, SoftDelete(mid, shown_rows=row))
            _write(h)  # delete, then take it back
        else:
            value = rng.choice([1, 2, 3, 4, 6, 7, 8, 9])
            if row["importance"] != value:
                _write(h, SetImportance(mid, value, shown_rows=row))
                importance[mid] = value
        time.sleep(0.02)
    out, _ = agent.communicate(timeout=30)
    assert agent.returncode == 0
    report = json.loads(out)
    change = watcher.poll()
    if change:
        seen_new.update(change.new_ids)

    inserted = report["inserted"]
    assert len(inserted) >= 100, report["seconds"]  # ~50/s for 3 s
    assert steps >= 30 and corrections and confirmed and importance
    # every agent write is there, with its FTS entry and vector
    for mid, content in inserted:
        row = store.get(mid)
        assert row is not None and row["content"] == content and len(row["embedding"]) == 4 * 256
    n_fts = store.conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'agent'").fetchone()[0]
    assert n_fts == len(inserted)
    for mid, n in report["touches"].items():
        assert store.get(mid)["access_count"] == n
    # every memviz write is there
    for mid, value in importance.items():
        assert store.get(mid)["importance"] == value
    assert all(store.get(m)["protected"] for m in confirmed)
    for old, new in corrections:
        assert store.get(old)["valid_until"] is not None and store.get(new)["attributes"]["supersedes"] == old
    assert all(store.get(f"s{i}")["valid_until"] is None or f"s{i}" in dict(corrections) for i in range(24))
    # the watcher noticed the agent's writes through PRAGMA data_version
    assert {m for m, _ in inserted} <= seen_new
    assert store.integrity() == []
    assert consistency_problems(store) == []
    assert store.counts()["total"] == 24 + len(inserted) + len(corrections)
    store.close()


@pytest.mark.slow
def test_writer_killed_mid_action_leaves_whole_actions(tmp_path):
    path = str(tmp_path / "killed.db")
    _seed_store(path, 12).close()
    # editors are forked from one warm process, so each run costs a fork, not an interpreter start
    server = subprocess.Popen([sys.executable, WRITER, "edit-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              env=_env(), text=True)
    rng = random.Random(11)
    written = 0
    try:
        for run in range(20):
            log = tmp_path / f"editor{run}.txt"
            server.stdin.write(f"{path} {run} {log}\n")
            server.stdin.flush()
            pid = int(server.stdout.readline())
            deadline = time.monotonic() + 20
            while not (log.exists() and log.read_text().startswith("ready")):
                assert time.monotonic() < deadline, "the editor did not start"
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.3))
            os.kill(pid, signal.SIGKILL)
            server.stdin.write(f"reap {pid}\n")
            server.stdin.flush()
            assert server.stdout.readline().strip() == "reaped"
            lines = log.read_text().splitlines()
            assert not any("Traceback" in ln for ln in lines), log.read_text()  # it died by the kill only
            written += len(lines) - 1
            with ms.open(path) as s:
                assert s.read_only_reason is None
                problems = consistency_problems(s)
                assert problems == [], f"run {run}: {problems[:5]}"
    finally:
        server.stdin.close()
        server.wait(timeout=10)
    with ms.open(path) as s:
        audited = s.conn.execute("SELECT count(*) FROM memviz_audit WHERE action != 'insert'").fetchone()[0]
        assert s.counts()["total"] > 12  # corrections were written
    # each printed step was committed before it was printed, with at least one audit entry
    assert written >= 20 and audited >= written
