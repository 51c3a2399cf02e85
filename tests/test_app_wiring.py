"""The window wires its parts: no module reaches into the window, and the edit controller works
built from its constructor arguments alone (no window), embedding corrections off the GUI thread."""
from __future__ import annotations

import ast
import threading
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtGui import QUndoStack  # noqa: E402
from PySide6.QtWidgets import QMainWindow  # noqa: E402

import memviz  # noqa: E402
import memviz.store as ms  # noqa: E402
from memviz.app.controllers.correction_jobs import embed_job  # noqa: E402
from memviz.app.controllers.edit_controller import EditController  # noqa: E402
from memviz.app.dialogs.edit_dialogs import CorrectDialog  # noqa: E402
from memviz.app.window import MainWindow  # noqa: E402
from memviz.app.workers import Workers  # noqa: E402
from memviz.embed.base import Embedder, EmbeddingError  # noqa: E402
from memviz.session.state import AppState, load_store_data  # noqa: E402

# ---------------------------------------------------------------- nobody reaches into the window

PACKAGE = Path(memviz.__file__).parent
WINDOW_MODULE = PACKAGE / "app" / "window.py"
#: names a module would give the main window (a variable, an argument or an attribute holding it)
WINDOW_NAMES = {"window", "window_", "win", "main_window", "mainwindow", "mw"}
#: calls that can return the main window from inside one of its widgets
WINDOW_CALLS = {"window", "parent", "parentWidget", "nativeParentWidget", "topLevelWidget", "activeWindow"}
#: what any widget may ask the window it sits in: read-only questions, no parts, no menus, no docks
QT_QUERIES = {"isVisible", "isHidden", "isActiveWindow", "isWindow", "windowTitle", "windowState", "geometry",
              "frameGeometry", "size", "width", "height", "rect", "pos", "mapToGlobal", "mapFromGlobal",
              "devicePixelRatioF", "screen", "font", "palette", "style", "winId", "objectName"}


def _public_api() -> set[str]:
    """MainWindow's contract: its public methods and signals (not its instance attributes)."""
    own = {n for n, v in vars(MainWindow).items() if not n.startswith("_") and (callable(v) or "Signal" in
                                                                                 type(v).__name__)}
    return own | set(dir(QMainWindow))


def _is_window(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id in WINDOW_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in WINDOW_NAMES
    if isinstance(node, ast.Call) and not node.args:
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        return name in WINDOW_CALLS
    return False


def window_reaches(source: str, where: str = "<snippet>") -> list[str]:
    """Uses of the main window's attributes in `source`, as "file:line: expression".

    The rule: an expression that may be the main window is a name or attribute called like one
    (WINDOW_NAMES: `window.x`, `self.window.x`, `tools.win.x`) or a call that returns a
    widget's window or parent (`self.window().x`, `parent().x`). On such an expression a module
    may only ask Qt's read-only questions (QT_QUERIES, e.g. `self.window().isVisible()`). The
    launcher, the module that constructs MainWindow (app/main.py), may also call the window's
    public methods and connect its signals (its contract: open_path, opened, show, ...). Nobody
    may set or delete an attribute on it, nor reach it through getattr/setattr/hasattr, nor read
    its instance attributes (state, docks, panels, menus, undo stack, controllers): that is
    wiring, and wiring is window.py's job. Names are a convention, not types: the check is
    robust because the code base has no other reason to call anything `window`, and the
    self-test below proves each form is caught."""
    tree = ast.parse(source)
    launcher = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "MainWindow"
                   for n in ast.walk(tree))
    allowed = _public_api() if launcher else QT_QUERIES
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_window(node.value):
            if not isinstance(node.ctx, ast.Load) or node.attr not in allowed:
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and node.args
              and _is_window(node.args[0])):
            found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_but_the_window_reaches_into_the_window():
    files = sorted(p for p in PACKAGE.rglob("*.py") if p != WINDOW_MODULE)
    assert len(files) > 50 and PACKAGE / "app" / "controllers" / "edit_controller.py" in files
    found = [hit for p in files for hit in window_reaches(p.read_text(encoding="utf-8"), str(p.relative_to(PACKAGE)))]
    assert found == []


@pytest.mark.parametrize("snippet", [
    "def f(window):\n    window.undo_stack.push(c)",
    "self.window.statusBar().showMessage('saved', 100)",
    "self.window.query.params()",
    "self.parent().edits.perform(a)",
    "window.docks['retired'] = dock",
    "window.reflect_tools = ReflectTools(window)",
    "setattr(window, 'import_dialog', dlg)",
    "dlg = getattr(window, 'import_dialog', None)",
    "tools.window.workers.submit('x', f)",
    "self.window().addDockWidget(area, dock)",
    "win = MainWindow()\nprint(win.state.data.n)",
])
def test_the_rule_catches_each_way_in(snippet):
    assert window_reaches(snippet)


@pytest.mark.parametrize("snippet", [
    "if not self.window().isVisible():\n    pass",
    "win = MainWindow()\nwin.show()\nwin.open_path(p)\nwin.opened.connect(f)\nwin.statusBar().showMessage(m)",
    "self.state.window_size = 3",
    "self.workers.submit('retired', f, on_done=g)",
])
def test_the_rule_lets_these_pass(snippet):
    assert window_reaches(snippet) == []


# ---------------------------------------------------------------- a controller without a window

MODEL = "gated-test-model"


class GatedEmbedder(Embedder):
    """A stand-in for a slow (network) embedding model: each call waits until the test opens the
    gate; `fail` makes it raise instead of answering."""

    model, dim = MODEL, 8

    def __init__(self, fail: Exception | None = None) -> None:
        self.started, self.gate, self.fail = threading.Event(), threading.Event(), fail

    def _embed(self, texts):
        self.started.set()
        self.gate.wait(30)
        if self.fail is not None:
            raise self.fail
        return np.ones((len(texts), self.dim), np.float32)


@pytest.fixture
def parts(qtbot, tmp_path):
    """A store of MODEL vectors, an AppState showing it, and `make` for an EditController built
    from parts only: state, undo stack, workers and an embedder factory (no window)."""
    from conftest import unit_vectors
    path = str(tmp_path / "gated.db")
    store = ms.create(path)
    store.insert_memories([{"id": f"m{i}", "kind": "fact", "content": f"fact number {i}", "embedding": v,
                            "embedding_model": MODEL} for i, v in enumerate(unit_vectors(3, 8))])
    state, workers, stack = AppState(), Workers(), QUndoStack()
    state.set_data(load_store_data(store))
    made = {}

    def make(fail=None):
        emb = GatedEmbedder(fail)
        ctl = EditController(state, stack, workers, embedder_for=lambda model, dim: emb)
        ctl.refresh_requested.connect(lambda: state.set_data(load_store_data(store)))
        messages = []
        ctl.message.connect(lambda text, ms_: messages.append(text))
        made.update(ctl=ctl, emb=emb, messages=messages)
        return ctl, emb, messages

    yield state, store, workers, make
    if made:
        made["emb"].gate.set()
    workers.shutdown()
    if made.get("ctl"):
        made["ctl"].close()
    store.close()


def correct(ctl, mid, text):
    ctl.run("correct", [mid])
    dlg = ctl.dialog
    assert isinstance(dlg, CorrectDialog)
    dlg.new_text.setPlainText(text)
    dlg.accept()
    return dlg


def test_correct_embeds_on_a_worker_while_the_gui_thread_runs(qtbot, parts):
    state, store, workers, make = parts
    ctl, emb, messages = make()
    correct(ctl, "m1", "fact number one, corrected")
    assert emb.started.wait(20)
    # the model is still working (its gate is shut), and the GUI thread handles events meanwhile
    ticks = []
    QTimer.singleShot(0, lambda: ticks.append("tick"))
    qtbot.waitUntil(lambda: ticks == ["tick"], timeout=20000)
    assert not emb.gate.is_set() and ctl.corrections.embedding == ["m1"]
    assert store.get("m1")["valid_until"] is None and ctl.undo_stack.count() == 0  # nothing written yet
    assert any("Embedding the correction" in m for m in messages)
    emb.gate.set()
    qtbot.waitUntil(lambda: not ctl.corrections.embedding and ctl.undo_stack.count() == 1, timeout=10000)
    assert store.get("m1")["valid_until"] is not None
    new_id = ctl.history.done[-1].new_id
    qtbot.waitUntil(lambda: state.selected_ids == [new_id], timeout=20000)  # selected after the reload
    row = store.get(new_id)
    assert row["content"] == "fact number one, corrected" and row["embedding_model"] == MODEL
    np.testing.assert_allclose(np.frombuffer(row["embedding"], np.float32), np.full(8, 1 / np.sqrt(8)), rtol=1e-6)


def test_a_cancelled_embedding_gives_the_text_back_and_writes_nothing(qtbot, parts):
    state, store, workers, make = parts
    ctl, emb, messages = make()
    first = correct(ctl, "m2", "my careful correction")
    assert emb.started.wait(20)
    workers.cancel(embed_job("m2"))  # what the status bar's Cancel does
    again = ctl.dialog
    assert isinstance(again, CorrectDialog) and again is not first
    assert again.text() == "my careful correction" and "Cancelled" in again.warning.text()
    assert not ctl.corrections.embedding
    emb.gate.set()
    workers.wait()
    qtbot.wait(50)  # let a late result be delivered (and dropped)
    assert store.get("m2")["valid_until"] is None and ctl.undo_stack.count() == 0
    assert len(store.arrays()) == 3


def test_a_failing_model_gives_the_text_back_with_the_reason(qtbot, parts):
    state, store, workers, make = parts
    ctl, emb, messages = make(fail=RuntimeError("the model server went away"))
    correct(ctl, "m0", "a correction the model cannot embed")
    emb.gate.set()
    qtbot.waitUntil(lambda: not ctl.corrections.embedding, timeout=10000)
    dlg = ctl.dialog
    assert isinstance(dlg, CorrectDialog) and dlg.text() == "a correction the model cannot embed"
    assert "the model server went away" in dlg.warning.text()
    assert store.get("m0")["valid_until"] is None and ctl.undo_stack.count() == 0


def test_an_embedding_error_still_writes_the_correction_marked_unembedded(qtbot, parts):
    state, store, workers, make = parts
    ctl, emb, messages = make(fail=EmbeddingError("HTTP 503"))
    correct(ctl, "m0", "written without a vector")
    emb.gate.set()
    qtbot.waitUntil(lambda: not ctl.corrections.embedding and ctl.undo_stack.count() == 1, timeout=10000)
    new_id = ctl.history.done[-1].new_id
    row = store.get(new_id)
    assert row["content"] == "written without a vector" and row["embedding"] is None
    assert row["attributes"].get("needs_embedding") is True
    assert "no embedding" in ctl.dialog.windowTitle().lower() and "HTTP 503" in ctl.dialog.text()
