"""Every panel at every size (issue 12): hover labels, layout, the reflection graph, the empty
window, help, plurals, edit reasons and the import dialog's defaults."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPointF
from PySide6.QtWidgets import QApplication

from test_app_support import build_store

pytestmark = pytest.mark.qt


@pytest.fixture(scope="module")
def store_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("polish") / "mem.db"
    build_store(path).close()
    return str(path)


@pytest.fixture(scope="module")
def other_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("polish2") / "other.db"
    build_store(path, with_reflections=False).close()
    return str(path)


def hover_at_point(panel, i):
    scene = panel.vb.mapViewToScene(QPointF(panel.x[i], panel.y[i]))
    panel._mouse_moved((scene,))
    return scene


# ------------------------------------------------------------------ hover labels
def test_hover_label_stays_inside_the_plot_at_its_edges(make_window, store_file):
    win = make_window(store_file, graph=True)
    for panel in (win.timeline, win.map, win.graph):
        area = panel.vb.sceneBoundingRect()
        for i in (int(np.argmax(panel.x)), int(np.argmin(panel.x)), int(np.argmax(panel.y)), int(np.argmin(panel.y))):
            hover_at_point(panel, i)
            assert panel.hover.isVisible()
            box = panel.hover.mapRectToScene(panel.hover.boundingRect())
            assert area.contains(box), (type(panel).__name__, box, area)


def test_hover_label_hides_when_the_pointer_leaves(make_window, store_file):
    win = make_window(store_file)
    tl = win.timeline
    hover_at_point(tl, 0)
    assert tl.hover.isVisible()
    QApplication.sendEvent(tl.plot.viewport(), QEvent(QEvent.Leave))
    assert not tl.hover.isVisible()
    hover_at_point(tl, 0)  # a move the rate-limited proxy delivers after the pointer left
    assert not tl.hover.isVisible()


def test_hover_label_does_not_survive_opening_another_store(qtbot, make_window, store_file, other_store):
    win = make_window(store_file, graph=True)
    for panel in (win.timeline, win.map, win.graph):
        hover_at_point(panel, 0)
        assert panel.hover.isVisible()
    with qtbot.waitSignal(win.opened, timeout=20000):
        win.open_path(other_store)
    assert not any(p.hover.isVisible() for p in (win.timeline, win.map, win.graph))


# ------------------------------------------------------------------ import dialog
def test_import_proposes_the_user_data_folder_and_hides_the_idle_bar(qtbot, make_window, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMVIZ_DATA_DIR", str(tmp_path / "userdata"))
    persona = tmp_path / "dataset" / "Klaus" / "bootstrap_memory"
    persona.mkdir(parents=True)
    win = make_window()
    dlg = win.show_import(str(persona))
    qtbot.addWidget(dlg)
    assert dlg.output.text() == str(tmp_path / "userdata" / "imports" / "Klaus.db")
    assert not dlg.bar.isVisible()  # an idle empty bar looks like a text field


# ------------------------------------------------------------------ plurals
def test_counts_take_the_number_of_their_noun(make_window, tmp_path):
    import memviz.store as ms
    from memviz.embed import default_embedder
    from memviz.words import count
    assert [count(1, "memory"), count(2, "memory"), count(1605, "agent")] == ["1 memory", "2 memories", "1,605 agents"]
    emb = default_embedder()
    path = tmp_path / "one.db"
    store = ms.create(str(path))
    store.insert_memories([{"id": "m1", "kind": "fact", "agent": "", "content": "One fact.", "importance": 5,
                            "event_time": 1_767_225_600, "embedding": emb.embed_one("One fact."),
                            "embedding_model": emb.model}])
    store.close()
    win = make_window(path)
    text = win.status_counts.text()
    assert text.startswith("1 memory (1 current, 0 retired) · 1 kind · 1 agent"), text
