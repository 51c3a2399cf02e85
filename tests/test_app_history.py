"""The window's time travel (the as-of bar), the prompt view and the Diff panel, driven as a
user would. The store is built with a patched clock (test_state_as_of.lived_store): m1, m2
first; m3 later; then m2's importance changed and m1 corrected."""
import json
import time

import numpy as np
import pytest
from PySide6.QtCore import QDateTime, QTimeZone
from PySide6.QtGui import QGuiApplication
from test_state_as_of import START, T, lived_store

from memviz.app.panels.asof_bar import STEPS
from memviz.context import TokenCounter, assemble, load_texts

pytestmark = pytest.mark.qt


@pytest.fixture
def lived(tmp_path, monkeypatch):
    store = lived_store(tmp_path / "lived.db", monkeypatch)
    new_id = store.arrays().ids[-1]  # the corrected version of m1
    store.close()
    return tmp_path / "lived.db", new_id


def shown_ids(win, rows):
    a = win.state.data.arrays
    return {a.ids[int(r)] for r in rows}


def test_scrubbing_into_the_past(make_window, lived, qtbot):
    path, new_id = lived
    win = make_window(path)
    bar = win.as_of_bar
    assert win.edits.actions["importance"].isEnabled() or not win.state.selection.size
    win.state.select_ids([new_id])
    assert win.edits.actions["correct"].isEnabled()
    assert "black coffee" in win.detail.content.toPlainText()

    # the scrubber: the slider position of T (its moments are the store's creation span)
    bar.slider.setValue(bar.position_of(T))
    qtbot.waitUntil(lambda: win.state.as_of is not None, timeout=20000)
    T_shown = win.state.as_of
    assert START <= T_shown < START + 1000
    # memories created later are gone from the table and the timeline
    assert shown_ids(win, win.table.shown_rows()) == {"m1", "m2"}
    assert shown_ids(win, win.timeline.rows) == {"m1", "m2"}
    # values as they were: m1 current, m2's importance before the edit
    a = win.state.data.arrays
    m1 = int(np.flatnonzero(win.table.model.order == a.index_of("m1"))[0])
    m2 = int(np.flatnonzero(win.table.model.order == a.index_of("m2"))[0])
    col = win.table.model.index
    assert win.table.model.data(col(m1, 8)) == "current"
    assert win.table.model.data(col(m2, 2)) == "5"
    # the correction made after T: the detail shows the version then, with the old text
    assert "green tea" in win.detail.content.toPlainText()
    assert "black coffee" not in win.detail.content.toPlainText()
    assert win.detail.title.text().startswith("As of ") and "current" in win.detail.title.text()
    # edits are off, with the reason
    act = win.edits.actions["correct"]
    assert not act.isEnabled() and "viewing the past" in act.toolTip()
    assert not win.reflect_action.isEnabled()
    assert "edits off" in bar.info.text() and " · as of 20" in win.status_counts.text()
    # the query follows the window's moment (one control)
    assert win.state.params.as_of == T_shown and win.query.as_of.text().startswith("as of: 20")

    # the date box: a moment after m3 was created
    bar.date.setDateTime(QDateTime.fromSecsSinceEpoch(int(START + 1500), QTimeZone.utc()))
    bar.date.editingFinished.emit()
    assert win.state.as_of == START + 1500
    assert shown_ids(win, win.table.shown_rows()) == {"m1", "m2", "m3"}

    bar.now_button.click()
    assert win.state.as_of is None and bar.slider.value() == STEPS
    assert len(win.table.shown_rows()) == 4
    assert win.edits.actions["correct"].isEnabled()
    assert "black coffee" in win.detail.content.toPlainText()


def test_retired_dock_as_of(make_window, lived, qtbot):
    path, _ = lived
    win = make_window(path)
    win.retired.set_shown(True)
    qtbot.waitUntil(lambda: [m.id for m in win.retired.items] == ["m1"], timeout=10000)  # retired by the correction
    win.as_of_bar.go_to(T)
    qtbot.waitUntil(lambda: win.retired.items == [], timeout=10000)  # before the correction: nothing retired yet
    assert "by the moment shown" in win.retired.count.text()
    assert not win.retired.restore_button.isEnabled()


def test_play_replays_to_now(make_window, lived, qtbot):
    path, _ = lived
    win = make_window(path)
    bar = win.as_of_bar
    bar.speed.setCurrentIndex(0)
    seen = []
    bar.stepped.connect(lambda t, s: seen.append(t))
    bar.play_button.setChecked(True)
    assert win.state.as_of == bar.span[0]
    qtbot.waitUntil(lambda: not bar.play_button.isChecked(), timeout=20000)
    assert win.state.as_of is None
    moments = [t for t in seen if t is not None]
    assert len(moments) > 3 and moments == sorted(moments)


def test_prompt_view_budget_moves_the_cut_and_copy_is_exact(make_window, lived, qtbot, tmp_path):
    path, new_id = lived
    win = make_window(path)
    p = win.prompt
    qtbot.waitUntil(lambda: p.counter is not None, timeout=20000)
    win.docks["table"].raise_()
    p.budget.setValue(5000)
    assert p.plan is None or p.plan.budget != 5000  # hidden, it only remembers to assemble
    win.docks["prompt"].raise_()
    qtbot.waitUntil(lambda: p.plan is not None and p.plan.budget == 5000, timeout=20000)
    p.budget.setValue(128_000)
    exact = TokenCounter().exact
    qtbot.waitUntil(lambda: p.exact_counts() == exact, timeout=30000)
    p.strategy.setCurrentText("important")
    full = p.plan
    assert len(full.rows) == 3  # every current memory fits in 128k
    tokens = full.tokens
    # a budget whose usable part holds the first memory only
    budget = int(np.ceil((int(tokens[0]) + 1) / 0.9))
    p.budget.setValue(budget)
    assert p.plan.cut == 1 and p.model.is_cut(1)
    # what fell out is listed below the cut line, with why (evicted: the store holds more than the budget)
    assert p.plan.below and p.model.rowCount() == 2 + len(p.plan.below)
    assert p.model.data(p.model.index(2, 6)).startswith(p.plan.below[0].reason)
    # the budget slider moves the cut back out
    p.budget_slider.setValue(p.budget_slider.maximum())
    assert p.plan.cut == 3
    p.budget.setValue(budget)
    # copy gives exactly what assemble() makes of the store
    store = win.state.data.store
    arrays = store.arrays()
    content, _ = load_texts(store, arrays)
    expected = assemble(arrays, TokenCounter().count_many(content), now=p.plan.now, strategy="important",
                        budget=budget).text(content)
    p.copy_button.click()
    assert QGuiApplication.clipboard().text() == expected
    qtbot.waitUntil(lambda: p.text.toPlainText() == expected, timeout=20000)
    p.save(str(tmp_path / "ctx.json"))
    saved = json.loads((tmp_path / "ctx.json").read_text())
    assert saved["text"] == expected and saved["budget"] == budget
    # selecting a row selects the memory everywhere
    p.view.clicked.emit(p.model.index(0, 0))
    assert win.state.selected_ids == [arrays.ids[int(p.plan.rows[0])]]
    # as of T: the corrected version and m3 are not candidates; m1 is, with its old text
    win.as_of_bar.go_to(T)
    assert p.plan.candidates == 2
    p.budget_slider.setValue(p.budget_slider.maximum())
    assert "green tea" in p.assembled_text() and "black coffee" not in p.assembled_text()


def test_the_prompt_view_measures_ages_from_the_stores_clock(make_window, lived, qtbot):
    """A store with its own clock (a simulation, the sample): the prompt is assembled as of that
    clock's now, as recency and the importance meter are (it took the wall clock)."""
    import memviz.store as ms
    from memviz.store.clock import record_clock, simulated
    path, _ = lived
    at = START + 30 * 86400
    with ms.open(str(path)) as store:
        record_clock(store, simulated(at))
    win = make_window(path)
    p = win.prompt
    win.docks["prompt"].raise_()
    qtbot.waitUntil(lambda: p.plan is not None, timeout=20000)
    assert p.plan.now == at


def test_diff_panel_lists_known_changes_and_selects_them(make_window, lived, qtbot):
    path, new_id = lived
    win = make_window(path)
    d = win.diff
    win.as_of_bar.go_to(T)
    d.from_the_scrubber()
    with qtbot.waitSignal(d.compared, timeout=20000):
        d.compare()
    kinds = d.diff.counts()
    assert kinds.get("added", 0) >= 1 and kinds.get("corrected") == 1 and kinds.get("importance") == 1
    corrected = next(c for c in d.diff.changes if c.kind == "corrected")
    assert "green tea" in str(corrected.before) and "black coffee" in str(corrected.after)
    # find its line in the tree and choose it
    item = None
    for i in range(d.tree.topLevelItemCount()):
        top = d.tree.topLevelItem(i)
        for j in range(top.childCount()):
            if top.child(j).text(0) == corrected.summary:
                item = top.child(j)
    assert item is not None
    d.tree.setCurrentItem(item)
    assert set(win.state.selected_ids) == set(corrected.ids) and "m1" in corrected.ids
    assert "green tea" in d.before.toPlainText() and "black coffee" in d.after.toPlainText()


def test_diff_panel_shows_how_the_current_query_top_k_moved(make_window, lived, qtbot):
    path, new_id = lived
    win = make_window(path)
    q, d = win.query, win.diff
    q.preset.setCurrentText("hybrid")  # no vectors in this store: full-text ranking
    q.text.setText("Alice coffee")
    with qtbot.waitSignal(q.ranked, timeout=20000):
        q.run_query()
    assert d.query.text() == "Alice coffee"  # the Diff panel follows the current query
    d.t1.setDateTime(QDateTime.fromSecsSinceEpoch(int(T), QTimeZone.utc()))
    with qtbot.waitSignal(d.compared, timeout=20000):
        d.compare()
    ranks = [c for c in d.diff.changes if c.kind == "rank"]
    assert any(c.ids == [new_id] and c.before is None for c in ranks)  # the corrected text entered the top k


def test_diff_panel_reports_a_missing_store_file(make_window, lived, qtbot, tmp_path):
    path, _ = lived
    win = make_window(path)
    d = win.diff
    d.mode.setCurrentIndex(1)
    d.other.setText(str(tmp_path / "nope.db"))
    d.compare()
    qtbot.waitUntil(lambda: d.message.text().startswith("Could not compare"), timeout=10000)
    assert "nope.db" in d.message.text()


def test_play_keeps_to_its_clock_when_frames_are_slow(make_window, lived, qtbot, monkeypatch):
    """A replay lasts the chosen time: a frame the panels take long to draw skips moments
    instead of slowing the replay down. The replay reads the test's clock, on which each frame
    takes the panels 0.25 s: a replay of 1 s shows 4 moments after its first, then now (at a
    fixed step it would show every step, however long they took)."""
    import types

    from memviz.app.panels import asof_bar
    path, _ = lived
    win = make_window(path)
    bar = win.as_of_bar
    clock = types.SimpleNamespace(now=1000.0)
    monkeypatch.setattr(asof_bar, "time", types.SimpleNamespace(monotonic=lambda: clock.now, perf_counter=time.perf_counter,
                                                                time=time.time))
    monkeypatch.setitem(asof_bar.SPEEDS, "in 1 s", 1.0)
    bar.speed.addItem("in 1 s")
    bar.speed.setCurrentText("in 1 s")
    win.state.as_of_changed.connect(lambda _t: setattr(clock, "now", clock.now + 0.25))  # a slow panel
    seen = []
    bar.stepped.connect(lambda t, s: seen.append(t))
    bar.play_button.setChecked(True)
    qtbot.waitUntil(lambda: not bar.play_button.isChecked(), timeout=20000)
    lo, hi = bar.span
    # the first memory, then at least a second on (the first frame), then where 1 s of replay has reached
    assert seen == pytest.approx([lo, lo + 1, lo + (hi - lo) / 4, lo + (hi - lo) / 2, lo + 3 * (hi - lo) / 4, None])
    assert win.state.as_of is None
