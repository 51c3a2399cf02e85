"""The window beside a busy agent: a second process writes while the window is open.

Every refresh reads only what changed and applies it in place (no full re-read for inserts,
recalls and soft-deletes); the user's view stays where they left it; the query runs again on
the new data; a UMAP started before the writes finishes during them; a VACUUM is a full
re-read that keeps the view. Another store opened afresh starts with its own empty state.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import assert_same_arrays  # noqa: E402
from PySide6.QtWidgets import QAbstractItemView  # noqa: E402

import memviz.store as ms  # noqa: E402
from memviz.retrieval import Engine  # noqa: E402
from memviz.session.state import load_store_data  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WRITER = os.path.join(HERE, "agent_writer.py")
MODEL, DIM = "live-test-model", 32
KINDS = ("episode", "fact", "reflection")


def make_store(path, n=300, seed=0):
    """n memories with clustered random vectors, three kinds, reflections citing facts."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(6, DIM))
    vecs = centres[rng.integers(0, 6, n)] + 0.3 * rng.normal(size=(n, DIM))
    vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
    recs = []
    for i in range(n):
        kind = KINDS[i % 3]
        recs.append({"id": f"m{i:04d}", "kind": kind, "agent": "agent", "content": f"{kind} number {i} about river {i % 7}",
                     "importance": 1 + i % 9, "event_time": 1_700_000_000 + i * 600, "embedding": vecs[i],
                     "embedding_model": MODEL, "source_ids": [f"m{i - 1:04d}"] if kind == "reflection" else []})
    store = ms.create(str(path))
    store.insert_memories(recs, audit=False)
    store.close()
    return str(path)


def agent(path, *args):
    return subprocess.Popen([sys.executable, WRITER, "agent", path, "--dim", str(DIM), "--model", MODEL, *args],
                            stdout=subprocess.PIPE, text=True)


def sql(path, *statements):
    """Run SQL statements in another process, through memviz's connection (sqlite-vec loaded)."""
    script = ("import sys; sys.path.insert(0, sys.argv[1]); from memviz.store.connection import connect; "
              "c = connect(sys.argv[2]); [c.execute(s) for s in sys.argv[3:]]")
    subprocess.run([sys.executable, "-c", script, os.path.dirname(HERE), path, *statements], check=True)


def finished(qtbot, proc, timeout=60000) -> dict:
    qtbot.waitUntil(lambda: proc.poll() is not None, timeout=timeout)
    assert proc.returncode == 0
    return json.loads(proc.stdout.read())


def caught_up(qtbot, win, path, timeout=30000):
    """Wait until the window shows what the store holds (same rows, same values) and the panels
    have drawn it (their live redraws run in the next event-loop turn)."""
    fresh = ms.open(path, read_only=True)
    try:
        want = load_store_data(fresh).arrays
        qtbot.waitUntil(lambda: win.state.data.n == len(want) and not win.workers.running("refresh")
                        and np.array_equal(win.state.data.arrays.access_count, want.access_count)
                        and np.array_equal(win.state.data.arrays.valid_until, want.valid_until, equal_nan=True),
                        timeout=timeout)
        qtbot.waitUntil(lambda: not any(p._live.isActive() for p in (win.table, win.timeline, win.map)), timeout=20000)
        return want
    finally:
        fresh.close()


def view_of(win):
    """Every part of the view the user set, as plain values."""
    t = win.table
    return {"map": win.map.vb.viewRange(), "timeline": win.timeline.vb.viewRange(), "graph": win.graph.vb.viewRange(),
            "kind": t.kind.currentText(), "search": t.search.text(), "sort": t._sort, "top": t._top_id(),
            "focus": win.graph.focus.isChecked(), "query": win.query.text.text()}


def set_view(qtbot, win):
    win.map.vb.setRange(xRange=(0.0, 0.5), yRange=(0.0, 0.5), padding=0)
    (lo, hi), _ = win.timeline.vb.viewRange()
    win.timeline.vb.setXRange(lo + (hi - lo) * 0.3, lo + (hi - lo) * 0.5, padding=0)
    win.graph.vb.setRange(xRange=(0.1, 0.3), yRange=(0.0, 1.0), padding=0)
    win.table.kind.setCurrentText("fact")
    win.table.search.setText("river")
    win.table.refilter()
    win.table._header_clicked(2)  # sort by importance
    win.table.view.scrollTo(win.table.model.index(20, 0), QAbstractItemView.PositionAtTop)
    win.graph.focus.setChecked(False)
    win.state.select_ids(["m0010"])


@pytest.fixture
def live(make_window, tmp_path):
    path = make_store(tmp_path / "live.db")
    win = make_window(path, graph=True)
    return win, path


def run_query(qtbot, win, like="m0005"):
    """Query by a memory's own embedding (the test model cannot embed text)."""
    win.state.select_ids([like])
    with qtbot.waitSignal(win.query.ranked, timeout=20000):
        win.query.query_selected()


def test_agent_inserts_recalls_and_soft_deletes_are_deltas_and_the_view_stays(qtbot, live):
    win, path = live
    run_query(qtbot, win)
    set_view(qtbot, win)
    before, n0 = view_of(win), win.state.data.n
    key = win.query.query_key
    assert before["top"] is not None

    proc = agent(path, "--rate", "20", "--seconds", "2", "--retire-every", "5")
    out = finished(qtbot, proc)
    want = caught_up(qtbot, win, path)
    qtbot.waitUntil(lambda: not win.workers.running("query") and not win.map.placing, timeout=20000)

    assert out["inserted"] and out["touches"] and out["retired"]
    assert win.live.refreshes["full"] == 0 and win.live.refreshes["delta"] >= 1  # never a whole re-read
    assert_same_arrays(win.state.data.arrays, want)  # what the deltas built is what the store holds
    a = win.state.data.arrays
    assert all(not a.live[a.index_of(m)] for m in out["retired"])
    assert view_of(win) == before  # every part of the view the user set
    assert win.state.selected_ids == ["m0010"]
    # the map placed the new points by their neighbours (and says so), in the same view
    assert np.isfinite(win.map.coords[n0:, 0]).all() and win.map.placed == len(out["inserted"])
    assert "placed by neighbours" in win.map.method_label.text()
    # the query ran again on the new data: same key, the ranking a fresh engine gives now
    q = win.query
    assert q.query_key == key and q.results.result is not None
    eng = Engine(win.state.data.store, win.state.data.arrays)
    eng.set_query(like=key[1])
    assert list(q.results.result.ids) == list(eng.score(q.params()).ids)
    assert all(d != "★ new" or m.startswith("agent-") for d, m in zip(q.results.delta, q.results.result.ids))
    # "+N new" in the status bar selects what the agent wrote
    assert win.new_button.isVisible() and win.new_button.text() == f"+{len(out['inserted'])} new"
    win.new_button.click()
    assert sorted(win.state.selected_ids) == sorted(m for m, _ in out["inserted"])
    assert not win.new_button.isVisible()


def test_the_poll_is_asked_off_the_gui_thread_and_steady_writes_are_refreshed_in_spaced_batches(qtbot, live):
    """The poll's question (for a framework store, a read of its source) runs on the live lane;
    under steady writes one refresh per REFRESH_GAP_S reads them all, none is lost."""
    from memviz.app.controllers.live_controller import POLL_JOB, READ_JOB, REFRESH_GAP_S
    win, path = live
    win.live.poll_timer.stop()  # (its own tick could be asking already)
    qtbot.waitUntil(lambda: not any(win.workers.running(j) for j in (POLL_JOB, READ_JOB, "reload", "open")), timeout=20000)
    win.live.poll()
    assert win.workers.running(POLL_JOB)
    win.live.poll_timer.start()
    asked = []
    win.workers.activity.connect(lambda name, *_: name == READ_JOB and asked.append(time.monotonic()))
    proc = agent(path, "--rate", "20", "--seconds", "3")
    out = finished(qtbot, proc)
    want = caught_up(qtbot, win, path)
    assert_same_arrays(win.state.data.arrays, want)
    assert len(out["inserted"]) > 30 and win.live.refreshes["full"] == 0
    # spaced: never two reads within REFRESH_GAP_S, so many writes share a read (the agent's
    # "3 seconds" last longer on a loaded machine: the count is bounded by the writes, not the clock)
    assert min(np.diff(asked)) >= REFRESH_GAP_S - 0.01
    assert 2 <= len(asked) <= len(out["inserted"]) / 5


def test_a_vacuum_is_read_whole_and_the_view_stays(qtbot, live):
    win, path = live
    set_view(qtbot, win)
    before = view_of(win)
    sql(path, "UPDATE memories SET importance = 3 WHERE id = 'm0001'", "VACUUM")
    qtbot.waitUntil(lambda: win.live.refreshes["full"] == 1, timeout=20000)
    caught_up(qtbot, win, path)
    assert win.live.refreshes["delta"] == 0
    assert win.state.data.arrays.importance[win.state.data.arrays.index_of("m0001")] == 3
    assert view_of(win) == before
    assert win.state.selected_ids == ["m0010"]


def test_own_edits_keep_the_query_and_the_view(qtbot, live):
    win, path = live
    run_query(qtbot, win)
    set_view(qtbot, win)
    before = view_of(win)
    victim = win.query.results.result.ids[0]
    with qtbot.waitSignal(win.query.ranked, timeout=20000):
        win.edits.run("delete", [victim])
    assert win.query.results.result is not None and victim not in win.query.results.result.ids
    assert win.query.results.exits and win.query.results.exits[0][0] == victim  # the exit is shown
    assert "left the results" in win.query.legend.text()
    assert win.live.refreshes["full"] == 0
    after = view_of(win)
    assert {k: v for k, v in after.items() if k != "top"} == {k: v for k, v in before.items() if k != "top"}


def test_a_umap_started_before_the_writes_finishes_during_them(qtbot, live, tmp_path):
    win, path = live
    stop = tmp_path / "stop"
    win.map.start_umap()
    proc = agent(path, "--rate", "4", "--seconds", "240", "--stop-file", str(stop))
    try:
        qtbot.waitUntil(lambda: win.live.refreshes["delta"] >= 2, timeout=60000)
        qtbot.waitUntil(lambda: win.map.method.startswith("UMAP"), timeout=200000)
        assert proc.poll() is None  # the agent was still writing when the layout arrived
    finally:
        stop.write_text("")
        finished(qtbot, proc)
    caught_up(qtbot, win, path)
    qtbot.waitUntil(lambda: not win.map.placing, timeout=20000)
    a = win.state.data.arrays
    assert np.isfinite(win.map.coords[a.has_embedding, 0]).all()
    assert win.map.placed > 0


def test_the_query_follows_the_shared_selection_and_the_baseline_can_be_pinned(qtbot, live):
    win, _ = live
    q = win.query
    run_query(qtbot, win)
    ids = list(q.results.result.ids)
    win.state.select_ids([ids[2]])
    assert [i.row() for i in q.view.selectionModel().selectedRows()] == [2]
    win.state.select_ids(["m0299"] if "m0299" not in ids else ["m0298"])  # not among the results
    assert q.view.selectionModel().selectedRows() == []
    q.pin_baseline(True)
    with qtbot.waitSignal(q.ranked, timeout=20000):
        q.set_weights(alpha=0.0, beta=0.0, gamma=1.0)
    q.end_adjustment()
    with qtbot.waitSignal(q.ranked, timeout=20000):
        q.set_weights(alpha=0.2, beta=0.0, gamma=1.0)
    pinned = {m: r for r, m in enumerate(ids, 1)}
    for i, (m, d) in enumerate(zip(q.results.result.ids, q.results.delta), 1):  # still against the pinned ranking
        assert d == ("in" if m not in pinned else "" if pinned[m] == i else
                     f"▲{pinned[m] - i}" if pinned[m] > i else f"▼{i - pinned[m]}")
    assert "pinned" in q.legend.text()


def test_another_store_starts_with_its_own_state(qtbot, make_window, tmp_path):
    a = make_store(tmp_path / "a.db")
    b = make_store(tmp_path / "b.db", n=120, seed=3)
    win = make_window(a)
    run_query(qtbot, win)
    win.table.search.setText("number 1")
    win.table.refilter()
    win.table.kind.setCurrentText("fact")
    win.map.vb.setRange(xRange=(0.0, 0.01), yRange=(0.0, 0.01), padding=0)
    with qtbot.waitSignal(win.opened, timeout=20000):
        win.open_path(b)
    assert win.table.search.text() == "" and win.table.kind.currentText() == "all"
    assert win.table.count.text() == "120 of 120"
    assert win.query.text.placeholderText().startswith("Query text") and win.query.legend.text() == "" and win.query.results.result is None
    (x0, x1), _ = win.map.vb.viewRange()
    assert x1 - x0 > 0.05  # fitted to the new store's map, not the old zoom
    assert win.table.view.horizontalHeader().sectionSize(4) > 0  # per-user: column widths stay


def test_detail_scroll_and_follow_newest(qtbot, make_window, tmp_path, monkeypatch):
    import memviz.app.plots.scatter_panel as scatter

    monkeypatch.setattr(scatter, "FLASH_MS", 600000)  # the rings stay until the test has looked
    path = make_store(tmp_path / "long.db", n=60)
    s = ms.open(path)
    s.update_fields("m0010", {"content": "\n".join(f"line {i} of a long memory" for i in range(400))})
    s.close()
    win = make_window(path)
    win.state.select_ids(["m0010"])
    bar = win.detail.content.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 50, timeout=20000)
    bar.setValue(bar.maximum() // 2)
    kept = bar.value()
    win.timeline.follow.setChecked(True)
    (lo, hi), _ = win.timeline.vb.viewRange()
    win.timeline.vb.setXRange(lo, lo + (hi - lo) / 4, padding=0)  # zoomed into the oldest quarter
    width = (hi - lo) / 4
    # the agent recalls the memory on screen and writes a new one (event time: now, far right)
    sql(path, "UPDATE memories SET access_count = 9 WHERE id = 'm0010'",
        "INSERT INTO memories(id, kind, content, event_time, created_at) VALUES ('late', 'episode', 'x', 1800000000, "
        "1800000000)")
    caught_up(qtbot, win, path)
    assert bar.value() == kept  # the detail panel was filled again (access count 9) at the same place
    assert any(win.detail.fields.topLevelItem(i).text(1) == "9" for i in range(win.detail.fields.topLevelItemCount()))
    (lo2, hi2), _ = win.timeline.vb.viewRange()
    assert lo2 <= 1_800_000_000 <= hi2 and abs((hi2 - lo2) - width) < width * 1e-6  # slid, same zoom
    assert list(win.timeline.fresh.get_data()[0]) == [1_800_000_000]  # the new memory is ringed a moment


@pytest.mark.parametrize("column,descending", [(2, False), (3, True), (4, False)])
def test_new_rows_enter_the_sorted_table_where_a_full_sort_puts_them(qtbot, live, monkeypatch, column, descending):
    """Inserts and recalls (nothing a filter or the sort reads changed) go into the table's order
    by a binary search, not a sort of every row; the order is the one a full refilter makes."""
    win, path = live
    t = win.table
    t._header_clicked(column)  # importance / event time / content
    if descending:
        t._header_clicked(column)
    t.search.setText("observation")  # the agent's rows, found in the search they arrive in
    # the search applies after a pause in typing (and in a worker on a large table)
    qtbot.waitUntil(lambda: not t._refilter_timer.isActive() and not win.workers.running("table"), timeout=20000)
    t.view.scrollTo(t.model.index(0, 0), QAbstractItemView.PositionAtTop)
    full = []
    real = t.refilter
    monkeypatch.setattr(t, "refilter", lambda *a, **k: (full.append(1), real(*a, **k)))
    proc = agent(path, "--rate", "20", "--seconds", "1.5")
    out = finished(qtbot, proc)
    caught_up(qtbot, win, path)
    assert full == []
    assert win.live.refreshes["delta"] >= 1
    live_order = t.model.order.copy()
    assert len(live_order) == len(out["inserted"])
    real()
    np.testing.assert_array_equal(live_order, t.model.order)


def test_a_refresh_leaves_the_tables_new_rows_to_an_event_loop_turn_of_their_own(qtbot, live):
    """The window's work for one refresh is spread over event-loop turns (input and paints come
    between): when rows_changed has run, the table has not put the new rows in its order yet; a
    later turn does, and then it holds every row."""
    win, path = live
    t = win.table
    at_refresh = []  # (rows added, rows in the table's order, rows in the store) as each refresh ends
    win.state.rows_changed.connect(lambda d: at_refresh.append((len(d.added), len(t.model.order), win.state.data.n)))
    out = finished(qtbot, agent(path, "--rate", "20", "--seconds", "1"))
    caught_up(qtbot, win, path)
    assert sum(added for added, _, _ in at_refresh) == len(out["inserted"]) > 0
    assert all(shown < n for added, shown, n in at_refresh if added)
    assert len(t.model.order) == win.state.data.n == 300 + len(out["inserted"])


def test_the_table_count_follows_new_rows_that_no_filter_lets_through(qtbot, live):
    """'N of M': M is every memory now, even when none of the agent's new rows passes the search."""
    win, path = live
    win.table.search.setText("m001")  # ids m0010..m0019 only: the agent's ids start "agent-"
    win.table.refilter()
    assert win.table.count.text() == "10 of 300"
    out = finished(qtbot, agent(path, "--rate", "20", "--seconds", "1"))
    caught_up(qtbot, win, path)
    assert out["inserted"] and win.live.refreshes["full"] == 0
    assert win.table.count.text() == f"10 of {300 + len(out['inserted']):,}"


def test_a_store_read_whole_is_kept_out_of_the_collector_s_walks_and_the_last_one_s_cycles_go(qtbot, make_window, tmp_path):
    """A full collection walks every tracked object (at 1M memories it held the GIL 94 ms while
    the GUI thread waited): the open's objects are frozen once read, and a store opened after
    it frees what the first left in cycles."""
    import gc
    import weakref

    a = make_store(tmp_path / "a.db")
    b = make_store(tmp_path / "b.db", n=120, seed=3)
    win = make_window(a)
    data = win.state.data
    assert gc.is_tracked(data) and not any(o is data for o in gc.get_objects())  # in no generation: frozen
    walked = len(gc.get_objects())

    class Node:
        pass
    cycle = Node()
    cycle.me = cycle
    gone = weakref.ref(cycle)
    del cycle, data
    assert len(gc.get_objects()) < walked + 1000  # later collections walk what was made since, not the store
    with qtbot.waitSignal(win.opened, timeout=20000):
        win.open_path(b)
    assert gone() is None and not any(o is win.state.data for o in gc.get_objects())
