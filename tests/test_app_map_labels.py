"""The map names its regions and draws copies of one vector together."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QSettings

import memviz.store as ms
from memviz.app.window import MainWindow
from memviz.layout.labels import META_KEY, words_of

COFFEE = ["espresso beans from the roaster", "the grinder for espresso", "single origin espresso beans roaster"]
TRAINS = ["the night train to Porto", "train ticket at the station", "station platform for the Porto train"]


@pytest.fixture
def store_file(tmp_path):
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(2, 16))
    recs = []
    for i in range(80):
        topic = i % 2
        v = centres[topic] + 0.05 * rng.normal(size=16)
        text = (COFFEE if topic == 0 else TRAINS)[i // 2 % 3] + f" ({i})"
        recs.append(dict(id=f"m{i}", kind="episode", agent="a", content=text, embedding=v / np.linalg.norm(v),
                         embedding_model="test/16", created_at=1_700_000_000 + i))
    idle = centres[0] + 1.0
    for i in range(30):  # thirty copies of one vector, like GA's "… is idle"
        recs.append(dict(id=f"idle{i}", kind="episode", agent="a", content="Ann is idle",
                         embedding=idle / np.linalg.norm(idle), embedding_model="test/16", created_at=1_700_000_100 + i))
    path = tmp_path / "m.db"
    with ms.create(str(path)) as s:
        s.insert_memories(recs)
    return str(path)


@pytest.fixture
def win(qtbot, tmp_path, store_file):
    w = MainWindow(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat))
    w.map.auto_umap = False
    qtbot.addWidget(w)
    w.resize(1300, 850)
    w.show()
    with qtbot.waitSignal(w.opened, timeout=20000):
        w.open_path(store_file)
    qtbot.waitUntil(lambda: bool(w.map.label_items), timeout=20000)
    return w


def test_regions_are_named_by_their_words_and_the_toggle_hides_them(qtbot, win):
    m = win.map
    data = win.state.data
    assert 0 < len(m.label_items) <= len(m.region_labels)  # labels that would cover a larger one are left out
    for item in m.label_items:
        lb = item.region
        assert item.isVisible() and item.textItem.toPlainText() == lb.text
        near = np.hypot(m.coords[:, 0] - lb.x, m.coords[:, 1] - lb.y).argsort()[:5]
        said = set(words_of(" ".join(data.previews[r] for r in near)))
        assert set(lb.plain_words) & said  # a label names what is written around it
    named = {w for item in m.label_items for w in item.region.plain_words}
    assert "espresso" in named and ({"train", "porto", "station"} & named)
    assert data.store.meta(META_KEY)["labels"]  # cached with the layout
    m.labels_button.setChecked(False)
    assert not any(item.isVisible() for item in m.label_items)


def test_copies_share_one_spot_drawn_larger_with_a_count(qtbot, win):
    m = win.map
    qtbot.waitUntil(lambda: m.copies is not None, timeout=20000)
    a = win.state.data.arrays
    idle = np.array([a.index_of(f"idle{i}") for i in range(30)])
    assert (m.copies[idle] == 30).all() and m.copies[a.index_of("m0")] == 1
    assert len({tuple(m.coords[r]) for r in idle}) == 1
    assert "×30 memories share this vector" in m.hover_text(int(idle[0]))
    assert "share this vector" not in m.hover_text(a.index_of("m0"))
