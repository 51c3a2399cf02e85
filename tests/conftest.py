import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

# Qt tests run headless everywhere (CI has no display).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from declared import declared  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402
from hypothesis import settings as hypothesis_settings  # noqa: E402
from packaging.requirements import Requirement  # noqa: E402

import memviz.store as ms  # noqa: E402

# MEMVIZ_NO_QT=1: the core's run without PySide6/pyqtgraph (.ci/run). Only then are the tests
# that need Qt left out: deselected by their marker (`qt`, or the qtbot fixture), and modules
# that import Qt not collected. In a normal run a missing Qt part fails like any import.
NO_QT = os.environ.get("MEMVIZ_NO_QT") == "1"
QT_PACKAGES = ("PySide6", "shiboken6", "pyqtgraph", "pytestqt")
_IMPORTS_CHECKED_IN = 600  # seconds the session waits for the import check (cold imports compile)
_IMPORT_CHECK = pytest.StashKey[subprocess.Popen]()
_NOT_COLLECTED = pytest.StashKey[list]()  # no-Qt run: modules left out because they import Qt
_SKIPS: list = []  # the session's skipped reports (collection and tests)

# Property tests draw the same examples in every run, so a run's verdict is about the code, not
# the draw; `--hypothesis-profile=explore` draws fresh examples (and more of them) to look for new
# failures, which then become explicit cases.
hypothesis_settings.register_profile("repeatable", derandomize=True, print_blob=True)
hypothesis_settings.register_profile("explore", derandomize=False, max_examples=1000, print_blob=True)
hypothesis_settings.load_profile("repeatable")


def pytest_addoption(parser):
    parser.addoption("--fail-on-skip", action="store_true",
                     help="a skipped test fails the run (CI: nothing passes by skipping; the no-Qt "
                          "run's Qt tests are deselected, not skipped)")


def pytest_configure(config):
    if NO_QT and importlib.util.find_spec("PySide6") is not None:
        raise pytest.UsageError("MEMVIZ_NO_QT=1 but PySide6 is installed: this run would not show that "
                                "the core works without Qt.")
    config.stash[_NOT_COLLECTED] = []
    deps, test = declared(qt=not NO_QT)
    wrong = [why for why in map(_not_installed, deps + test) if why]
    if wrong:
        raise pytest.UsageError("packages pyproject.toml declares for the tests are missing or at another "
                                "version (pip install -e '.[test]'):\n  " + "\n  ".join(wrong))
    # Importing them all costs seconds: a process of its own does it while the tests are collected
    # (in a clean environment: mem0 reads its settings when first imported).
    env = {**os.environ, "MEM0_TELEMETRY": "False", "MEM0_DIR": tempfile.mkdtemp(prefix="mem0-check-")}
    config.stash[_IMPORT_CHECK] = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("declared.py")), "--check-imports",
         *(["--no-qt"] if NO_QT else [])], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _not_installed(requirement: str) -> str | None:
    req = Requirement(requirement)
    try:
        version = importlib.metadata.version(req.name)
    except importlib.metadata.PackageNotFoundError:
        return f"{req.name} is not installed (declared: {requirement})"
    if not req.specifier.contains(version, prereleases=True):
        return f"{req.name} {version} is installed (declared: {requirement})"
    return None


def pytest_collection_finish(session):
    check = session.config.stash[_IMPORT_CHECK]
    try:
        out, _ = check.communicate(timeout=_IMPORTS_CHECKED_IN)
    except subprocess.TimeoutExpired:
        check.kill()
        pytest.exit(f"importing the test extra's packages took over {_IMPORTS_CHECKED_IN} s", returncode=1)
    if check.returncode:
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        failed = [json.loads(ln) for ln in lines]
        said = "\n  ".join(f"{f['requirement']}: import {f['module']} fails: {f['error']}" for f in failed) or out
        pytest.exit("packages the test extra declares do not import (a broken install fails the run, "
                    "it never skips):\n  " + said, returncode=1)


def pytest_unconfigure(config):
    check = config.stash.get(_IMPORT_CHECK, None)
    if check is not None and check.poll() is None:  # the session ended before its collection did
        check.kill()
        check.wait()


class QtOptionalModule(pytest.Module):
    """A test module that is not collected when it cannot import a Qt package (no-Qt run)."""

    def collect(self):
        try:
            return super().collect()
        except self.CollectError as e:
            missing = e.__cause__
            if isinstance(missing, ModuleNotFoundError) and (missing.name or "").split(".")[0] in QT_PACKAGES:
                self.config.stash[_NOT_COLLECTED].append(self.path.name)
                return []
            raise


def pytest_pycollect_makemodule(module_path, parent):
    if NO_QT:
        return QtOptionalModule.from_parent(parent, path=module_path)
    return None


def pytest_collection_modifyitems(config, items):
    if NO_QT:  # tests that need Qt without importing it: they use qtbot, or start the window in a process
        qt = [i.get_closest_marker("qt") is not None or "qtbot" in getattr(i, "fixturenames", ()) for i in items]
        if any(qt):
            config.hook.pytest_deselected(items=[i for i, q in zip(items, qt) if q])
            items[:] = [i for i, q in zip(items, qt) if not q]


def pytest_runtest_logreport(report):
    if report.skipped:
        _SKIPS.append(report)


def pytest_collectreport(report):
    if report.skipped:
        _SKIPS.append(report)


def pytest_sessionfinish(session):
    if _SKIPS and session.config.getoption("--fail-on-skip"):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, config):
    not_collected = config.stash.get(_NOT_COLLECTED, [])
    if not_collected:
        terminalreporter.write_line(f"no-Qt run: {len(not_collected)} test modules import Qt and were not collected "
                                    f"({', '.join(sorted(not_collected))}); tests marked qt or using qtbot deselected")
    if _SKIPS and config.getoption("--fail-on-skip"):
        terminalreporter.write_sep("=", f"{len(_SKIPS)} skipped: a skip fails this run (--fail-on-skip)", red=True)
        for r in _SKIPS:
            where = r.nodeid or str(r.fspath)
            reason = r.longrepr[2] if isinstance(r.longrepr, tuple) else str(r.longrepr)
            terminalreporter.write_line(f"SKIPPED {where}: {reason}")


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


#: how a test's whole reads scan the rows: through the read index (a store this memviz made or
#: migrated), the table (a store without the index: from before it, or opened read-only since), or
#: the table shared with a second connection at any size (a large store's)
SCANS = ("index", "table", "table-split")


def scan_as(how: str, conn, monkeypatch) -> None:
    """Whole reads of `conn`'s store scan as `how` (one of SCANS)."""
    from memviz.store import arrays
    from memviz.store.schema import READ_INDEX
    if how != "index":
        conn.execute(f"DROP INDEX IF EXISTS {READ_INDEX}")
    monkeypatch.setattr(arrays, "_SPLIT_FROM", 0 if how == "table-split" else arrays._SPLIT_FROM)


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
