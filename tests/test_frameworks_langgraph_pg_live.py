"""A LangGraph PostgresStore read by delta (LangGraphPostgres.changed_since): what LangGraph's own
client writes while memviz watches — puts, updates, deletes, TTL expiry and its sweep,
transactions that commit out of the order of their stamps — arrives as records equal to a
whole read's, and only the items that changed are read."""
from __future__ import annotations

import datetime as dt
import time

import numpy as np
import pytest
from langgraph_stores import index_config, postgres_store, run_ops
from pg_server import pg, pg_db  # noqa: F401 - fixtures

import memviz.frameworks as fw
from memviz.embed import LOCAL_MODEL
from memviz.frameworks.langgraph import LangGraphPostgres
from memviz.store.changes import changes_since, token_now


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMVIZ_CACHE_DIR", str(tmp_path / "cache"))


def put(ns, key, text, **kw):
    return {"op": "put", "ns": list(ns), "key": key, "value": {"content": text}, **kw}


FILL = [put(("memories", "alice"), f"a{i}", f"Alice fact {i} about tea") for i in range(6)] + \
       [put(("memories", "bob"), f"b{i}", f"Bob fact {i} about trains") for i in range(4)]


def _plain(rec: dict) -> dict:
    out = dict(rec)
    if out.get("embedding") is not None and not isinstance(out["embedding"], bytes):  # the records' float32 bytes
        out["embedding"] = np.asarray(out["embedding"], dtype="<f4").tobytes()
    return out


class Shown:
    """What a mirror holds: a whole read, then each delta applied as mirror.py applies it."""

    def __init__(self, src: LangGraphPostgres):
        self.src = src
        self.items = {r["id"]: _plain(r) for r in src.records()}
        self.token = src.token()

    def follow(self) -> set[str]:
        """Take the delta since the last look; the ids it brought."""
        token, delta = self.src.token(), self.src.changed_since(self.token, self.items.keys())
        assert delta is not None, "a whole read where a delta was expected"
        got, present = delta
        self.items.update({r["id"]: _plain(r) for r in got})
        self.items = {i: self.items[i] for i in present}
        self.token = token
        return {r["id"] for r in got}

    def assert_whole_read(self, dsn: str) -> None:
        whole = LangGraphPostgres(dsn)
        try:
            fresh = {r["id"]: _plain(r) for r in whole.records()}
        finally:
            whole.close()
        assert self.items.keys() == fresh.keys()
        for rid, rec in fresh.items():
            assert self.items[rid] == rec, rid


@pytest.fixture
def lg_pg(pg_db):  # noqa: F811
    with postgres_store(pg_db) as store:
        run_ops(store, FILL)
        src = LangGraphPostgres(pg_db)
        try:
            yield pg_db, store, src
        finally:
            src.close()


def test_puts_updates_and_deletes_arrive_as_deltas_equal_to_a_whole_read(lg_pg):
    dsn, store, src = lg_pg
    shown = Shown(src)
    assert src.model == LOCAL_MODEL
    assert shown.follow() == set()  # nothing written: nothing read
    run_ops(store, [put(("memories", "alice"), "a1", "Alice fact 1, corrected"), put(("memories", "carol"), "c0", "Carol")])
    assert shown.follow() == {"a1@memories.alice", "c0@memories.carol"}
    shown.assert_whole_read(dsn)
    run_ops(store, [{"op": "delete", "ns": ["memories", "bob"], "key": "b2"}, put(("memories", "bob"), "b9", "Bob again")])
    assert shown.follow() == {"b9@memories.bob"}
    assert "b2@memories.bob" not in shown.items
    shown.assert_whole_read(dsn)
    run_ops(store, [{"op": "delete", "ns": ["memories", "carol"], "key": "c0"}])  # carol's only item
    assert shown.follow() == set()
    shown.assert_whole_read(dsn)
    # a put the agent's own get refreshes the TTL of: expires_at moves, updated_at does not
    run_ops(store, [put(("memories", "bob"), "b1", "Bob fact 1 about trains", ttl=30)])
    shown.follow()
    before = shown.items["b1@memories.bob"]["attributes"]
    time.sleep(0.05)
    store.get(("memories", "bob"), "b1", refresh_ttl=True)
    assert shown.follow() == {"b1@memories.bob"}
    assert shown.items["b1@memories.bob"]["attributes"] != before
    shown.assert_whole_read(dsn)


def test_a_transaction_stamped_earlier_but_committed_later_is_not_missed(lg_pg):
    """Two agents' connections: A stamps its put (updated_at = its transaction's start) and holds it
    open, B starts later, puts and commits first. memviz looks between the commits and again
    after A's: A's item, stamped before B's, arrives."""
    import psycopg
    from langgraph.store.postgres import PostgresStore
    from psycopg.rows import dict_row
    dsn, _store, src = lg_pg
    shown = Shown(src)
    conns = [psycopg.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row) for _ in range(2)]
    try:
        a, b = (PostgresStore(c, index=index_config()) for c in conns)
        with conns[0].transaction():
            a.put(("memories", "alice"), "a0", {"content": "Alice, written by A"})
            a.put(("memories", "dora"), "d0", {"content": "Dora, new, by A"})
            time.sleep(0.02)
            with conns[1].transaction():
                b.put(("memories", "bob"), "b0", {"content": "Bob, written by B"})
            assert shown.follow() == {"b0@memories.bob"}
            shown.assert_whole_read(dsn)
        stamps = {r["key"]: r["updated_at"] for r in conns[0].execute("SELECT key, updated_at FROM store WHERE key IN ('a0', 'b0')")}
        assert stamps["a0"] < stamps["b0"]  # A's stamp is the older one, its commit the later
        assert shown.follow() == {"a0@memories.alice", "d0@memories.dora"}
        shown.assert_whole_read(dsn)
        assert shown.follow() == set()  # B's row, seen between the commits, is not read again
    finally:
        for c in conns:
            c.close()


def test_an_expiry_and_the_sweep_arrive_as_changes(lg_pg):
    """An item whose TTL runs out after memviz read it comes back retired; LangGraph's sweep
    then deletes it, and the count tells memviz it is gone."""
    dsn, store, src = lg_pg
    run_ops(store, [put(("notes",), "soon", "short-lived", ttl=0.1)])  # 6 s
    shown = Shown(src)
    assert shown.items["soon@notes"]["valid_until"] is None
    expires = dt.datetime.fromisoformat(shown.items["soon@notes"]["attributes"]["langgraph"]["expires_at"])
    time.sleep(max(0.0, expires.timestamp() - time.time()) + 0.5)
    assert shown.follow() == {"soon@notes"}
    assert shown.items["soon@notes"]["valid_until"] is not None
    shown.assert_whole_read(dsn)
    assert store.sweep_ttl() == 1
    assert shown.follow() == set() and "soon@notes" not in shown.items
    shown.assert_whole_read(dsn)


def test_a_namespace_that_moves_the_others_roles_asks_for_a_whole_read(lg_pg):
    dsn, store, src = lg_pg
    shown = Shown(src)
    # more first segments than users now: the users become the kinds of every two-part namespace
    run_ops(store, [put((f"t{i}", who), "x", "flip") for i, who in enumerate(["alice", "alice", "bob"])])
    assert src.changed_since(shown.token, shown.items.keys()) is None


def test_a_delta_the_mirror_did_not_take_comes_again(lg_pg):
    """The mirror asks again with the same token when it could not write the last delta."""
    _dsn, store, src = lg_pg
    shown = Shown(src)
    run_ops(store, [put(("memories", "alice"), "a3", "Alice fact 3, corrected")])
    first, _ = src.changed_since(shown.token, shown.items.keys())
    again, _ = src.changed_since(shown.token, shown.items.keys())
    assert [r["id"] for r in first] == [r["id"] for r in again] == ["a3@memories.alice"]


def test_after_a_reopen_the_agent_writes_arrive_as_a_delta(lg_pg):
    """A reopened mirror tells the source where it stands (in_step): the next put is read as a
    delta (not the whole store), its vector named as the whole read named the others."""
    import memviz.frameworks.langgraph as lg
    dsn, store, _src = lg_pg
    fw.open_source(dsn).close()
    named = []  # identify_model's calls, counted around the real one: the reopen takes the mirror's model
    real = lg.identify_model
    lg.identify_model = lambda *a, **k: named.append(a) or real(*a, **k)
    try:
        s = fw.open_source(dsn)
    finally:
        lg.identify_model = real
    try:
        assert s.source._at is not None and s.source.model == LOCAL_MODEL and not named  # noqa: SLF001 - what in_step noted
        tok = token_now(s)
        calls = []
        records = s.source.records
        s.source.records = lambda *a, **k: calls.append(1) or records(*a, **k)  # counts whole reads, reads as before
        run_ops(store, [put(("memories", "alice"), "a8", "Alice sings in a choir")])
        ch = changes_since(s, tok)
        assert len(ch.added) == 1 and not calls
        assert s.get("a8@memories.alice")["embedding_model"] == LOCAL_MODEL
    finally:
        s.close()
