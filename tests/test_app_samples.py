"""Opening the committed sample stores, the no-argument start (the user's copy of the sample,
made on first use), Help ▸ Open the sample store, the window's icon, and `memviz --read-only
PATH` through memviz.app.main.run."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402
from test_app_support import build_store  # noqa: E402

import memviz.store as ms  # noqa: E402
from memviz.app import main as app_main  # noqa: E402
from memviz.app.window import MainWindow  # noqa: E402
from memviz.desktop import ICON_PNG, ICON_SVG  # noqa: E402
from memviz.samples.bundled import user_sample_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = sorted((ROOT / "sample_dbs").glob("*.db"))


def digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.mark.skipif(not SAMPLES, reason="no sample stores in sample_dbs/ yet")
@pytest.mark.parametrize("sample", SAMPLES, ids=[p.name for p in SAMPLES])
def test_open_each_sample(qtbot, tmp_path, sample):
    before = digest(sample)
    w = MainWindow(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat))
    w.map.auto_umap = False
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.show()
    with qtbot.waitSignal(w.opened, timeout=60000):
        w.open_path(str(sample), read_only=True)
    qtbot.waitUntil(lambda: w.graph.graph is not None, timeout=60000)
    with ms.open(str(sample), read_only=True) as s:
        counts = s.counts()
    data = w.state.data
    assert data.n == counts["total"] and w.table.model.rowCount() == counts["total"]
    assert len(w.timeline.rows) == counts["total"]
    assert len(w.map.rows) == int(data.arrays.has_embedding.sum())
    assert f"{counts['total']:,} memories" in w.status_counts.text()
    # select the deepest reflection: every panel follows
    g = w.graph.graph
    if g.n:
        real = g.rows >= 0
        top = int(g.rows[real][int(g.level[real].argmax())])
        w.state.select([top])
        assert w.detail.shown_id == data.arrays.ids[top]
        assert len(w.graph.hot) > 1
    w.grab()
    w.close()
    assert digest(sample) == before


def run_and_inspect(argv, inspect, timeout_ms=60000):
    """Call main.run(argv); once a MainWindow has opened its store, inspect it and close it."""
    seen = {}

    def poll():
        wins = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
        if wins and (wins[0].state.data is not None or wins[0].error_box is not None):
            seen["result"] = inspect(wins[0])
            if wins[0].error_box is not None:
                wins[0].error_box.close()
            wins[0].close()
        elif poll.left > 0:
            poll.left -= 1
            QTimer.singleShot(50, poll)
        else:
            for w in wins:
                w.close()
    poll.left = timeout_ms // 50
    QTimer.singleShot(50, poll)
    code = app_main.run(argv)
    return code, seen.get("result")


def test_no_argument_makes_the_sample_and_opens_it(qtbot, tmp_path, monkeypatch):
    """A new user's first `memviz`: no sample yet, no sample_dbs/ beside the package needed."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("MEMVIZ_DATA_DIR", raising=False)
    sample = tmp_path / "data" / "memviz" / "samples" / "assistant.db"
    assert user_sample_path() == sample and not sample.exists()
    code, got = run_and_inspect([], lambda w: (w.state.data.store.path, w.state.data.n, w.state.data.store.read_only,
                                               w.windowIcon().isNull()))
    with ms.open(str(sample), read_only=True) as s:
        total = s.counts()["total"]
    assert code == 0 and got == (str(sample), total, False, False) and total > 1500
    code, got = run_and_inspect(["--read-only"], lambda w: (w.state.data.store.path, w.state.data.store.read_only))
    assert got == (str(sample), True)  # made once, then opened as it is


def test_help_menu_opens_the_sample(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMVIZ_DATA_DIR", str(tmp_path / "data"))
    w = MainWindow(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat))
    w.map.auto_umap = False
    qtbot.addWidget(w)
    w.show()
    help_menu = next(a.menu() for a in w.menuBar().actions() if a.text() == "&Help")
    action = next(a for a in help_menu.actions() if a.text() == "Open the &sample store")
    progress = []
    w.workers.activity.connect(lambda name, f, text: progress.append(text))
    with qtbot.waitSignal(w.opened, timeout=60000) as sig:
        action.trigger()
    assert sig.args[0] == str(tmp_path / "data" / "samples" / "assistant.db") == w.state.data.store.path
    assert "Making the sample store (first run)" in progress  # shown in the status bar while it is made


def test_a_sample_that_cannot_be_made_is_said_in_the_window(qtbot, tmp_path, monkeypatch):
    blocker = tmp_path / "data"
    blocker.write_text("not a folder")
    monkeypatch.setenv("MEMVIZ_DATA_DIR", str(blocker))
    w = MainWindow(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat))
    qtbot.addWidget(w)
    w.show()
    with qtbot.waitSignal(w.open_failed, timeout=30000) as sig:
        w.open_sample()
    assert sig.args[1].startswith("Cannot make the sample store") and "MEMVIZ_DATA_DIR" in sig.args[1]
    assert w.error_box is not None and "Cannot make the sample store" in w.error_box.text()
    w.error_box.close()


def test_the_window_has_memvizs_icon(qtbot):
    app = app_main.make_app()
    icon = app.windowIcon()
    assert not icon.isNull() and app.desktopFileName() == "memviz"
    for size in (16, 32, 256):  # drawn at every size a desktop asks for, not blank
        img = icon.pixmap(size, size).toImage()
        assert img.width() == size and img.pixelColor(size // 2, size // 2).alpha() == 255
    assert ICON_SVG.read_bytes() == (ROOT / "assets" / "icon.svg").read_bytes()  # the README's and manual's picture
    assert ICON_PNG.read_bytes() == (ROOT / "assets" / "icon.png").read_bytes()


def test_the_icons_png_is_its_svg_rendered(qtbot):
    """memviz.png is scripts/make_icon.py's rendering of memviz.svg (rerun it after editing the SVG)."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    png = QImage(str(ICON_PNG)).convertToFormat(QImage.Format_ARGB32)
    fresh = QImage(256, 256, QImage.Format_ARGB32)
    fresh.fill(Qt.transparent)
    p = QPainter(fresh)
    p.setRenderHint(QPainter.Antialiasing)
    QSvgRenderer(str(ICON_SVG)).render(p)
    p.end()
    assert png.size() == fresh.size()
    worst = max(abs(png.pixelColor(x, y).red() - fresh.pixelColor(x, y).red())
                for x in range(0, 256, 4) for y in range(0, 256, 4))
    assert worst <= 8


def test_run_read_only_path(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    path = tmp_path / "mem.db"
    build_store(path).close()
    code, got = run_and_inspect(["--read-only", str(path)],
                                lambda w: (w.state.data.store.read_only, w.status_ro.text(), w.state.data.n))
    assert code == 0 and got == (True, "READ-ONLY", 20)


def test_run_bad_path_shows_message(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    bad = tmp_path / "notes.db"
    bad.write_text("hello")
    code, got = run_and_inspect([str(bad)], lambda w: w.error_box.text())
    assert code == 0 and str(bad) in got and bad.read_text() == "hello"


def test_drop_a_db_file_opens_it(qtbot, tmp_path):
    from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
    from PySide6.QtGui import QDropEvent
    path = tmp_path / "dropped.db"
    build_store(path).close()
    w = MainWindow(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat))
    w.map.auto_umap = False
    qtbot.addWidget(w)
    w.show()
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    ev = QDropEvent(QPointF(10, 10), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    with qtbot.waitSignal(w.opened, timeout=30000) as sig:
        w.dropEvent(ev)
    assert sig.args[0] == str(path) and w.state.data.n == 20
    assert os.path.abspath(str(path)) in w.recent.files()
