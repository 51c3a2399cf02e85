import importlib.util
import os

# Qt tests run headless everywhere (CI has no display).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402

import memviz.store as ms  # noqa: E402

# MEMVIZ_NO_QT=1: the core's run without PySide6/pyqtgraph (.ci/run). Only then may a test
# module that cannot import Qt skip; in a normal run a missing Qt part fails like any import.
NO_QT = os.environ.get("MEMVIZ_NO_QT") == "1"
QT_PACKAGES = ("PySide6", "shiboken6", "pyqtgraph", "pytestqt")


def pytest_configure(config):
    if NO_QT and importlib.util.find_spec("PySide6") is not None:
        raise pytest.UsageError("MEMVIZ_NO_QT=1 but PySide6 is installed: this run would not show that "
                                "the core works without Qt.")


class QtOptionalModule(pytest.Module):
    """A test module that is skipped, not failed, when it cannot import a Qt package (no-Qt run)."""

    def collect(self):
        try:
            return super().collect()
        except self.CollectError as e:
            missing = e.__cause__
            if isinstance(missing, ModuleNotFoundError) and (missing.name or "").split(".")[0] in QT_PACKAGES:
                pytest.skip(f"needs {missing.name}, absent in the no-Qt run")
            raise


def pytest_pycollect_makemodule(module_path, parent):
    if NO_QT:
        return QtOptionalModule.from_parent(parent, path=module_path)
    return None


def pytest_collection_modifyitems(config, items):
    if NO_QT:  # tests that need Qt without importing it: they use qtbot, or start the window in a process
        skip = pytest.mark.skip(reason="needs Qt, absent in the no-Qt run")
        for item in items:
            if item.get_closest_marker("qt") or "qtbot" in getattr(item, "fixturenames", ()):
                item.add_marker(skip)


@pytest.fixture
def store_path(tmp_path):
    return tmp_path / "mem.db"


@pytest.fixture
def store(store_path):
    s = ms.create(str(store_path))
    yield s
    s.close()


def unit_vectors(n, dim=8, seed=0):
    v = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _find_real_persona() -> Path:
    """The real GA persona in ../shared/realdata/ (read in place, never copied into the project)."""
    tail = Path("shared", "realdata", "generative_agents", "Isabella_Rodriguez")
    if os.environ.get("MEMVIZ_REALDATA"):
        return Path(os.environ["MEMVIZ_REALDATA"], *tail.parts[2:])
    for parent in Path(__file__).resolve().parents:
        if (parent / tail).is_dir():
            return parent / tail
    if os.environ.get("CI"):  # CI has shared/ beside the clone: a missing persona is a failure, not a skip
        raise RuntimeError(f"the real GA persona ({tail}) is missing beside the checkout")
    return Path("/nonexistent") / tail


REAL_PERSONA = _find_real_persona()
needs_real = pytest.mark.skipif(not (REAL_PERSONA / "bootstrap_memory").is_dir(),
                                reason="the real GA persona is not on this machine")


def assert_same_arrays(a, b):
    """Two MemoryArrays hold the same values, dtypes and shapes in every field."""
    for name in a.__dataclass_fields__:
        if name.startswith("_"):
            continue
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape, name
            assert (np.array_equal(x, y, equal_nan=True) if x.dtype != object else list(x) == list(y)), name
        else:
            assert x == y, name


@pytest.fixture
def fake_openai():
    """A started FakeOpenAI server (tests/fake_openai.py), stopped after the test."""
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def make_window(qtbot, tmp_path):
    """Build a MainWindow with its own settings file, shown offscreen; with `path`, wait until
    it has opened that store (and, with `graph=True`, laid out its reflection graph).
    Automatic UMAP is off unless asked for: it has its own tests (test_app_layout.py)."""
    from PySide6.QtCore import QSettings  # the core's tests run without Qt

    from memviz.app.window import MainWindow

    def make(path=None, *, read_only=False, settings="settings.ini", size=(1300, 850), auto_umap=False,
             graph=False, timeout=20000):
        win = MainWindow(QSettings(str(tmp_path / settings), QSettings.IniFormat))
        win.map.auto_umap = auto_umap
        qtbot.addWidget(win)
        win.resize(*size)
        win.show()
        if path is not None:
            with qtbot.waitSignal(win.opened, timeout=timeout):
                win.open_path(str(path), read_only=read_only)
            if graph:
                qtbot.waitUntil(lambda: win.graph.graph is not None, timeout=timeout)
        return win
    return make
