"""Every panel follows the window's "as of" moment: the detail panel's Sources & derived tab, the
table's search and count, the status bar's totals and the query panel's ranking show the store
as it was, scrubbed to with the as-of bar as a user would."""
import time

import numpy as np
import pytest

import memviz.store as ms
from memviz.edits import Correct, History

pytestmark = pytest.mark.qt

START = 1_700_000_000.0
T = START + 500  # m1, m2 existed; the reflection, the rewrite of m2 and the correction of m1 came later


@pytest.fixture
def path(tmp_path, monkeypatch):
    """m1, m2 at START; reflection r1 over both at +1000; m2's text rewritten in place at +2000
    (an agent's audited update); m1 corrected (a new version) at +3000."""
    p = tmp_path / "grown.db"
    store = ms.create(str(p))
    now = [START]
    with monkeypatch.context() as m:
        m.setattr(time, "time", lambda: now[0])
        base = {"agent": "helper", "importance": 5}
        store.insert_memories([{**base, "kind": "fact", "id": "m1", "content": "Alice drinks green tea"},
                               {**base, "kind": "fact", "id": "m2", "content": "Bob owns a dog called Rex"}])
        now[0] = START + 1000
        store.insert_memories([{**base, "kind": "reflection", "id": "r1", "content": "Alice and Bob are neighbours",
                                "source_ids": ["m1", "m2"]}])
        now[0] = START + 2000
        store.update_fields("m2", {"content": "Bob owns a cat called Tom"}, actor="agent")
        now[0] = START + 3000
        History(store).perform(Correct("m1", "Alice drinks black coffee now"))
    store.close()
    return p


def related(win) -> dict[str, list[str]]:
    """The Sources & derived tab: group title (without its count) -> the ids listed under it."""
    out = {}
    tree = win.detail.related
    for i in range(tree.topLevelItemCount()):
        top = tree.topLevelItem(i)
        out[top.text(0).rsplit(" (", 1)[0]] = [top.child(j).text(0) for j in range(top.childCount())
                                               if top.child(j).text(0)]
    return out


def notes(win) -> list[str]:
    tree = win.detail.related
    return [tree.topLevelItem(i).child(j).text(2) for i in range(tree.topLevelItemCount())
            for j in range(tree.topLevelItem(i).childCount()) if not tree.topLevelItem(i).child(j).text(0)]


def scrub_to(win, qtbot, moment):
    bar = win.as_of_bar
    bar.slider.setValue(bar.position_of(moment))  # the scrubber, as a user drags it
    qtbot.waitUntil(lambda: win.state.as_of is not None and abs(win.state.as_of - moment) < 20, timeout=20000)


def test_sources_and_derived_as_of_the_moment(make_window, path, qtbot):
    win = make_window(path)
    win.state.select_ids(["m1"])
    now = related(win)
    assert now["Derived into"] == ["r1"]
    assert len(now["Supersede chain (oldest first)"]) == 2  # m1 and its correction
    scrub_to(win, qtbot, T)
    win.detail.tabs.setCurrentIndex(1)
    then = related(win)
    assert then["Derived into"] == [] and then["Supersede chain (oldest first)"] == [] and then["Derived from"] == []
    from memviz.store import iso
    assert notes(win) == [f"1 memory created after {iso(win.state.as_of)} UTC not shown"] * 2  # r1; m1's new version
    assert "(0)" in win.detail.related.topLevelItem(1).text(0)
    # a moment after the reflection, before the correction: r1 is there, the new version is not
    win.as_of_bar.go_to(START + 1500)
    assert related(win)["Derived into"] == ["r1"] and related(win)["Supersede chain (oldest first)"] == []
    win.state.select_ids(["r1"])
    assert related(win)["Derived from"] == ["m1", "m2"]
    win.as_of_bar.go_to(None)
    win.state.select_ids(["m1"])
    assert related(win) == now and notes(win) == []


def test_table_search_and_count_as_of_the_moment(make_window, path, qtbot):
    win = make_window(path)
    table = win.table
    ids = win.state.data.arrays.ids

    def found(text):
        table.search.setText(text)
        table.refilter()
        return {ids[r] for r in table.shown_rows()}
    assert found("cat") == {"m2"} and found("dog") == set()
    assert found("") and table.count.text() == "4 of 4"
    scrub_to(win, qtbot, T)
    # m2's text then: the dog, not the cat; the count is of the memories that existed then
    assert found("dog") == {"m2"} and found("cat") == set() and found("coffee") == set()
    assert found("") == {"m1", "m2"} and table.count.text() == "2 of 2"
    assert found("Rex") == {"m2"} and table.count.text() == "1 of 2"
    win.as_of_bar.go_to(None)
    assert found("dog") == set() and found("cat") == {"m2"}


def test_status_bar_totals_as_of_the_moment(make_window, path, qtbot):
    win = make_window(path)
    status = win.status_counts
    assert status.text().startswith("4 memories (3 current, 1 retired) · 2 kinds")
    scrub_to(win, qtbot, T)
    assert status.text().startswith("2 memories (2 current, 0 retired) · 1 kind · agent helper")
    assert " · as of 2023-11-14" in status.text()
    c = win.state.shown_counts()
    assert c["by_kind"] == {"fact": [2, 0]} and c["total"] == int(win.state.exists_mask().sum())
    win.as_of_bar.go_to(START + 3500)  # after every write: as now (m1 retired by its correction)
    assert status.text().startswith("4 memories (3 current, 1 retired) · 2 kinds")
    win.as_of_bar.go_to(None)
    assert win.state.shown_counts() is win.state.data.counts


def test_query_ranks_the_store_as_of_the_moment(make_window, path, qtbot):
    """The ranking follows the scrubber at once (no debounce), over the memories there then."""
    win = make_window(path)
    q = win.query
    q.preset.setCurrentText("hybrid")
    q.text.setText("Bob pet")
    with qtbot.waitSignal(q.ranked, timeout=10000):
        q.run_query()
    assert "r1" in q.results.result.ids
    with qtbot.waitSignal(q.ranked, timeout=10000):
        scrub_to(win, qtbot, T)
    result = q.results.result
    assert set(result.ids) <= {"m1", "m2"} and q.shown_params.as_of == win.state.as_of
    assert not q._score_timer.isActive()  # scored at once: nothing left waiting on the debounce
    rows = np.asarray(result.rows)
    assert win.state.exists_mask()[rows].all()
