"""The memory table's sort and search (memviz.session.table_order inside the table model) give
exactly what a stable argsort of the shown rows' keys and a plain substring test give, through
filters, typing on, a live refresh and another store - on the GUI thread and in the worker
large tables use; and with 100k+ rows the search and the sort leave the GUI thread to a worker,
the newest request wins, and the orders made ahead make the first header click instant."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import unit_vectors
from PySide6.QtCore import Qt

import memviz.store as ms
from memviz.app.panels import table_panel
from memviz.app.panels.table_panel import COLUMNS, FLAG, TablePanel
from memviz.app.workers import Workers
from memviz.session.live import refresh
from memviz.session.state import AppState, StoreData, load_store_data
from memviz.store import Provenance
from memviz.store.arrays import MemoryArrays

pytestmark = pytest.mark.qt

WORDS = "coffee Coffee café river bridge the a of rain train Alice".split()


def add_rows(store, n, start=0, seed=0):
    rng = np.random.default_rng(seed)
    V = unit_vectors(n, 8, seed)
    store.insert_memories([dict(
        id=f"m{(start + i) * 7919 % 100003:06d}", kind=("episode", "reflection", "chat")[int(rng.integers(0, 3))],
        agent=("ann", "bo", "Cy", "")[int(rng.integers(0, 4))], content=" ".join(rng.choice(WORDS, int(rng.integers(1, 6)))),
        importance=float(rng.integers(0, 4)), confidence=float(rng.choice([0.5, 1.0])),
        created_at=1000 + int(rng.integers(0, 50)) * 60, valid_until=2000 if i % 9 == 0 else None,
        embedding=V[i], embedding_model="test/8") for i in range(n)], audit=False)


def column_values(data, name):
    """The values a column shows, from the rows themselves (not from the table's own sort keys)."""
    a = data.arrays
    if name == "content":
        return data.previews
    if name == "status":  # retired at valid_until; live rows (no valid_until) after every retired one
        return np.where(np.isnan(a.valid_until), np.inf, a.valid_until)
    if name == FLAG:  # something of the row could not be read as written
        return a.bad_json | a.bad_text | (a.bad_value if a.bad_value is not None else False)
    return {"kind": a.kind, "agent": a.agent, "importance": a.importance, "event time": a.event_time,
            "confidence": a.confidence, "accesses": a.access_count, "protected": a.protected, "id": a.ids}[name]


def expected_order(data, column, descending, shown):
    """The order a user expects: a stable argsort of the shown rows' values in that column."""
    rows = np.flatnonzero(shown)
    order = rows[np.argsort(column_values(data, COLUMNS[column])[rows], kind="stable")]
    return order[::-1] if descending else order


def expected_mask(data, text):
    text = text.strip().lower()
    return np.array([(text in p.lower()) or (text in i) for p, i in zip(data.previews, data.arrays.ids)], bool)


def check(panel, state, qtbot=None):
    if panel.workers is not None:   # typing's pause, the worker's answer and any live redraw: all delivered
        qtbot.waitUntil(lambda: not (panel._refilter_timer.isActive() or panel.workers.running("table")
                                     or panel._live.isActive()), timeout=20000)
    a = state.data.arrays  # no time filter or past view here: all rows, or the live ones (no valid_until)
    shown = np.ones(len(a), bool) if state.show_retired else np.isnan(a.valid_until)
    if panel.kind.currentIndex() > 0:
        shown &= state.data.arrays.kind == panel.kind.currentText()
    if panel.search.text().strip():
        shown &= expected_mask(state.data, panel.search.text())
    col, direction = panel._sort
    want = expected_order(state.data, col, direction == Qt.DescendingOrder, shown)
    assert np.array_equal(panel.model.order, want), (COLUMNS[col], direction, panel.search.text())


@pytest.mark.parametrize("where", ["gui thread", "worker"])
def test_sort_and_search_match_the_plain_ones(qtbot, tmp_path, monkeypatch, where):
    store = ms.create(str(tmp_path / "t.db"))
    add_rows(store, 1500)
    state = AppState()
    workers = None
    if where == "worker":   # as a large table: every search and sort in a worker, orders made ahead
        monkeypatch.setattr(table_panel, "BACKGROUND_ROWS", 0)
        workers = Workers()
    panel = TablePanel(state, workers)
    qtbot.addWidget(panel)
    state.set_data(load_store_data(store))
    for col in range(len(COLUMNS)):             # every column, ascending then descending
        for _ in range(2):
            panel._header_clicked(col)
            check(panel, state, qtbot)
    panel._header_clicked(COLUMNS.index("content"))
    for text in ("c", "co", "cof", "coffee", "coff", "CAF", "café", "m0", "zzz", ""):   # typing on, back, anew
        panel.search.setText(text)
        panel.refilter()
        check(panel, state, qtbot)
    panel.search.setText("rain")
    panel.kind.setCurrentIndex(1)               # a kind filter on top of the search
    check(panel, state, qtbot)
    state.set_show_retired(False)
    check(panel, state, qtbot)

    # live refreshes: values changed (the same rows), then rows added (ids sort among the old
    # ones); the orders are made again
    for col in (COLUMNS.index("importance"), COLUMNS.index("content"), COLUMNS.index("id")):
        panel._header_clicked(col)          # each column's order is made (and kept) before the change
    with store.transaction() as c:
        c.execute("UPDATE memories SET importance = 9, content = 'rain rain' WHERE rowid % 60 = 0")
    assert refresh(state) == "delta"
    for step in ("changed", "added"):
        if step == "added":
            add_rows(store, 40, start=1500, seed=1)
            assert refresh(state) == "delta"
        for col in (COLUMNS.index("importance"), COLUMNS.index("content"), COLUMNS.index("id")):
            panel._header_clicked(col)
            panel.refilter()
            check(panel, state, qtbot)

    # another store: nothing of the last one is kept
    other = ms.create(str(tmp_path / "u.db"))
    add_rows(other, 700, seed=4)
    state.set_data(load_store_data(other))
    panel.refilter()
    check(panel, state, qtbot)
    store.close()
    other.close()


    if workers is not None:
        workers.shutdown()


class NoStore:  # the table reads no database here (no #tag search)
    path = "mem"


def big_data(n: int) -> StoreData:
    rng = np.random.default_rng(5)
    words = np.array(WORDS, dtype=object)
    texts = np.empty(n, object)
    texts[:] = [" ".join(w) for w in words[rng.integers(0, len(WORDS), (n, 6))].tolist()]
    kinds = np.array(["episode", "fact", "reflection"], dtype=object)[rng.integers(0, 3, n)]
    a = MemoryArrays(ids=np.array([f"m{i:07d}" for i in rng.permutation(n)], dtype=object), rowid=np.arange(1, n + 1),
                     kind=kinds, agent=np.array(["ann", "bo"], dtype=object)[rng.integers(0, 2, n)],
                     importance=rng.integers(1, 11, n).astype(float), event_time=rng.uniform(0, 1e7, n),
                     created_at=np.zeros(n), last_accessed=np.full(n, np.nan),
                     valid_until=np.where(rng.random(n) < 0.05, 1.0, np.nan), confidence=np.ones(n),
                     decay_rate=np.zeros(n), access_count=rng.integers(0, 5, n), protected=np.zeros(n, bool),
                     embedding=np.zeros((n, 2), np.float32), has_embedding=np.zeros(n, bool), embedding_model=None,
                     bad_json=np.zeros(n, bool), bad_text=np.zeros(n, bool), preview=texts)
    return StoreData(store=NoStore(), arrays=a, provenance_=Provenance(), counts={},
                     kinds=["episode", "fact", "reflection"], agents=["ann", "bo"])


def test_a_large_table_searches_and_sorts_in_a_worker(qtbot):
    n = 120_000
    assert n >= table_panel.BACKGROUND_ROWS
    state, workers = AppState(), Workers()
    panel = TablePanel(state, workers)
    qtbot.addWidget(panel)
    state.set_data(big_data(n))
    qtbot.waitUntil(lambda: not workers.running("table") and not workers.running("table ahead"), timeout=60000)
    check(panel, state, qtbot)

    # the orders were made ahead: a header click is answered at once, on the GUI thread
    for name in ("content", "id", "agent", "importance", "status"):
        col = COLUMNS.index(name)
        assert panel.model.order_ready(col, state.data)
        panel._header_clicked(col)
        assert not workers.running("table") and panel.model.preparing is None
        check(panel, state, qtbot)

    # typing: each search is handed to the worker (the GUI thread returns before the answer
    # exists); a newer text cancels the older search, whose answer never reaches the table
    shown = []
    panel.model.layoutChanged.connect(lambda: shown.append(panel.model.order))
    before = panel.model.order
    panel.search.blockSignals(True)   # refilter called here, not after typing's pause
    for text in ("c", "co", "cof", "coffee"):
        panel.search.setText(text)
        panel.refilter()
        assert workers.running("table") and panel.model.order is before
        assert panel.count.text() == "searching…"
    check(panel, state, qtbot)
    panel.search.blockSignals(False)
    assert len(shown) == 1 and shown[0] is panel.model.order   # only the newest answer was shown
    assert panel.model.rowCount() == expected_mask(state.data, "coffee").sum() > 0

    # typed through the search box: the debounce then the worker; the text is never held up
    panel.search.clear()
    check(panel, state, qtbot)
    qtbot.keyClicks(panel.search, "river ali")
    assert panel.search.text() == "river ali"
    qtbot.waitUntil(lambda: panel.model.rowCount() == expected_mask(state.data, "river ali").sum(), timeout=20000)
    check(panel, state, qtbot)

    # a column whose order is not made: the header says so while the worker makes it
    panel.model._orders.clear()
    col = COLUMNS.index("content")
    panel._header_clicked(col)
    assert panel.model.preparing == col and panel.model.headerData(col, Qt.Horizontal) == "content …"
    check(panel, state, qtbot)
    assert panel.model.preparing is None and panel.model.headerData(col, Qt.Horizontal) == "content"
    workers.shutdown()
