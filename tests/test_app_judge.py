"""Judging and tuning in the window, on a copy of the assistant sample and its hand-judged set
(sample_dbs/assistant.judged.jsonl): marks on the results by key and by context menu, saving
them to a judged set (undoable from Edit ▸ Undo), the live readout following a slider on the
"judge" lane, near misses, a bad import refused with its lines, a fit accepted and undone, the
picture's marks, and unsaved marks never lost silently."""
from __future__ import annotations

import shutil
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

import memviz.store as ms
from memviz.app.controllers.judge_controller import user_name
from memviz.app.dialogs.help_dialogs import ShortcutsDialog
from memviz.app.dialogs.judge_dialogs import SaveJudgedDialog
from memviz.app.panels.judged_panel import ReadoutStrip
from memviz.app.plain_text import plain_tooltip
from memviz.edits import History
from memviz.judge import JudgedSet
from memviz.judge.stored import read_file_for, read_set, save_set
from memviz.session.query import Query
from memviz.store.clock import store_clock

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_dbs" / "assistant.db"
JUDGED = ROOT / "sample_dbs" / "assistant.judged.jsonl"
WAIT = 30000


@pytest.fixture
def sample(tmp_path):
    """A writable copy of the assistant sample."""
    return str(shutil.copy(SAMPLE, tmp_path / "assistant.db"))


@pytest.fixture
def judged_sample(sample):
    """The copy with the hand-judged set kept in it as "sample"."""
    store = ms.open(sample)
    History(store).perform(save_set(read_file_for(store, JUDGED, name="sample")))
    store.close()
    return sample


def run(qtbot, win, text):
    q = win.query
    q.text.setText(text)
    with qtbot.waitSignal(q.ranked, timeout=WAIT):
        q.run_query()
    qtbot.waitUntil(lambda: win.judge.book.current == Query("text", text), timeout=WAIT)


def readout(qtbot, win):
    """Wait for the readout of the setting in force; return it."""
    t = win.judge.tuning
    qtbot.waitUntil(lambda: t.readout is not None and t.readout.params == win.state.params
                    and not win.workers.running("judge readout"), timeout=WAIT)
    return t.readout


def show_judged(qtbot, win, picture=False):
    win.docks["judged"].show()
    win.docks["judged"].raise_()
    win.judged.tabs.setCurrentIndex(1 if picture else 0)
    qtbot.waitUntil(lambda: win.judge.shown, timeout=WAIT)


def test_marks_by_key_and_context_menu_saved_to_a_new_set_and_undone(qtbot, make_window, sample):
    win = make_window(sample)
    run(qtbot, win, "What is Lina allergic to?")
    q, book = win.query, win.judge.book
    ids = [str(m) for m in q.results.result.ids]
    grade_col = q.results.column_of("grade")
    assert q.view.isColumnHidden(grade_col)   # nothing judged in this store yet: no column of grades
    # keys 2 / 0 on the results with the focus: the selected rows are graded
    q.view.selectRow(0)
    q.view.setFocus()
    win.activateWindow()
    qtbot.waitUntil(q.view.hasFocus, timeout=5000)
    qtbot.keyClick(q.view, Qt.Key_2)
    assert book.grade(ids[0]) == 2
    q.view.selectRow(2)
    qtbot.keyClick(q.view, Qt.Key_0)
    assert book.grade(ids[2]) == 0
    assert not q.view.isColumnHidden(grade_col)
    assert q.results.data(q.results.index(0, grade_col)) == "★★"
    assert q.results.data(q.results.index(2, grade_col)) == "✕"
    # any memory, from the table's context menu: relevant (1) to the query on screen
    other = next(m for m in win.state.data.arrays.ids if m not in ids)
    menu = win.context_menu_for([other])
    act = next(a for a in menu.actions() if a.text() == "Relevant to the query (1)")
    act.trigger()
    assert book.grade(other) == 1
    assert "not saved" in win.marks_bar.note.text()
    assert win.judge.actions["save"].isEnabled()

    # save: a dialog, a new set, the query with its moment and who judged
    win.judge.actions["save"].trigger()
    dlg = win.judge.dialog
    assert isinstance(dlg, SaveJudgedDialog)
    dlg.set_box.setCurrentText("mine")
    assert "new judged set" in dlg.note.text()
    dlg.accept()
    qtbot.waitUntil(lambda: win.undo_stack.count() == 1, timeout=WAIT)
    store = win.state.data.store
    saved = read_set(store, "mine")
    (jq,) = saved.queries
    assert jq.query == "What is Lina allergic to?" and jq.like is None
    assert dict(jq.relevant) == {ids[0]: 2, ids[2]: 0, other: 1}
    assert jq.judged_by == user_name() and jq.judged_at is not None
    assert jq.as_of == pytest.approx(store_clock(store, win.state.loaded_arrays).now())
    assert "saved in mine" in win.marks_bar.note.text()
    strip = win.query.findChild(ReadoutStrip)  # the new set is chosen: its one query under the sliders
    qtbot.waitUntil(lambda: strip.caption.text().startswith("mine\n"), timeout=WAIT)
    assert strip.caption.text() == "mine\n1 query" and "(1 query)" in strip.toolTip()

    # Edit ▸ Undo takes the set back out; its marks are unsaved again; Redo writes it again
    win.undo_action.trigger()
    qtbot.waitUntil(lambda: "mine" not in dict(store.judged_sets()), timeout=WAIT)
    qtbot.waitUntil(lambda: "not saved" in win.marks_bar.note.text(), timeout=WAIT)
    win.redo_action.trigger()
    qtbot.waitUntil(lambda: "mine" in dict(store.judged_sets()), timeout=WAIT)
    assert read_set(store, "mine") == saved

    # the keys are in Help ▸ Keyboard shortcuts
    rows = win.show_shortcuts().table
    assert isinstance(win.help_dialog, ShortcutsDialog)
    shown = {(rows.topLevelItem(i).text(1), rows.topLevelItem(i).text(2)) for i in range(rows.topLevelItemCount())}
    assert {("Mark highly relevant", "2"), ("Mark relevant", "1"), ("Mark not relevant", "0")} <= shown
    win.help_dialog.close()


def test_a_slider_move_changes_the_readout_measured_on_the_judge_lane(qtbot, make_window, judged_sample, monkeypatch):
    win = make_window(judged_sample)
    jobs: dict[str, set] = {}
    on_gui: list[bool] = []
    real = win.workers.submit

    def spy(name, fn, **kw):   # records where each job runs; the job itself is the controller's
        jobs.setdefault(name, set()).add(kw.get("lane", "bg"))

        def traced(task):
            on_gui.append(threading.current_thread() is threading.main_thread())
            return fn(task)
        return real(name, traced, **kw)
    monkeypatch.setattr(win.workers, "submit", spy)
    show_judged(qtbot, win)
    assert win.judge.tuning.set_name == "sample"   # the store's set, chosen when the panel shows
    before = readout(qtbot, win)
    strip = win.query.below_settings.itemAt(0).widget()
    assert strip.isVisible() and strip.cells[1].value.text() == f"{before.now.means['ndcg@10']:.3f}"

    win.query.alpha.slider.setValue(win.query.alpha.slider.maximum())   # α 5: relevance first
    after = readout(qtbot, win)
    assert after.params.alpha == pytest.approx(5.0)
    assert after.now.means["ndcg@10"] != pytest.approx(before.now.means["ndcg@10"])
    assert strip.cells[1].value.text() == f"{after.now.means['ndcg@10']:.3f}"
    assert after.wins.better + after.wins.worse > 0     # per query, against the preset's defaults
    assert jobs["judge readout"] == {"judge"} and jobs["judge prepare"] == {"judge"}
    assert on_gui and not any(on_gui)


def test_near_misses_of_a_judged_query_and_choosing_one(qtbot, make_window, judged_sample):
    win = make_window(judged_sample)
    show_judged(qtbot, win)
    readout(qtbot, win)
    win.judge.choose_query("morning-drink")   # its two relevant memories rank far below k under the defaults
    t = win.judge.tuning
    qtbot.waitUntil(lambda: t.readout is not None and t.readout.query_id == "morning-drink"
                    and not win.workers.running("query"), timeout=WAIT)
    assert win.query.model.query == Query("text", "What does Elena drink in the morning these days?")
    near = t.readout.near
    k = int(win.state.params.k)
    assert len(near) == 2 and all(h.rank is not None and h.rank > k for h in near)
    model = win.judged.near
    assert model.rowCount() == 2 and model.rows[0][1] == str(near[0].rank)
    assert model.rows[0][3].startswith(near[0].component)
    jq = t.judged.by_id()["morning-drink"]
    assert win.judge.book.grade(near[0].memory_id) == jq.relevant[near[0].memory_id]   # its grades are the marks
    # clicking a near miss selects it in every panel
    view = win.judged.near_view
    rect = view.visualRect(model.index(1, 3))
    qtbot.mouseClick(view.viewport(), Qt.LeftButton, pos=rect.center())
    assert win.state.selected_ids == [near[1].memory_id]
    qtbot.waitUntil(lambda: win.detail.shown_id == near[1].memory_id, timeout=WAIT)


def test_a_bad_jsonl_import_names_its_lines_and_changes_nothing(qtbot, make_window, sample, tmp_path):
    win = make_window(sample)
    store = win.state.data.store
    real = str(win.state.data.arrays.ids[0])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(f'{{"id": "ok", "query": "fine", "relevant": {{"{real}": 2}}}}\n'
                   '{"id": "b", "query": "who", "relevant": {"no-such-memory": 1}}\n'
                   'not json at all\n', encoding="utf-8")
    win.judge.import_file(str(bad))
    qtbot.waitUntil(lambda: win.error_box is not None and win.error_box.isVisible(), timeout=WAIT)
    text = win.error_box.text()
    assert f"{bad}:2:" in text and f"{bad}:3:" in text and "nothing was read" in text
    assert win.error_box.textFormat() == Qt.PlainText
    assert store.judged_sets() == [] and win.undo_stack.count() == 0
    win.error_box.close()
    # the same file fixed is imported whole, undoably
    good = tmp_path / "good.jsonl"
    good.write_text(bad.read_text().splitlines()[0] + "\n", encoding="utf-8")
    win.judge.import_file(str(good))
    qtbot.waitUntil(lambda: dict(store.judged_sets()).get("good") == 1, timeout=WAIT)
    qtbot.waitUntil(lambda: win.undo_stack.count() == 1, timeout=WAIT)
    assert win.judge.tuning.set_name == "good"


def test_fit_accepted_becomes_a_parameter_set_and_undo_takes_it_back(qtbot, make_window, judged_sample):
    win = make_window(judged_sample)
    show_judged(qtbot, win, picture=True)
    readout(qtbot, win)
    start = win.state.params
    dlg = win.judge.fit()
    qtbot.waitUntil(lambda: dlg.report is not None, timeout=WAIT)
    report = dlg.report
    assert report.recommended and "Recommended" in dlg.verdict.text()
    assert win.state.params == start   # nothing is applied before Accept
    # what would change: the judged queries' top k, and the agent's own queries (not recorded here)
    qtbot.waitUntil(lambda: dlg.changes.topLevelItemCount() == 2, timeout=WAIT)
    assert dlg.changes.topLevelItem(0).text(0).startswith("Judged queries whose top k changes:")
    assert dlg.changes.topLevelItem(0).childCount() > 0
    assert "does not record them" in dlg.changes.topLevelItem(1).text(0)
    for i in range(2):   # a heading takes both columns (the second holds only ranks), whole in its tooltip
        head = dlg.changes.topLevelItem(i)
        assert head.isFirstColumnSpanned() and head.toolTip(0) == plain_tooltip(head.text(0))

    # the picture marks the setting in force and the fitted point
    pic = win.judged.picture
    t = win.judge.tuning
    qtbot.waitUntil(lambda: t.grid is not None and t.grid.params == win.state.params and pic.grid is t.grid,
                    timeout=WAIT)
    g = t.grid
    assert (g.x.name, g.y.name) == ("alpha", "beta") and g.values.shape == (len(g.y.values), len(g.x.values))
    cx, cy = pic.current.getData()
    assert (cx[0], cy[0]) == pytest.approx((start.alpha, start.beta))
    fx, fy = pic.fitted.getData()
    assert (fx[0], fy[0]) == pytest.approx((report.fitted["alpha"], report.fitted["beta"]))
    assert np.isfinite(g.values).all()

    dlg.name.setText("tuned")
    dlg.accept_button.click()
    store = win.state.data.store
    assert "tuned" in [s.name for s in store.parameter_sets()]
    now = win.state.params
    assert (now.alpha, now.beta, now.gamma, now.tau_hours) == pytest.approx(
        (report.fitted["alpha"], report.fitted["beta"], report.fitted["gamma"], report.fitted["tau_hours"]))
    assert win.query.preset.currentText() == "tuned"   # selectable like a preset
    qtbot.waitUntil(lambda: pic.current.getData()[0][0] == pytest.approx(report.fitted["alpha"]), timeout=WAIT)

    win.undo_action.trigger()   # Edit ▸ Undo: the set is gone, the sliders back where they were
    qtbot.waitUntil(lambda: "tuned" not in [s.name for s in store.parameter_sets()], timeout=WAIT)
    qtbot.waitUntil(lambda: win.state.params.alpha == start.alpha, timeout=WAIT)
    assert (win.state.params.beta, win.state.params.tau_hours) == (start.beta, start.tau_hours)
    assert win.query.preset.currentText() == "dual-memory"
    assert win.query.alpha.value() == pytest.approx(start.alpha)
    win.redo_action.trigger()
    qtbot.waitUntil(lambda: win.query.preset.currentText() == "tuned", timeout=WAIT)
    assert win.state.params.alpha == pytest.approx(report.fitted["alpha"])
    dlg.close()


def test_unsaved_marks_are_kept_per_query_and_asked_about_at_quit(qtbot, make_window, sample):
    win = make_window(sample)
    run(qtbot, win, "What food does Tom like?")
    first = str(win.query.results.result.ids[0])
    win.judge.mark([first], 2)
    run(qtbot, win, "When is the Beacon launch?")
    assert win.judge.book.grade(first) is None            # marks belong to their query…
    assert win.marks_bar.others.isVisibleTo(win.marks_bar) and "1 other" in win.marks_bar.others.text()
    run(qtbot, win, "What food does Tom like?")
    assert win.judge.book.grade(first) == 2               # …and come back with it

    win.close()                                            # asked, not closed
    box = win.judge.dialog
    assert isinstance(box, QMessageBox) and box.isVisible() and "not saved" in box.text()
    assert win.isVisible()
    discard = next(b for b in box.buttons() if b.text() == "Discard and quit")
    discard.click()
    qtbot.waitUntil(lambda: not win.isVisible(), timeout=WAIT)


def test_store_text_in_the_judging_parts_shows_as_plain_text(qtbot, make_window, tmp_path):
    from test_app_plain_text import Leaks, build_html_store, html
    path = build_html_store(tmp_path / "html")
    win = make_window(path, size=(1400, 900))
    leaks = Leaks()
    q, judge = win.query, win.judge
    for text in ("peanuts recipe", "trip to Brazil"):   # two judged queries, in a set named in HTML
        run(qtbot, win, text)
        ids = [str(m) for m in q.results.result.ids]
        judge.mark(ids[:2], 2)
        judge.mark(ids[2:3], 0)
        leaks.look(f"marked for {text}")
        assert judge.save(html("set"), html(f"q-{text[:4]}"))
    show_judged(qtbot, win)
    readout(qtbot, win)
    judge.choose_query(html("q-pean"))
    qtbot.waitUntil(lambda: judge.tuning.readout is not None and judge.tuning.readout.query_id == html("q-pean")
                    and not win.workers.running("query"), timeout=WAIT)
    judge.mark([str(win.state.data.arrays.ids[-1])], 1)   # a memory below the cut: a near miss next time
    leaks.look("the judged panel and its readout")
    win.judged.tabs.setCurrentIndex(1)
    qtbot.waitUntil(lambda: judge.tuning.grid is not None and win.judged.picture.grid is judge.tuning.grid, timeout=WAIT)
    dlg = judge.fit()
    qtbot.waitUntil(lambda: dlg.report is not None and dlg.changes.topLevelItemCount() == 2, timeout=WAIT)
    dlg.changes.expandAll()
    leaks.look("the fit's report")
    win.judge.actions["save"].trigger()
    leaks.look("the save dialog")
    judge.dialog.reject()
    dlg.close()
    judge.book.discard()
    leaks.check()


def test_the_readout_leaves_the_results_eight_rows_at_1100x700(qtbot, make_window, judged_sample):
    win = make_window(judged_sample, size=(1100, 700))
    win.reset_docks()
    show_judged(qtbot, win)
    readout(qtbot, win)
    run(qtbot, win, "What does Elena drink in the morning these days?")
    strip = win.query.below_settings.itemAt(0).widget()
    assert strip.isVisible() and win.marks_bar.isVisible()
    assert win.query.rows_visible() >= 8
    assert all(c.value.width() >= c.value.sizeHint().width() for c in strip.cells)   # the numbers whole


def test_a_memory_the_agent_retires_is_measured_again(qtbot, make_window, judged_sample):
    """A live refresh prepares the evaluator again: a relevant memory retired before the judged
    query's moment is no candidate any more, and its query's measure drops."""
    win = make_window(judged_sample)
    show_judged(qtbot, win)
    t = win.judge.tuning
    first = readout(qtbot, win)
    ev = t.evaluator
    was = first.now.per_query["lina-allergy"]["ndcg@10"]
    agent = ms.open(judged_sample)   # the agent's own connection
    try:
        fact = "2bd8145952a1a97f1c13f92fc6525f03"   # "Lina is allergic to peanuts; …", graded 2
        agent.set_valid_until(fact, t.judged.by_id()["lina-allergy"].as_of - 3600)
    finally:
        agent.close()
    qtbot.waitUntil(lambda: t.evaluator is not None and t.evaluator is not ev and t.readout is not None
                    and t.readout.evaluator is t.evaluator, timeout=WAIT)
    assert t.readout.now.per_query["lina-allergy"]["ndcg@10"] < was
    win.judge.choose_query("lina-allergy")   # its near misses: the fact is no candidate now
    qtbot.waitUntil(lambda: t.readout.query_id == "lina-allergy" and not win.workers.running("query"), timeout=WAIT)
    (gone,) = [h for h in t.readout.near if h.memory_id == fact]
    row = next(r for r in win.judged.near.rows if r[0] == fact)
    assert gone.rank is None and row[1:4] == ("—", "★★", "not a candidate")


def test_a_read_only_store_keeps_marks_but_writes_nothing(qtbot, make_window, judged_sample):
    win = make_window(judged_sample, read_only=True)
    run(qtbot, win, "What food does Tom like?")
    win.judge.mark([str(win.query.results.result.ids[0])], 2)
    save = win.judge.actions["save"]
    assert not save.isEnabled() and "read-only" in save.toolTip()
    assert not win.judge.save("mine", "tom")
    assert not win.judge.actions["import"].isEnabled()
    show_judged(qtbot, win)
    readout(qtbot, win)                       # a read-only store is still measured
    dlg = win.judge.fit()                     # a fit is shown, and cannot be accepted
    qtbot.waitUntil(lambda: dlg.report is not None, timeout=WAIT)
    assert not dlg.accept_button.isEnabled() and "read-only" in dlg.accept_button.toolTip()
    dlg.close()
    win.query.preset.setCurrentText("hybrid")  # nothing to fit: Fit… says why
    qtbot.waitUntil(lambda: not win.judge.actions["fit"].isEnabled(), timeout=WAIT)
    assert "no weights or knobs" in win.judge.actions["fit"].toolTip()
    win.judge.book.discard()


def test_deleting_a_judged_query_and_a_set_is_undone_from_the_edit_menu(qtbot, make_window, judged_sample):
    win = make_window(judged_sample)
    show_judged(qtbot, win)
    readout(qtbot, win)
    t, store = win.judge.tuning, win.state.data.store
    win.judge.choose_query("tom-food")
    assert win.judge.actions["delete_query"].isEnabled()
    win.judge.actions["delete_query"].trigger()
    qtbot.waitUntil(lambda: t.judged is not None and len(t.judged) == 17 and "tom-food" not in t.judged.ids, timeout=WAIT)
    assert win.judged.queries.rowCount() == 17
    qtbot.waitUntil(lambda: len(readout(qtbot, win).now.query_ids) == 17, timeout=WAIT)   # measured again
    qtbot.waitUntil(lambda: win.undo_stack.count() == 1, timeout=WAIT)
    win.judge.actions["delete_set"].trigger()
    qtbot.waitUntil(lambda: store.judged_sets() == [] and t.set_name is None, timeout=WAIT)
    assert not win.query.below_settings.itemAt(0).widget().isVisible()   # no set: no readout strip
    qtbot.waitUntil(lambda: win.undo_stack.index() == 2 and win.undo_action.isEnabled(), timeout=WAIT)
    win.undo_action.trigger()
    qtbot.waitUntil(lambda: dict(store.judged_sets()).get("sample") == 17, timeout=WAIT)
    qtbot.waitUntil(lambda: win.undo_stack.index() == 1 and win.undo_action.isEnabled(), timeout=WAIT)
    win.undo_action.trigger()
    qtbot.waitUntil(lambda: dict(store.judged_sets()).get("sample") == 18, timeout=WAIT)
    assert read_set(store, "sample").by_id()["tom-food"].query == "What food does Tom like?"


def test_a_corrected_memory_keeps_its_grade_on_the_new_one(qtbot, make_window, judged_sample):
    """Correct a memory graded for the query on screen: the memory that replaces it shows the
    grade (↳★★) in the results, and the readout measures it as the relevant one (the judged
    query asked now, not at a moment before the correction)."""
    store = ms.open(judged_sample)
    jq = read_set(store, "sample").by_id()["lina-allergy"]
    History(store).perform(save_set(JudgedSet("sample", (replace(jq, as_of=None),))))
    store.close()
    win = make_window(judged_sample)
    show_judged(qtbot, win)
    t = win.judge.tuning
    readout(qtbot, win)
    win.judge.choose_query("lina-allergy")
    qtbot.waitUntil(lambda: t.readout.query_id == "lina-allergy" and not win.workers.running("query"), timeout=WAIT)
    fact = "2bd8145952a1a97f1c13f92fc6525f03"   # "Lina is allergic to peanuts; …", graded 2
    assert win.judge.book.grade(fact) == 2
    was = t.readout.now.per_query["lina-allergy"]
    win.state.select_ids([fact])
    menu = win.context_menu_for([fact])
    next(a for a in menu.actions() if a.objectName() == "edit_correct").trigger()
    dlg = win.edits.dialog
    dlg.new_text.setPlainText(dlg.old_text.toPlainText() + " Confirmed by her doctor in March.")
    ev = t.evaluator
    dlg.accept()
    qtbot.waitUntil(lambda: win.undo_stack.count() == 1, timeout=WAIT)
    new = next(m for m in win.state.selected_ids if m != fact)
    assert win.judge.grade_text(new) == "↳★★" and win.judge.grade_text(fact) == "★★"
    # the measure moved the saved grade to the new memory too: the query's figures hold
    qtbot.waitUntil(lambda: t.evaluator is not None and t.evaluator is not ev and t.readout is not None
                    and t.readout.evaluator is t.evaluator, timeout=WAIT)
    assert dict(t.evaluator.measured.by_id()["lina-allergy"].relevant).get(new) == 2
    assert fact not in t.evaluator.measured.by_id()["lina-allergy"].relevant
    assert t.readout.now.per_query["lina-allergy"]["recall@10"] == was["recall@10"]
    # the query chosen again (its saved grades read again): the replacement keeps its ↳
    win.judge.choose_query("lina-allergy")
    qtbot.waitUntil(lambda: not win.workers.running("query"), timeout=WAIT)
    assert win.judge.grade_text(new) == "↳★★"
    # another session on the same store: the ↳ comes from the store's corrections, as the measure's does
    win.close()
    again = make_window(judged_sample)
    show_judged(qtbot, again)
    readout(qtbot, again)
    again.judge.choose_query("lina-allergy")
    qtbot.waitUntil(lambda: again.judge.grade_text(new) == "↳★★", timeout=WAIT)
    assert again.judge.grade_text(fact) == "★★"


def test_the_summary_of_wins_and_losses_is_never_cut_in_a_narrow_window(qtbot, make_window, judged_sample):
    win = make_window(judged_sample, size=(1100, 700))
    show_judged(qtbot, win)
    readout(qtbot, win)
    label = win.judged.compare
    qtbot.waitUntil(lambda: label.text().startswith("mean "), timeout=WAIT)
    fm = label.fontMetrics()
    assert fm.horizontalAdvance(label.text()) > label.width()   # longer than the room: it wraps
    qtbot.waitUntil(lambda: label.height() >= 2 * fm.lineSpacing(), timeout=WAIT)
