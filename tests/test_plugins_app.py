"""Plugins in the window (offscreen): the example plugin's toy store opened, ranked with its
preset from the query panel's list, corrected (written back to its JSON file) and the correction
undone; broken plugins named in the status bar while the window opens a store all the same.
The plugins are installed for this process by test_plugins.py's `on_path` and taken away after."""
from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import time

import pytest
from test_app_edit import menu_action, settle  # noqa: E402
from test_app_query import run  # noqa: E402
from test_plugins import TOY_RECORDS, on_path, plugin_dirs, toy_file  # noqa: E402, F401 - plugin_dirs: a fixture

from memviz.app.main import load_plugins  # noqa: E402


def texts(path) -> list[str]:
    return [r["text"] for r in json.loads(path.read_text(encoding="utf-8"))["records"]]


def test_the_window_opens_the_toy_store_ranks_with_its_preset_and_corrects_with_undo(
        qtbot, make_window, tmp_path, monkeypatch, plugin_dirs):  # noqa: F811
    monkeypatch.setenv("MEMVIZ_CACHE_DIR", str(tmp_path / "cache"))
    store = toy_file(tmp_path / "notes.json")
    with on_path(plugin_dirs["toy"]):
        win = make_window(store)  # opened in place, not taken for a JSON file to import
        assert win.state.data.n == 3 and win.windowTitle().endswith("notes.json")
        assert win.state.data.store.describe() == f"Toy memory file {store} (3 records)"
        q = win.query
        assert "toy-recency" in [q.preset.itemText(i) for i in range(q.preset.count())]
        q.preset.setCurrentText("toy-recency")
        run(qtbot, win, "green tea")
        result = q.results.result
        assert list(result.ids) == ["r3", "r1", "r2"] and set(result.raw) >= {"relevance", "freshness"}
        assert result.raw["relevance"][1] > 0.3  # r1, through the plugin's embedder

        menu_action(win, ["r2"], "correct").trigger()
        dlg = win.edits.dialog
        assert dlg.old_text.toPlainText() == "The user lives in Lisbon."
        dlg.new_text.setPlainText("The user lives in Porto.")
        dlg.accept()
        settle(qtbot, win)
        assert texts(store) == [TOY_RECORDS[0]["text"], "The user lives in Porto.", TOY_RECORDS[2]["text"]]
        assert win.state.data.store.get("r2")["content"] == "The user lives in Porto."
        assert not menu_action(win, ["r1"], "importance").isEnabled()  # the toy system allows no other edit
        win.undo_action.trigger()
        settle(qtbot, win)
        assert texts(store) == [r["text"] for r in TOY_RECORDS]
        assert win.state.data.store.get("r2")["content"] == "The user lives in Lisbon."
        win.close()


def test_the_window_names_skipped_plugins_in_its_status_bar_and_opens_a_store(
        qtbot, make_window, tmp_path, monkeypatch, plugin_dirs):  # noqa: F811
    from PySide6.QtWidgets import QLabel

    monkeypatch.setenv("MEMVIZ_CACHE_DIR", str(tmp_path / "cache"))
    store = toy_file(tmp_path / "notes.json")
    with on_path(plugin_dirs["toy"], plugin_dirs["broken"]):
        problems = load_plugins()  # as memviz.app.main.run does at start-up
        win = make_window(store)
        win.note_plugins(problems)
        assert len(problems) == 8 and all("\n" not in p and "from memviz-broken 0.0.1): skipped: " in p for p in problems)
        marks = [w for w in win.statusBar().findChildren(QLabel) if w.text() == "⚠ 8 plugins skipped"]
        shown = html.unescape(marks[0].toolTip()) if len(marks) == 1 else ""
        assert all(p in shown for p in problems)  # each one, as --version says it
        assert win.state.data.n == 3  # the toy store opened beside them
        assert "toy-recency" in [win.query.preset.itemText(i) for i in range(win.query.preset.count())]
        win.close()


@pytest.mark.qt
def test_memviz_launched_on_the_toy_store_beside_broken_plugins_shows_it_and_names_them(tmp_path, plugin_dirs):  # noqa: F811
    store = toy_file(tmp_path / "notes.json")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "MEMVIZ_CACHE_DIR": str(tmp_path / "cache"),
           "MEMVIZ_STARTUP_REPORT": repr(time.time()),
           "PYTHONPATH": os.pathsep.join([plugin_dirs["toy"], plugin_dirs["broken"],
                                          *filter(None, [os.environ.get("PYTHONPATH")])])}
    out = subprocess.run([sys.executable, "-m", "memviz", str(store)], env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    assert re.search(r"^memviz: interactive after [\d.]+ s \(3 memories, map: ", out.stdout, re.M), out.stdout
    said = [line for line in out.stderr.splitlines() if "from memviz-broken 0.0.1): skipped: " in line]
    assert len(said) == 8 and len(set(said)) == 8  # each once, at start-up
