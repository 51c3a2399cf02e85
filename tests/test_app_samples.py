"""Opening the bundled sample stores, the no-argument start (a private copy of the sample),
and `memviz --read-only PATH` through memviz.app.main.run."""
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
from memviz.samples import bundled as sample_files  # noqa: E402

SAMPLES = sorted((Path(__file__).resolve().parents[1] / "sample_dbs").glob("*.db"))


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


def test_no_argument_opens_a_private_copy_of_the_sample(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    bundled = sample_files.bundled_sample()
    if not bundled.exists():
        pytest.skip("sample_dbs/assistant.db is not there yet")
    before = digest(bundled)
    copy = sample_files.user_sample_copy()
    assert Path(copy).is_relative_to(tmp_path / "data") and digest(copy) == before
    with ms.open(copy) as s:  # edits go to the copy only
        s.set_valid_until(s.arrays().ids[0], 1_700_000_000)
    assert digest(bundled) == before
    assert sample_files.user_sample_copy() == copy  # made once, then reused (the user's edits stay)


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
    assert os.path.abspath(str(path)) in w.recent_files()
