"""Before Qt starts, memviz says what stops it opening a window (no display, X11 libraries
missing) with the fix, instead of Qt's abort about plugins."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from memviz.app.platform_check import XCB_LIBRARIES, platform_problem

X11 = {"DISPLAY": ":0"}


def test_missing_x11_libraries_are_named_with_the_packages_to_install():
    present = {"xcb-icccm", "xcb-image", "xcb-render-util", "xcb-shape", "xcb-randr", "xcb-xkb", "xkbcommon-x11"}
    text = platform_problem(X11, "linux", lambda lib: f"lib{lib}.so" if lib in present else None)
    assert "sudo apt-get install libxcb-cursor0 libxcb-keysyms1\n" in text
    assert "QT_QPA_PLATFORM=offscreen" in text


def test_nothing_is_said_when_qt_will_not_need_them_or_has_them():
    none = lambda lib: None  # noqa: E731 - every library missing
    assert platform_problem(X11, "linux", lambda lib: "found") is None
    assert platform_problem(X11, "darwin", none) is None
    assert platform_problem({**X11, "QT_QPA_PLATFORM": "offscreen"}, "linux", none) is None
    assert platform_problem({**X11, "WAYLAND_DISPLAY": "wayland-0"}, "linux", none) is None
    # asked for X11 by name on a Wayland desktop: the libraries are needed again
    assert "libxcb-cursor0" in platform_problem({**X11, "WAYLAND_DISPLAY": "w", "QT_QPA_PLATFORM": "xcb"}, "linux", none)
    assert len(XCB_LIBRARIES) == len(set(XCB_LIBRARIES.values()))


@pytest.mark.qt  # without Qt installed, memviz says that first (the no-Qt run)
def test_the_window_command_with_no_display_exits_with_the_reason(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["HOME"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-m", "memviz"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and out.stdout == ""
    assert "there is no display (DISPLAY is not set)" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / ".local").exists()  # nothing made before the check: the sample waits for a window
