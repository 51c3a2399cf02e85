"""The window beside an agent that writes as agents do: inserts, recalls, rewrites of its own
memories' text (content and a new vector), soft-deletes and tag changes.

Every change arrives as a delta, and each panel takes it in place: the plots restyle the
changed markers (a retired memory drawn hollow and smaller) and recolour their density image
cell by cell instead of drawing every point again, and the table moves the rewritten rows to
where their new text sorts instead of sorting every row. What they show is what drawing and
sorting everything afresh shows.
"""
from __future__ import annotations

import numpy as np
from conftest import assert_same_arrays
from test_app_live import agent, caught_up, finished, make_store, sql

from memviz.app.panels.table_panel import COLUMNS
from memviz.layout.density import DensityGrid
from memviz.session.table_order import stable_order


def drawn(item) -> list:
    """Per point as given (set_data, then append): its marker's (symbol, size, pen, brush) colours."""
    keys = [(sym, size, pen.color().rgba(), brush.color().rgba()) for sym, size, pen, brush in item._entries]
    pos = np.arange(len(item)) if item._pos is None else item._pos
    return [keys[e] for e in item._entry[pos]]


def test_an_agent_rewriting_retiring_and_tagging_its_own_memories_is_taken_in_place(qtbot, make_window, tmp_path,
                                                                                  monkeypatch):
    path = make_store(tmp_path / "agent.db")
    # retired memories of every kind are on screen already (their hollow markers are drawn)
    sql(path, "UPDATE memories SET valid_until = 1700000000 WHERE rowid % 10 = 0")
    win = make_window(path)
    plots = (win.timeline, win.map)
    for panel in plots:   # a density image over a grid (as past 50k memories), the grid made
        panel.points.points_max = 50
        panel.redraw(fit=True)
        panel.plot.grab()
        assert panel.points.last_frame.mode == "density"
    table = win.table
    table._header_clicked(COLUMNS.index("content"))
    table.search.setText("agent observation")   # the agent's own memories, sorted by their text
    qtbot.waitUntil(lambda: not table._refilter_timer.isActive())  # (applied after a pause in typing)
    redraws, refilters = [], []
    for panel in plots:
        real = panel.redraw
        monkeypatch.setattr(panel, "redraw", lambda *a, real=real, panel=panel, **k: (redraws.append(panel), real(*a, **k)))
    real_refilter = table.refilter
    monkeypatch.setattr(table, "refilter", lambda *a, **k: (refilters.append(1), real_refilter(*a, **k)))

    out = finished(qtbot, agent(path, "--rate", "10", "--recall-rate", "4", "--rewrite-rate", "5", "--delete-rate", "2",
                                "--tag-rate", "2", "--seconds", "3"))
    want = caught_up(qtbot, win, path)
    qtbot.waitUntil(lambda: not win.map.placing, timeout=20000)

    assert out["rewritten"] and out["deleted"] and out["tagged"] and out["touches"]
    assert win.live.refreshes["full"] == 0 and win.live.refreshes["delta"] >= 2
    assert_same_arrays(win.state.data.arrays, want)
    a = win.state.data.arrays
    assert all(win.state.data.previews[a.index_of(m)].startswith("agent observation revised") for m in out["rewritten"])
    assert all(not np.isnan(a.valid_until[a.index_of(m)]) for m in out["deleted"])
    assert redraws == [] and refilters == []   # nothing drawn or sorted again whole

    # the table: the order a full sort of the shown rows gives
    live_order = table.model.order.copy()
    shown = np.char.startswith(np.array(win.state.data.previews, str), "agent observation")
    rows = np.flatnonzero(shown)
    np.testing.assert_array_equal(live_order, rows[stable_order(win.state.data.previews[rows])])
    # the plots: the density image's grid holds every point's colour now (recoloured in place, as
    # binning them afresh gives), and every marker is what drawing everything again draws
    for panel in plots:
        item = panel.points
        grid = item.grid()
        colour = grid.colour_index(item._entry_rgb()[item._entry[:grid.n]])
        fresh = DensityGrid(item._x[:grid.n], item._y[:grid.n], colour, grid.palette, item.grid_size)
        np.testing.assert_array_equal(grid.colour, fresh.colour)
        for (_, got), (_, want_sums) in zip(grid.levels, fresh.levels):
            np.testing.assert_allclose(got, want_sums, rtol=1e-6, atol=1e-3)
        markers = drawn(item)
        type(panel).redraw(panel)
        assert markers == drawn(item), panel
