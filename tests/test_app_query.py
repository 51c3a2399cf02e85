"""The query panel against the real retrieval engine: the ranking shown is the engine's."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from test_app_support import build_store  # noqa: E402

import memviz.store as ms  # noqa: E402
from memviz.retrieval import Engine  # noqa: E402


@pytest.fixture(scope="module")
def store_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("query") / "mem.db"
    build_store(path).close()
    return str(path)


@pytest.fixture
def win(make_window, store_file):
    return make_window(store_file)


@pytest.fixture
def engine(store_file):
    store = ms.open(store_file, read_only=True)
    yield Engine(store)
    store.close()


def shown_ids(win):
    return list(win.query.results.result.ids)


def run(qtbot, win, text):
    win.query.text.setText(text)
    win.query.run_query()
    settled(qtbot, win)


def settled(qtbot, win):
    """Wait until the ranking on screen was made with the panel's current setting."""
    q = win.query
    qtbot.waitUntil(lambda: q.shown_params == q.params() and not q._score_timer.isActive()
                    and not win.workers.running("score") and not win.workers.running("query"), timeout=20000)


def moved(qtbot, win, **weights):
    win.query.set_weights(**weights)
    settled(qtbot, win)


def test_slider_changes_ranking_as_the_engine_says(qtbot, win, engine):
    q = win.query
    q.preset.setCurrentText("dual-memory")
    q.k.setValue(8)
    run(qtbot, win, "peanut allergy recipe")
    engine.set_query("peanut allergy recipe")
    assert shown_ids(win) == list(engine.score(q.params()).ids)

    moved(qtbot, win, alpha=0.0, beta=0.0, gamma=1.0)
    by_importance = shown_ids(win)
    assert by_importance == list(engine.score(q.params()).ids)
    q.end_adjustment()  # the next move is a new adjustment: Δ compares with the ranking by importance

    moved(qtbot, win, alpha=1.0, beta=0.0, gamma=0.0)
    by_relevance = shown_ids(win)
    expected = engine.score(q.params())
    assert by_relevance == list(expected.ids)
    assert by_relevance != by_importance
    np.testing.assert_allclose(q.results.result.score, expected.score)
    # rank change since the ranking before this adjustment
    old = {m: i for i, m in enumerate(by_importance, 1)}
    for i, mid in enumerate(by_relevance, 1):
        d = q.results.delta[i - 1]
        if mid not in old:
            assert d == "in"
        elif old[mid] > i:
            assert d == f"▲{old[mid] - i}"
        elif old[mid] < i:
            assert d == f"▼{i - old[mid]}"
        else:
            assert d == ""


def test_dragging_the_slider_ends_on_the_last_setting(qtbot, win, engine):
    q = win.query
    run(qtbot, win, "dog")
    for pos in range(0, q.alpha.slider.maximum(), 25):  # a drag: many values, faster than the engine
        q.alpha.slider.setValue(pos)
        qtbot.wait(1)
    settled(qtbot, win)
    engine.set_query("dog")
    assert q.params().alpha == pytest.approx(q.alpha.value())
    assert shown_ids(win) == list(engine.score(q.params()).ids)


def test_stacked_bar_components_sum_to_score(qtbot, win):
    run(qtbot, win, "Bob is learning Portuguese")
    res = win.query.results.result
    total = sum(np.asarray(v, float) for v in res.weighted.values())
    np.testing.assert_allclose(total, res.score, rtol=1e-5, atol=1e-6)
    assert win.query.results.components  # the delegate has something to draw
    win.query.view.viewport().grab()


def test_query_by_selected_memory_and_map_marker(qtbot, win, engine):
    win.state.select_ids(["ep08"])
    win.query.like_button.click()
    settled(qtbot, win)
    engine.set_query(like="ep08")
    assert shown_ids(win) == list(engine.score(win.query.params()).ids)
    res = win.query.results.result
    qtbot.waitUntil(lambda: not win.map._result_timer.isActive(), timeout=20000)
    tx, _ = win.map.topk.get_data()
    assert len(tx) == int(win.state.data.arrays.has_embedding[np.asarray(res.rows)].sum())
    mx, my = win.map.marker.get_data()
    assert len(mx) == 1 and np.isfinite(mx[0]) and np.isfinite(my[0])
    win.map.color_by.setCurrentText("score")
    assert len(win.map.points) == len(win.map.rows)


def test_time_filter_reaches_the_query(qtbot, win, engine):
    run(qtbot, win, "Alice")
    a = win.state.data.arrays
    lo, hi = float(np.min(a.event_time)), float(np.median(a.event_time))
    win.state.set_time_range((lo, hi))
    settled(qtbot, win)
    assert win.query.params().time_range == (lo, hi)
    engine.set_query("Alice")
    assert shown_ids(win) == list(engine.score(win.query.params()).ids)


def test_export_results(qtbot, win, tmp_path):
    run(qtbot, win, "travel")
    n = win.exporter.export("results", str(tmp_path / "r.json"))
    recs = json.loads((tmp_path / "r.json").read_text())
    assert n == len(recs) == len(win.query.results.result.ids)
    assert [r["id"] for r in recs] == shown_ids(win)
    assert {"rank", "score", "relevance_weighted", "content"} <= set(recs[0])


def test_presets_load_their_defaults(qtbot, win):
    from memviz.retrieval import PRESETS, preset_params
    for name in PRESETS:
        win.query.preset.setCurrentText(name)
        p, d = win.query.params(), preset_params(name)
        assert (p.alpha, p.beta, p.gamma, p.k) == pytest.approx((d.alpha, d.beta, d.gamma, d.k), abs=0.01)
        assert dataclasses.replace(p, time_range=None, as_of=None, agents=None, kinds=None).preset == name


def test_params_live_in_the_state_and_the_panel_follows_both_ways(qtbot, win, engine):
    q = win.query
    run(qtbot, win, "peanut allergy recipe")
    q.k.setValue(5)  # a widget edit is written to the state
    assert win.state.params.k == 5 and q.params() == win.state.params
    # a change made elsewhere (reflection, a script): the widgets show it and the ranking follows
    agent = win.state.data.agents[0]
    win.state.set_params(win.state.params.replace(preset="ada", alpha=0.0, beta=0.0, gamma=1.0, k=4,
                                                  agents=(agent,)))
    assert (q.preset.currentText(), q.alpha.value(), q.gamma.value(), q.k.value(), q.agent.currentText()) == \
        ("ada", 0.0, 1.0, 4, agent)
    assert win.state.params.k == 4  # showing it did not write the widgets' rounding back
    settled(qtbot, win)
    engine.set_query("peanut allergy recipe")
    assert q.shown_params == win.state.params
    assert shown_ids(win) == list(engine.score(win.state.params).ids)
    a = win.state.data.arrays
    assert 0 < len(shown_ids(win)) <= 4 and {a.agent[a.index_of(i)] for i in shown_ids(win)} == {agent}
def test_generative_agents_says_it_ranks_each_persona_on_its_own(qtbot, win):
    q = win.query
    assert len(win.state.data.agents) > 1
    q.preset.setCurrentText("generative-agents")
    run(qtbot, win, "bicycle")
    assert "personas: each is ranked on its own" in q.legend.text()
    q.agent.setCurrentIndex(1)  # one persona: nothing to say
    settled(qtbot, win)
    assert "personas" not in q.legend.text()


def test_a_slider_moved_after_an_edit_ranks_the_query_on_screen(qtbot, make_window, tmp_path, store_file):
    """An edit reruns the query by merging the touched rows into the last ranking; the slider
    moved next re-ranks that same query (it failed with "this preset ranks by relevance and
    needs a query": the merge left the engine made for the new rows without the query)."""
    import shutil
    path = tmp_path / "edited.db"
    shutil.copyfile(store_file, path)
    win = make_window(path)
    q = win.query
    run(qtbot, win, "peanut allergy recipe")
    outside = next(str(m) for m in win.state.data.arrays.ids if str(m) not in set(shown_ids(win)))
    win.edits.run("delete", [outside])
    a = lambda: win.state.data.arrays  # noqa: E731 - the refresh replaces the arrays
    qtbot.waitUntil(lambda: not np.isnan(a().valid_until[a().index_of(outside)]), timeout=20000)
    settled(qtbot, win)
    q.set_weights(alpha=1.0, beta=0.0, gamma=0.0)
    qtbot.waitUntil(lambda: bool(q.message.text()) or (q.shown_params == q.params() and not q._score_timer.isActive()
                                                 and not win.workers.running("score")), timeout=20000)
    assert q.message.text() == ""
    store = ms.open(str(path), read_only=True)
    engine = Engine(store)
    engine.set_query("peanut allergy recipe")
    assert shown_ids(win) == list(engine.score(q.params()).ids)
    store.close()


def test_arrow_keys_through_the_results_select_each_in_every_panel(qtbot, win):
    """Down/Up in the results moves the window's selection as a click does (the detail showed
    the clicked memory while the highlight moved on), and a selection made elsewhere is kept
    whole when the results show its current memory."""
    from PySide6.QtCore import Qt

    q = win.query
    run(qtbot, win, "peanut allergy recipe")
    v = q.view
    v.setFocus()
    v.setCurrentIndex(q.results.index(0, q.results.column_of("content")))
    assert win.state.selected_ids == [shown_ids(win)[0]]
    qtbot.keyClick(v, Qt.Key_Down)
    qtbot.keyClick(v, Qt.Key_Down)
    assert v.currentIndex().row() == 2
    assert win.state.selected_ids == [shown_ids(win)[2]]
    assert win.state.data.arrays.ids[win.state.current] == shown_ids(win)[2]
    # a selection of several, made in another panel: the results highlight its current one, and it stays whole
    several = [shown_ids(win)[4], shown_ids(win)[0]]
    win.state.select_ids(several)
    assert v.currentIndex().row() == 4
    assert sorted(win.state.selected_ids) == sorted(several)


def test_a_query_the_store_cannot_embed_says_so_once_and_what_to_do_in_the_window(qtbot, make_window, tmp_path):
    """Vectors of a model memviz cannot run: the message says why once (it read "The query could
    not be embedded: cannot embed the query: …") and names the window's own way, Query by selected."""
    rng = np.random.default_rng(3)
    path = tmp_path / "foreign.db"
    with ms.create(str(path)) as s:
        s.insert_memories([{"kind": "fact", "content": f"note {i}", "embedding": rng.normal(size=8).astype(np.float32),
                            "embedding_model": "someone/else-8"} for i in range(5)])
    win = make_window(path)
    q = win.query
    q.text.setText("anything")
    q.run_query()
    qtbot.waitUntil(lambda: bool(q.message.text()), timeout=20000)
    text = q.message.text()
    assert text.startswith("Cannot embed the query: ") and "could not be embedded" not in text, text
    assert "Query by selected" in text, text
