"""The memory table's sort and search (memviz.session.table_order inside the table model) give
exactly what a stable argsort of the shown rows' keys and a plain substring test give, through
filters, typing on, a live refresh and another store."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import unit_vectors
from PySide6.QtCore import Qt

import memviz.store as ms
from memviz.app.panels.table_panel import COLUMNS, TablePanel
from memviz.session.refresh import read_refresh
from memviz.session.state import AppState, load_store_data
from memviz.session.table_order import stable_order

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


def expected_order(panel, column, descending, shown):
    """The table's order as it was computed before: a stable argsort of the shown rows' keys."""
    rows = np.flatnonzero(shown)
    order = rows[np.argsort(panel.model.sort_key(column)[rows], kind="stable")]
    return order[::-1] if descending else order


def expected_mask(data, text):
    text = text.strip().lower()
    return np.array([(text in p.lower()) or (text in i) for p, i in zip(data.previews, data.arrays.ids)], bool)


def check(panel, state):
    shown = state.visible_mask()
    if panel.kind.currentIndex() > 0:
        shown &= state.data.arrays.kind == panel.kind.currentText()
    if panel.search.text().strip():
        shown &= expected_mask(state.data, panel.search.text())
    col, direction = panel._sort
    want = expected_order(panel, col, direction == Qt.DescendingOrder, shown)
    assert np.array_equal(panel.model.order, want), (COLUMNS[col], direction, panel.search.text())


def test_sort_and_search_match_the_plain_ones(qtbot, tmp_path):
    store = ms.create(str(tmp_path / "t.db"))
    add_rows(store, 1500)
    state = AppState()
    panel = TablePanel(state)
    qtbot.addWidget(panel)
    state.set_data(load_store_data(store))
    for col in range(len(COLUMNS)):             # every column, ascending then descending
        for _ in range(2):
            panel._header_clicked(col)
            check(panel, state)
    panel._header_clicked(COLUMNS.index("content"))
    for text in ("c", "co", "cof", "coffee", "coff", "CAF", "café", "m0", "zzz", ""):   # typing on, back, anew
        panel.search.setText(text)
        panel.refilter()
        check(panel, state)
    panel.search.setText("rain")
    panel.kind.setCurrentIndex(1)               # a kind filter on top of the search
    check(panel, state)
    state.set_show_retired(False)
    check(panel, state)

    # live refreshes: values changed (the same rows), then rows added (ids sort among the old
    # ones); the orders are made again
    for col in (COLUMNS.index("importance"), COLUMNS.index("content"), COLUMNS.index("id")):
        panel._header_clicked(col)          # each column's order is made (and kept) before the change
    with store.transaction() as c:
        c.execute("UPDATE memories SET importance = 9, content = 'rain rain' WHERE rowid % 60 = 0")
    assert state.apply_refresh(read_refresh(state.data)) == "delta"
    for step in ("changed", "added"):
        if step == "added":
            add_rows(store, 40, start=1500, seed=1)
            assert state.apply_refresh(read_refresh(state.data)) == "delta"
        for col in (COLUMNS.index("importance"), COLUMNS.index("content"), COLUMNS.index("id")):
            panel._header_clicked(col)
            panel.refilter()
            check(panel, state)

    # another store: nothing of the last one is kept
    other = ms.create(str(tmp_path / "u.db"))
    add_rows(other, 700, seed=4)
    state.set_data(load_store_data(other))
    panel.refilter()
    check(panel, state)
    store.close()
    other.close()


def test_stable_order_is_numpys_stable_argsort():
    rng = np.random.default_rng(3)
    texts = np.empty(2000, dtype=object)
    texts[:] = [str(x) for x in rng.choice(["b", "a", "ab", "", "B", "é", "a"], 2000)]
    for key in (texts, rng.integers(0, 5, 2000), np.where(rng.random(2000) < 0.1, np.nan, rng.random(2000)).round(1),
                rng.random(2000) < 0.5):
        assert np.array_equal(stable_order(key), np.argsort(key, kind="stable"))
