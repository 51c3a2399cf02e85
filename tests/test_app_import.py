"""File ▸ Import… driven offscreen: the real GA persona through the dialog into the window,
a malformed JSONL dump, cancel, an existing output, and a folder dropped on the window."""
from __future__ import annotations

import json
import os

import pytest
from conftest import REAL_PERSONA, needs_real  # noqa: E402
from progress_log import units  # noqa: E402
from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl  # noqa: E402
from PySide6.QtGui import QDropEvent  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

import memviz.store as ms  # noqa: E402
from memviz.app.dialogs.import_dialog import ImportDialog, default_output  # noqa: E402


@pytest.fixture(autouse=True)
def user_data(tmp_path, monkeypatch):
    """The user's data folder, where imports go by default (never the real one in tests)."""
    monkeypatch.setenv("MEMVIZ_DATA_DIR", str(tmp_path / "userdata"))
    return tmp_path / "userdata"


@pytest.fixture
def win(make_window):
    return make_window(size=(1200, 800))


def dialog_for(qtbot, win, source) -> ImportDialog:
    dlg = win.show_import(str(source))
    qtbot.addWidget(dlg)
    return dlg


def run_import(qtbot, dlg, timeout=60000) -> str:
    outcome = []
    dlg.ended.connect(outcome.append)
    qtbot.mouseClick(dlg.import_button, Qt.LeftButton)   # returns at once: the import runs in the background
    assert dlg.running
    qtbot.waitUntil(lambda: bool(outcome), timeout=timeout)
    return outcome[0]


def no_leftovers(folder) -> list[str]:
    return [f for f in os.listdir(folder) if ".importing-" in f]


@needs_real
def test_real_persona_imported_and_opened(qtbot, win, tmp_path):
    dlg = dialog_for(qtbot, win, REAL_PERSONA)
    assert dlg.format.currentText() == "generative-agents"
    out = tmp_path / "isabella.db"
    dlg.output.setText(str(out))
    seen = []
    dlg.progressed.connect(lambda f, text: seen.append(units(text)))
    with qtbot.waitSignal(win.opened, timeout=60000):
        assert run_import(qtbot, dlg) == "done"
    done, total = seen[-1]
    assert total > 912 and done == total                    # embedding + writing, to the end
    assert dlg.bar.value() == dlg.bar.maximum()
    assert "Imported 912 of 912 memories" in dlg.message.text()
    dlg.source.editingFinished.emit()   # what the source field sends when it loses focus (disabled by Import)
    assert dlg.output.text() == str(out) and dlg.source.text() == str(REAL_PERSONA)  # still as chosen
    assert "  node_881: filling is one id given as a string" in dlg.details.toPlainText()
    data = win.state.data
    assert data.store.path == str(out) and data.n == 912
    assert win.status_counts.text().startswith("912 memories")
    assert "agent Isabella Rodriguez" in win.status_counts.text()
    # the thought graph reaches the reflection graph panel
    qtbot.waitUntil(lambda: win.graph.graph is not None, timeout=30000)
    assert (win.graph.graph.level > 0).any()


def test_malformed_jsonl_lines_are_listed_and_the_rest_imported(qtbot, win, tmp_path, user_data):
    src = tmp_path / "dump.jsonl"
    lines = [json.dumps({"id": f"m{i}", "content": f"Memory number {i} about the garden"}) for i in range(6)]
    lines[1] = '{"id": "broken", "content": '
    lines[4] = "not json at all"
    src.write_text("\n".join(lines) + "\n")
    dlg = dialog_for(qtbot, win, src)
    assert dlg.format.currentText() == "jsonl"
    # default: in the user's data folder, never inside the data set imported, named after it
    assert dlg.output.text() == str(user_data / "imports" / "dump.db")
    with qtbot.waitSignal(win.opened, timeout=60000):
        assert run_import(qtbot, dlg) == "done"
    text = dlg.details.toPlainText()
    assert "Skipped (not imported): 2" in text
    bad = [ln.strip() for ln in text.splitlines() if "[malformed-json]" in ln]
    assert [ln.split(":")[0] for ln in bad] == ["line 2", "line 5"]
    assert "Imported 4 of" in dlg.message.text() and "2 skipped" in dlg.message.text()
    assert sorted(win.state.data.arrays.ids) == ["m0", "m2", "m3", "m5"]


def test_cancel_stops_the_import_and_writes_nothing(qtbot, win, tmp_path):
    src = tmp_path / "big.jsonl"
    # distinct texts without vectors: embedding them is the long part the cancel interrupts
    src.write_text("".join(json.dumps({"id": f"r{i}", "content": f"note {i}: the {i % 97}th visit to "
                                       f"shop {i * 7919 % 10007}"}) + "\n" for i in range(6000)))
    dlg = dialog_for(qtbot, win, src)
    out = tmp_path / "big.db"
    dlg.output.setText(str(out))
    outcome = []
    dlg.ended.connect(outcome.append)
    # Cancel as soon as the importer reports its total (it has read the source, embedding is ahead)
    dlg.progressed.connect(lambda f, text: f < 1 and dlg.cancel_button.isEnabled()
                           and qtbot.mouseClick(dlg.cancel_button, Qt.LeftButton))
    qtbot.mouseClick(dlg.import_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: bool(outcome), timeout=60000)
    assert outcome == ["cancelled"]
    assert "cancelled; nothing was written" in dlg.message.text()
    win.workers.wait()
    assert not out.exists() and no_leftovers(tmp_path) == []
    assert win.state.data is None and dlg.import_button.isEnabled()


def test_existing_output_is_replaced_only_after_yes(qtbot, win, tmp_path):
    src = tmp_path / "few.jsonl"
    src.write_text(json.dumps({"id": "a", "content": "the first memory"}) + "\n")
    out = tmp_path / "taken.db"
    ms.create(str(out)).close()
    dlg = dialog_for(qtbot, win, src)
    dlg.output.setText(str(out))
    qtbot.mouseClick(dlg.import_button, Qt.LeftButton)
    assert dlg.confirm_box is not None and dlg.confirm_box.isVisible() and not dlg.running
    dlg.confirm_box.button(QMessageBox.No).click()
    assert not dlg.running
    with ms.open(str(out)) as s:
        assert s.counts()["total"] == 0                  # untouched
    outcome = []
    dlg.ended.connect(outcome.append)
    qtbot.mouseClick(dlg.import_button, Qt.LeftButton)
    with qtbot.waitSignal(win.opened, timeout=60000):
        dlg.confirm_box.button(QMessageBox.Yes).click()
    assert outcome == ["done"] and win.state.data.arrays.ids.tolist() == ["a"]


def test_failure_is_shown_in_the_dialog(qtbot, win, tmp_path):
    src = tmp_path / "empty.jsonl"
    src.write_text("{broken\n")
    dlg = dialog_for(qtbot, win, src)
    dlg.format.setCurrentText("jsonl")
    assert run_import(qtbot, dlg) == "failed"
    assert dlg.message.text().startswith("Import failed: ") and "none of its 1 item is a memory record" in dlg.message.text()
    assert not os.path.exists(dlg.output.text()) and no_leftovers(os.path.dirname(dlg.output.text())) == []


def test_vectors_of_an_unnamed_model_are_named_or_re_embedded_in_the_dialog(qtbot, win, tmp_path, user_data):
    """A dump whose records carry vectors without naming their model: the failure names the
    dialog's own fields (it named only the command line's --embedding-model and --reembed, which
    the dialog did not have), and either field imports it."""
    src = tmp_path / "dump.jsonl"
    src.write_text("".join(json.dumps({"id": f"r{i}", "content": f"note {i}", "embedding": [0.1 * i, 1.0, 0.5]}) + "\n"
                           for i in range(3)))
    dlg = dialog_for(qtbot, win, src)
    assert dlg.format.currentText() == "jsonl" and dlg.reembed.isEnabled() and dlg.vectors_model.isEnabled()
    assert run_import(qtbot, dlg) == "failed"
    assert "Vectors' model" in dlg.message.text() and "Re-embed" in dlg.message.text()
    dlg.vectors_model.setText("tiny-3")
    assert run_import(qtbot, dlg) == "done"
    with ms.open(dlg.report.output, read_only=True) as s:
        assert s.embedding_models() == [("tiny-3", 3, 3)]
    dlg.set_source(str(src))
    dlg.vectors_model.clear()
    dlg.reembed.setChecked(True)
    assert run_import(qtbot, dlg) == "done"
    with ms.open(dlg.report.output, read_only=True) as s:
        assert [(m, d) for m, d, _ in s.embedding_models()] == [("wordllama/l2_supercat-256", 256)]
    dlg.format.setCurrentText("ada-stream")  # a format that takes neither
    assert not dlg.reembed.isEnabled() and not dlg.vectors_model.isEnabled()


def drop(win, path):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    ev = QDropEvent(QPoint(50, 50), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    win.dropEvent(ev)


@needs_real
def test_dropping_a_persona_folder_opens_the_dialog_prefilled(qtbot, win):
    drop(win, REAL_PERSONA)
    dlg = win.import_dialog
    qtbot.addWidget(dlg)
    assert dlg.isVisible() and not dlg.running
    assert dlg.source.text() == str(REAL_PERSONA)
    assert dlg.format.currentText() == "generative-agents"
    assert os.path.basename(dlg.output.text()).startswith("Isabella_Rodriguez")


def test_dropping_a_jsonl_file_prefills_and_a_db_still_opens(qtbot, win, tmp_path):
    src = tmp_path / "stream.jsonl"
    src.write_text(json.dumps({"cycle": 1, "role": "dev", "action": "x", "content": "c"}) + "\n")
    drop(win, src)
    assert win.import_dialog.format.currentText() == "ada-stream"
    assert win.import_dialog.source.text() == str(src)
    db = tmp_path / "plain.db"
    ms.create(str(db)).close()
    import_dialog = win.import_dialog
    with qtbot.waitSignal(win.opened, timeout=20000):
        drop(win, db)
    assert win.import_dialog is import_dialog and win.state.data.store.path == str(db)


def test_default_output_names_the_persona_and_avoids_existing_files(tmp_path):
    imports = tmp_path / "userdata" / "imports"
    mem = tmp_path / "Klaus" / "bootstrap_memory" / "associative_memory"
    mem.mkdir(parents=True)
    assert default_output(str(mem)) == str(imports / "Klaus.db")
    (imports / "Klaus.db").touch()
    assert default_output(str(tmp_path / "Klaus")) == str(imports / "Klaus-2.db")


@needs_real
def test_imported_ga_store_starts_with_the_ga_preset(make_window, tmp_path):
    from memviz.importers import import_source
    out = tmp_path / "isabella.db"
    import_source("generative-agents", str(REAL_PERSONA / "bootstrap_memory"), str(out))
    win = make_window(out, settings="s.ini", timeout=60000)
    assert win.query.preset.currentText() == "generative-agents"
