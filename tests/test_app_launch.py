"""`memviz DB` as a user runs it: a new process reads the store in a thread started before Qt
is imported, and the window shows it; a bad file ends in the error message, not a hang."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

import memviz.store as ms

pytestmark = pytest.mark.qt  # the window runs in a child process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def launch(tmp_path, *args):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "MEMVIZ_CACHE_DIR": str(tmp_path / "cache"),
           "MEMVIZ_STARTUP_REPORT": repr(time.time())}
    return subprocess.run([sys.executable, "-m", "memviz.cli", *args], env=env, capture_output=True, text=True,
                          timeout=180, cwd=ROOT)


def test_launch_with_a_store_shows_it(tmp_path):
    sample = os.path.join(ROOT, "sample_dbs", "assistant.db")
    out = launch(tmp_path, "--read-only", sample)
    assert out.returncode == 0, out.stderr[-2000:]
    with ms.open(sample, read_only=True) as s:
        total = s.counts()["total"]
    assert f"({total} memories, map:" in out.stdout


def test_launch_with_a_foreign_file_reports_and_quits(tmp_path):
    bad = tmp_path / "notes.db"
    bad.write_text("not a database\n" * 100)
    out = launch(tmp_path, str(bad))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "open failed" in out.stdout and "not an SQLite database" in out.stdout
    assert bad.read_text() == "not a database\n" * 100
