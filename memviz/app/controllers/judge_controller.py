"""Judging and tuning in the window: marks on the query's results, judged sets kept with the
store, the live quality readout, its picture, and a fit.

`JudgeController(state, workers, query_model, perform, dialog_parent, targets=…)` holds the two Qt-free
models of memviz.session.judging (`book`: the marks; `tuning`: the judged set measured and what
the readout shows), owns the QActions (mark 2 / 1 / 0, clear, save to a set, import, export,
delete, pin, fit: `actions`, marking what `targets()` names: the results selected while they have
the focus, else the window's selection; fresh ones for a context menu from `context_actions(ids)`), runs
the models' jobs on the "judge" lane and writes through `perform` (the EditController's: every
change of a judged set or parameter set is a step of the window's undo history). It talks back
with signals: `message`, `error`, `run_requested(Query)` (the query panel runs it),
`choices_changed(list[ParameterSet])` (the preset list), `marks_changed()` (the grade column),
`judging_changed(bool)` (whether there is anything to show in that column: marks or judged
sets; a window whose user does not judge keeps the results' room for their text).

While a judged set is chosen (the judged panel's list; the first one when the panel is first
shown): the evaluator's precompute (a job with progress and cancel, made again when the setting
needs another one — `JudgedEvaluator.accepts` — or the store changed) and the readout after each
change of the setting (paced by its own cost; a setting superseded meanwhile is never
measured). While the panel's picture is in view (`set_shown`, `set_picture_shown`): the picture
(paced, redrawn when something it does not draw changes).
"""
from __future__ import annotations

import getpass
import os
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from memviz.app.dialogs.judge_dialogs import FitDialog, SaveJudgedDialog
from memviz.app.panels.query_panel import ResultColumn
from memviz.app.plain_text import plain_tooltip
from memviz.app.plots import style
from memviz.app.workers import PacedCall, Workers
from memviz.judge import InvalidJudgment, JudgedFileError, JudgedQuery, write_jsonl, write_trec
from memviz.judge.stored import (
    StoredSetError,
    delete_queries,
    delete_set,
    read_file_for,
    read_set,
    save_parameters,
    save_query,
    save_set,
    saved_parameter_sets,
)
from memviz.judge.tune import NothingToFit, fit_space, fitted_set
from memviz.retrieval import Params
from memviz.retrieval.presets import parameter_sets, preset
from memviz.session.judging import GRADE_NAMES, MarkBook, Tuning, grade_mark, judged_query, query_of, suggest_id
from memviz.session.query import QueryModel
from memviz.session.state import AppState
from memviz.store.clock import store_clock
from memviz.store.errors import StoreError

LANE = "judge"
#: a readout may take this share of the judge lane's thread while a slider moves
READOUT_SHARE = 0.5
GRID_SHARE = 0.3
#: re-preparing after the agent wrote: at most this share of the thread
STALE_SHARE = 0.2
#: the marks' actions: key -> the grade it gives (None: it takes the grade off)
GRADE_OF = {f"mark{g}": g for g in GRADE_NAMES} | {"unmark": None}
MARK_KEYS = tuple(GRADE_OF)
#: (key, menu text, shortcut, status tip); the marks' keys work while the results have the focus
ACTIONS = (
    *((f"mark{g}", f"Mark &{name}", str(g), f"Grade the selected results {name} ({g}) for the query on screen")
      for g, name in GRADE_NAMES.items()),
    ("unmark", "C&lear mark", "Backspace", "Take the grade off the selected results"),
    ("save", "&Save query to judged set…", "Ctrl+S", "Keep the query on screen, its moment, filters and marks in a "
                                                    "judged set of the store"),
    ("import", "&Import judged set…", "", "Read a judged set from a JSON Lines file and keep it with the store"),
    ("import_trec", "Import TREC qrels + topics…", "", "Read a judged set from TREC qrels and topics files"),
    ("export", "&Export judged set…", "", "Write the judged set chosen to a JSON Lines file (or TREC qrels + topics)"),
    ("delete_query", "Delete judged &query", "", "Remove the judged query chosen from its set (undoable)"),
    ("delete_set", "Delete judged se&t", "", "Remove the judged set chosen from the store (undoable)"),
    ("pin", "&Pin setting as the readout's baseline", "", "Compare every later setting with this one, query by "
                                                          "query; unpinned, the readout compares with the preset's defaults"),
    ("fit", "&Fit weights…", "", "Search the preset's weights and knobs for the best measure over the judged set, "
                                 "cross-validated; nothing changes until you accept"),
)


def user_name() -> str:
    """Who judged: the OS user."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no such user entry (a container's uid): what the environment says
        return os.environ.get("USER") or os.environ.get("USERNAME") or ""


def same_setting(a: Params, b: Params) -> bool:
    """The same preset and the same weights, knobs and k."""
    return a.preset == b.preset and all(getattr(a, f) == getattr(b, f) for f in preset(a.preset).settings)


class JudgeController(QObject):
    """See the module docstring."""

    message = Signal(str, int)
    error = Signal(str, str)
    run_requested = Signal(object)
    choices_changed = Signal(list)
    marks_changed = Signal()
    judging_changed = Signal(bool)

    def __init__(self, state: AppState, workers: Workers, query_model: QueryModel, perform,
                 dialog_parent: QWidget | None = None, *, targets: Callable[[], list[str]] | None = None) -> None:
        super().__init__(dialog_parent)
        self.targets = targets or (lambda: self.state.selected_ids)
        self.state, self.workers, self.query_model, self.perform = state, workers, query_model, perform
        self.dialog_parent = dialog_parent
        self.book = MarkBook()
        self.tuning = Tuning()
        self.shown = False                    # the judged panel is in view
        self.picture_shown = False            # …with its picture
        self.dialog = None                    # the dialog shown last (tests drive it; kept from collection)
        self.fit_dialog: FitDialog | None = None
        self._applied: tuple[str, Params, Params] | None = None   # an accepted fit: (its set, before, after)
        self._store = None
        self._judging_shown: bool | None = None
        self.actions: dict[str, QAction] = {}
        for key, text, shortcut, tip in ACTIONS:
            act = QAction(text, self)
            if shortcut:
                act.setShortcut(QKeySequence(shortcut))
            act.setStatusTip(tip)
            act.setToolTip(tip + (f" ({shortcut})" if shortcut else ""))
            self.actions[key] = act
        for key in MARK_KEYS:
            # the keys work where the results have the focus (digits typed elsewhere stay text)
            self.actions[key].setShortcutContext(Qt.WidgetWithChildrenShortcut)
            self.actions[key].triggered.connect(lambda _=False, k=key: self.mark(self.targets(), GRADE_OF[k]))
        self.actions["save"].setShortcutContext(Qt.WindowShortcut)
        self.actions["save"].triggered.connect(self.save_marks)
        self.actions["import"].triggered.connect(self.choose_import_file)
        self.actions["import_trec"].triggered.connect(self.choose_trec_files)
        self.actions["export"].triggered.connect(self.choose_export_file)
        self.actions["delete_query"].triggered.connect(lambda: self.delete_query(self.tuning.query_id))
        self.actions["delete_set"].triggered.connect(lambda: self.delete_set(self.tuning.set_name))
        self.actions["pin"].setCheckable(True)
        self.actions["pin"].toggled.connect(self.pin)
        self.actions["fit"].triggered.connect(self.fit)
        self._readout = PacedCall(self._start_readout, self, share=READOUT_SHARE, max_ms=500, job=True)
        self._grid = PacedCall(self._start_grid, self, share=GRID_SHARE, max_ms=3000, job=True)
        self._reprepare = PacedCall(self._prepare_if_needed, self, share=STALE_SHARE, max_ms=30_000, job=True)
        workers.finished.connect(self._job_ended)
        self.book.changed.connect(self._marks_changed)
        query_model.query_changed.connect(self.book.show)
        state.data_changed.connect(self._on_data)
        state.rows_changed.connect(self._on_rows)
        state.params_changed.connect(lambda params, source: self.setting_changed())
        self._on_data(state.data)

    # ------------------------------------------------------------ the store
    @property
    def store(self):
        return None if self.state.data is None else self.state.data.store

    def _on_data(self, data) -> None:
        store = None if data is None else data.store
        if store is not self._store or not self.state.reloaded:
            self._stop_jobs()
            self._store = store
            kept = self.book.open_store(None if store is None else store.path)
            if kept:
                self.message.emit(f"Your unsaved marks on {kept} quer{'y' if kept == 1 else 'ies'} are kept: open that "
                                  "store again to save them", 10000)
            self.tuning.pin(None)
            self.actions["pin"].setChecked(False)
            self.tuning.fitted(None, None)
            self._applied = None
            self.tuning.choose(None)
            self.read_records(choose_first=self.shown)
        else:  # the same store read again: what is measured stays, on the new arrays
            self.tuning.stale = True
            self.read_records()
        self._update_enabled()

    def _on_rows(self, delta) -> None:
        """The agent wrote: the evaluator is prepared again, paced (judged queries fix their
        moment, so new memories rarely change a measure; changed ones may)."""
        if self.tuning.evaluator is not None:
            self.tuning.stale = True
            self._reprepare.request()

    def edited(self, outcome) -> None:
        """A step of the history was taken (an edit, an undo, a save of marks): a corrected
        memory's grades show on what replaced it; the judged sets are read again."""
        self.book.follow(outcome.replaced)
        self.read_records()

    def read_records(self, choose_first: bool = False) -> None:
        """Read the store's judged sets, the one measured and the saved parameter sets again (after
        an open, or a step of the history: a save, a delete, an undo)."""
        store = self.store
        try:
            sets = [] if store is None else store.judged_sets()
            saved = [] if store is None else saved_parameter_sets(store)
        except (StoreError, StoredSetError) as e:
            self.message.emit(f"The judged sets kept with the store cannot be read: {e}", 10000)
            sets, saved = [], []
        self.choices_changed.emit(parameter_sets(saved))
        self.tuning.set_sets(sets)
        self._judging()
        names = [n for n, _ in sets]
        if self.tuning.set_name not in names:
            self.tuning.choose(names[0] if names and (choose_first or self.tuning.set_name is not None) else None)
        self._read_chosen()
        for name in {m.set_name for m in self.book.by_query.values() if m.set_name}:
            try:
                ids = set() if store is None else {r.query_id for r in store.judged_queries(name)}
            except StoreError:
                continue
            self.book.forget_saved(name, ids.__contains__)
        self._follow_applied(saved)

    def _read_chosen(self) -> None:
        name, store = self.tuning.set_name, self.store
        if name is None or store is None:
            self.tuning.set_judged(None)
            self.tuning.say("No judged set yet: mark results of a query (keys 2, 1, 0) and save it (Ctrl+S), or import one"
                            if not self.tuning.sets else "Choose a judged set")
            return
        try:
            judged = read_set(store, name)
        except (KeyError, StoredSetError, StoreError) as e:
            self.tuning.set_judged(None)
            self.tuning.say(str(e.args[0] if isinstance(e, KeyError) else e))
            return
        if self.tuning.set_judged(judged):
            self.tuning.readout_changed.emit()
            self.tuning.grid_changed.emit()
            self.setting_changed()

    def choose_set(self, name: str | None) -> None:
        """Measure the judged set `name` (the panel's list)."""
        if name == self.tuning.set_name:
            return
        self._stop_jobs()
        self.tuning.choose(name)
        self._read_chosen()
        self._update_enabled()
        self.setting_changed()

    def set_shown(self, shown: bool) -> None:
        """The judged panel is in view: with nothing measured yet, the store's first judged set is."""
        self.shown = bool(shown)
        if self.shown and self.tuning.set_name is None and self.tuning.sets:
            self.choose_set(self.tuning.sets[0][0])
        elif self.shown:
            self.setting_changed()

    def set_picture_shown(self, shown: bool) -> None:
        """The panel's picture is in view (it is drawn only then)."""
        self.picture_shown = bool(shown)
        self.setting_changed()

    # ------------------------------------------------------------ jobs on the judge lane
    def _stop_jobs(self) -> None:
        for name, call in (("judge readout", self._readout), ("judge grid", self._grid),
                           ("judge prepare", self._reprepare)):
            self.workers.cancel(name)
            call.cancel()

    def _job_ended(self, name: str) -> None:
        """A precompute that ended without an answer (the status bar's Cancel) releases its pacer
        and says so (one that answered has done both; this runs after its answer)."""
        if name == "judge prepare":
            QTimer.singleShot(0, self, self._prepare_ended)

    def _prepare_ended(self) -> None:
        if self.workers.running("judge prepare"):
            return
        self._reprepare.finished(None)
        t = self.tuning
        if t.judged is not None and self.state.data is not None and t.needs_evaluator(self.state.params) \
                and t.status.startswith("Preparing"):
            t.say(f"Not measured: preparing {t.set_name} was cancelled (choose the set again to measure it)")

    def setting_changed(self) -> None:
        """The setting (or the set, or what the panel shows) changed: the readout follows."""
        self._update_fit()
        if self.state.data is None or self.tuning.judged is None:
            return
        if self.tuning.needs_evaluator(self.state.params):
            if not self.workers.running("judge prepare"):
                self._prepare_if_needed()
            return
        self._readout.request()
        if not (self.shown and self.picture_shown):
            return
        if self.tuning.grid_wanted(self.state.params):
            self._grid.request()
        else:
            self.tuning.grid_changed.emit()   # the current point moved

    def _prepare_if_needed(self) -> bool:
        """Start the evaluator's precompute when the setting or the store needs one; whether it started."""
        t, params = self.tuning, self.state.params
        if self.state.data is None or not t.needs_evaluator(params):
            return False
        n = len(t.judged)
        t.say(f"Preparing {t.set_name}: ranking its {n} judged quer{'y' if n == 1 else 'ies'} …")
        started = time.perf_counter()

        def done(ev) -> None:
            self._reprepare.finished(time.perf_counter() - started)
            t.prepared(ev)
            t.say("")
            measured = self._measured(t.query_id)   # the query on screen's grades on what replaced its memories
            if measured is not None and t.evaluator is ev:
                self.book.measured_as(query_of(t.judged.by_id()[t.query_id]), measured)
            self.setting_changed()

        def failed(e: Exception) -> None:
            self._reprepare.finished(None)
            t.say(f"The judged set {t.set_name} cannot be measured: {e}")
        self.workers.submit("judge prepare", t.prepare_job(self.store, self.state.loaded_arrays, params),
                            on_done=done, on_error=failed, lane=LANE)
        return True

    def _start_readout(self) -> bool:
        t, params = self.tuning, self.state.params
        if t.evaluator is None or t.needs_evaluator(params):
            return False
        if t.pinned is not None and t.evaluator.accepts(t.pinned) is not None:   # pinned under another preset
            t.pin(None)
            self.actions["pin"].blockSignals(True)
            self.actions["pin"].setChecked(False)
            self.actions["pin"].blockSignals(False)

        def done(readout) -> None:
            self._readout.finished(readout.cost)
            t.read_out(readout)

        def failed(e: Exception) -> None:
            self._readout.finished(None)
            t.say(f"The readout failed: {e}")
        self.workers.submit("judge readout", t.readout_job(params), on_done=done, on_error=failed, lane=LANE)
        return True

    def _start_grid(self) -> bool:
        t, params = self.tuning, self.state.params
        if t.evaluator is None or t.needs_evaluator(params) or not t.grid_wanted(params) or not self.picture_shown:
            return False
        side = t.picture_side()
        started = time.perf_counter()

        def done(grid) -> None:
            took = time.perf_counter() - started
            self._grid.finished(took)
            t.drawn(grid, took)
            if t.grid_wanted(self.state.params):  # the setting moved on meanwhile
                self._grid.request()

        def failed(e: Exception) -> None:
            self._grid.finished(None)
            t.say(f"The picture failed: {e}")
        self.workers.submit("judge grid", t.grid_job(params, side), on_done=done, on_error=failed, lane=LANE)
        return True

    def set_measure(self, family: str) -> None:
        self.tuning.family = family
        self.setting_changed()

    def set_axes(self, x: str, y: str) -> None:
        self.tuning.axes = (x, y)
        self.setting_changed()

    # ------------------------------------------------------------ marks
    def _marks_changed(self) -> None:
        self._update_enabled()
        self.marks_changed.emit()
        self._judging()

    def judging(self) -> bool:
        """Whether the user judges in this store: marks given, or judged sets kept."""
        return bool(self.book.by_query) or bool(self.tuning.sets)

    def _judging(self) -> None:
        on = self.judging()
        if on != self._judging_shown:
            self._judging_shown = on
            self.judging_changed.emit(on)

    def mark(self, ids: list[str], grade: int | None) -> None:
        """Grade `ids` for the query on screen (None: take the mark off)."""
        ids = [i for i in ids if i]
        if not ids:
            self.message.emit("Select a result (or a memory anywhere) to mark first", 5000)
            return
        try:
            m = self.book.mark(ids, grade)
        except ValueError as e:
            self.message.emit(str(e)[0].upper() + str(e)[1:], 6000)
            return
        what = "unmarked" if grade is None else f"marked {GRADE_NAMES[grade]}"
        n = len(ids)
        self.message.emit(f"{n} memor{'y' if n == 1 else 'ies'} {what} for {m.title()}"
                          + (" · not saved yet (Ctrl+S saves the query with its marks)" if m.dirty else ""), 6000)

    def context_actions(self, ids: list[str]) -> list[QAction]:
        """Grade the memories chosen anywhere (table, map, detail, results) for the query on screen."""
        if self.state.data is None or not ids:
            return []
        current = self.book.current
        out = []
        for key, text in (("mark2", "Highly relevant to the query (2)"), ("mark1", "Relevant to the query (1)"),
                          ("mark0", "Not relevant to the query (0)"), ("unmark", "Clear the mark for the query")):
            if key == "unmark" and not any(self.book.grade(i) is not None for i in ids):
                continue
            act = QAction(text, self)
            act.setObjectName(f"judge_{key}")
            act.setEnabled(current is not None)
            act.setStatusTip(self.actions[key].statusTip())
            if current is None:
                act.setToolTip("Run a query first: a mark grades a memory for the query on screen")
            act.triggered.connect(lambda _=False, g=GRADE_OF[key], i=list(ids): self.mark(i, g))
            out.append(act)
        return out

    def grade_column(self) -> ResultColumn:
        """The results' column of the user's grades for the query on screen."""
        def color(text: str):
            return None if not text else style.color(style.theme().down if text.endswith("✕") else style.theme().up)
        return ResultColumn("grade", lambda m, i, r: self.grade_text(m.data_.arrays.ids[r]), 44, 40,
                            "Your grade for the query on screen: ★★ highly relevant (2), ★ relevant (1), ✕ not "
                            "relevant (0); ↳ the grade of the memory this one corrected (the measure moves it here "
                            "for queries asked after the correction). Keys 2, 1, 0 grade the selected results; "
                            "Backspace clears", right=False,
                            color=color)

    def grade_text(self, memory_id: str) -> str:
        """What the results' grade column shows for a memory (its mark for the query on screen)."""
        own = self.book.grade(memory_id)
        if own is not None:
            return grade_mark(own)
        inherited = self.book.inherited(memory_id)
        return "" if inherited is None else "↳" + grade_mark(inherited)

    # ------------------------------------------------------------ saving marks
    def save_refusal(self) -> str | None:
        m, store = self.book.marks, self.store
        if store is None:
            return "no store is open"
        if store.read_only:
            return f"the store is open read-only: {store.read_only_reason}"
        if m is None or not m.grades:
            return "mark results of the query on screen first (keys 2, 1, 0)"
        if not m.savable:
            return "mark at least one memory relevant (1) or highly relevant (2): a judged query needs something to find"
        return None

    def save_marks(self) -> None:
        """The query on screen and its marks into a judged set (a dialog: which set, which id)."""
        why = self.save_refusal()
        if why:
            self.message.emit(f"Not saved: {why}", 8000)
            return
        m, store = self.book.marks, self.store
        sets = [n for n, _ in self.tuning.sets]
        default_set = m.set_name or self.tuning.set_name or (sets[0] if sets else "judged")
        ids_of = {}
        for name in sets:
            try:
                ids_of[name] = [r.query_id for r in store.judged_queries(name)]
            except StoreError:
                ids_of[name] = []
        suggested = m.query_id if m.set_name == default_set and m.query_id else \
            suggest_id(m.query, ids_of.get(default_set, ()))
        params = self.state.params
        dlg = SaveJudgedDialog(m, sets, default_set, suggested, ids_of, self._as_of(params), params, user_name(),
                               self.dialog_parent)
        dlg.accepted.connect(lambda: self.save(dlg.set_name(), dlg.query_id()))
        self._open(dlg)

    def _as_of(self, params: Params) -> float:
        """The moment the query is asked: the window's as-of moment, else the store's clock now."""
        if params.as_of is not None:
            return float(params.as_of)
        return float(store_clock(self.store, self.state.loaded_arrays).now())

    def save(self, set_name: str, query_id: str) -> bool:
        """Write the marks of the query on screen as `query_id` of `set_name` (one undoable step)."""
        m, store = self.book.marks, self.store
        why = self.save_refusal()
        if why:
            self.message.emit(f"Not saved: {why}", 8000)
            return False
        params = self.state.params
        try:
            jq = judged_query(m, query_id, params, self._as_of(params), user_name())
            shown = {r.query_id: r.query for r in store.judged_queries(set_name)}.get(query_id)
        except (InvalidJudgment, StoreError) as e:
            self.error.emit("Judged query not saved", str(e))
            return False
        out = self.perform(save_query(set_name, jq, shown=shown))
        if out is None:
            return False
        self.book.saved_as(m, set_name, query_id)
        if self.tuning.set_name is None:
            self.choose_set(set_name)
        return True

    # ------------------------------------------------------------ the judged panel's queries
    def choose_query(self, query_id: str | None) -> None:
        """Show the judged query's near misses and run it in the query panel: its text or example,
        its moment and filters, its grades as the marks."""
        t = self.tuning
        if t.judged is None or query_id not in t.judged.ids:
            t.query_id = None
            return
        jq = t.judged.by_id()[query_id]
        t.query_id = query_id
        query = query_of(jq)
        self.book.load(query, jq, t.set_name, self._measured(query_id))
        params = self.state.params
        as_of = jq.as_of
        if as_of is not None and self.store is not None and abs(as_of - self._clock_now()) < 1.0:
            as_of = None   # asked at the store's "now": shown as now, not as the past
        self.state.set_params(params.replace(agents=jq.agents or None, kinds=jq.kinds or None, tags=jq.tags or None,
                                             as_of=as_of))
        self.run_requested.emit(query)
        self.setting_changed()
        self._update_enabled()

    def _measured(self, query_id: str | None) -> JudgedQuery | None:
        """The judged query `query_id` as the evaluator measures it (its grades followed down the
        store's corrections: judge/successors.py), when one is prepared."""
        ev = self.tuning.evaluator
        return None if ev is None or query_id is None else ev.measured.by_id().get(query_id)

    def _clock_now(self) -> float:
        return float(store_clock(self.store, self.state.loaded_arrays).now())

    def try_point(self, values: dict) -> None:
        """A point of the picture clicked: its weights (or knob) become the setting in force."""
        self.state.set_params(self.state.params.replace(**values))

    def select_memory(self, memory_id: str) -> None:
        """A near miss clicked: that memory is selected in every panel."""
        self.state.select_ids([memory_id])

    # ------------------------------------------------------------ import, export, delete
    def _write_refusal(self) -> str | None:
        store = self.store
        if store is None:
            return "no store is open"
        return f"the store is open read-only: {store.read_only_reason}" if store.read_only else None

    def choose_import_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.dialog_parent, "Import a judged set", "",
                                              "JSON Lines (*.jsonl *.json *.ndjson);;All files (*)")
        if path:
            self.import_file(path)

    def choose_trec_files(self) -> None:
        qrels, _ = QFileDialog.getOpenFileName(self.dialog_parent, "Import TREC qrels", "",
                                               "TREC qrels (*.qrels *.txt *.tsv);;All files (*)")
        if not qrels:
            return
        topics, _ = QFileDialog.getOpenFileName(self.dialog_parent, "…and its topics", os.path.dirname(qrels),
                                                "TREC topics (*.topics *.txt *.tsv *.xml);;All files (*)")
        if topics:
            self.import_file(qrels=qrels, topics=topics)

    def import_file(self, path: str | None = None, *, qrels: str | None = None, topics: str | None = None,
                    name: str | None = None) -> None:
        """Read a judged set from a file (checked whole against the store, off the GUI thread)
        and keep it with the store; a file with problems is refused whole, every problem with
        its line shown, and the store keeps what it had."""
        why = self._write_refusal()
        if why:
            self.error.emit("Judged set not imported", f"Not imported: {why}")
            return
        store = self.store
        shown = os.path.basename(path or qrels)

        def done(judged) -> None:
            if self.store is not store:
                return
            out = self.perform(save_set(judged))
            if out is not None:
                self.message.emit(f"Imported {shown}: {out.text}", 10000)
                self.read_records()
                self.choose_set(judged.name)

        def failed(e: Exception) -> None:
            if isinstance(e, (JudgedFileError, InvalidJudgment, ValueError, OSError, StoreError)):
                self.error.emit("Judged set not imported", f"{e}" if isinstance(e, JudgedFileError) else
                                f"{shown}: {e}\nNothing was imported.")
            else:
                raise e
        self.message.emit(f"Reading {shown} …", 0)
        self.workers.submit("judge import", lambda task: read_file_for(store, path, qrels=qrels, topics=topics, name=name),
                            on_done=done, on_error=failed)

    def choose_export_file(self) -> None:
        name = self.tuning.set_name
        if name is None:
            self.message.emit("Choose a judged set to export first", 5000)
            return
        path, chosen = QFileDialog.getSaveFileName(self.dialog_parent, f"Export judged set {name}", f"{name}.jsonl",
                                                   "JSON Lines (*.jsonl);;TREC qrels + topics (*.qrels)")
        if path:
            self.export_set(name, path, trec=chosen.startswith("TREC") or path.endswith(".qrels"))

    def export_set(self, name: str, path: str, trec: bool = False) -> str | None:
        """Write the judged set `name` to `path` (JSON Lines; with `trec`, qrels there and the
        topics beside it, `<path>.topics`); the message said, or None when it failed (shown)."""
        try:
            judged = read_set(self.store, name)
            if trec:
                topics = (path[:-len(".qrels")] if path.endswith(".qrels") else path) + ".topics"
                n = write_trec(judged, path, topics)
                text = f"Wrote {n} judged queries of {name} to {path} (qrels) and {topics} (topics)"
            else:
                n = write_jsonl(judged, path)
                text = f"Wrote {n} judged queries of {name} to {path}"
        except (KeyError, StoredSetError, InvalidJudgment, OSError, StoreError) as e:
            self.error.emit("Judged set not exported", str(e.args[0] if isinstance(e, KeyError) else e))
            return None
        self.message.emit(text, 10000)
        return text

    def delete_query(self, query_id: str | None) -> None:
        name = self.tuning.set_name
        why = self._write_refusal()
        if why or name is None or query_id is None:
            self.message.emit(f"Nothing deleted: {why or 'choose a judged query first'}", 6000)
            return
        self.perform(delete_queries(name, [query_id]))

    def delete_set(self, name: str | None) -> None:
        why = self._write_refusal()
        if why or name is None:
            self.message.emit(f"Nothing deleted: {why or 'choose a judged set first'}", 6000)
            return
        self.perform(delete_set(name))

    # ------------------------------------------------------------ baseline
    def pin(self, on: bool) -> None:
        """Pin the setting in force as the readout's baseline (off: the preset's defaults)."""
        self.tuning.pin(self.state.params if on else None)
        self.setting_changed()

    # ------------------------------------------------------------ fit
    def fit(self) -> FitDialog | None:
        """Fit…: the fit dialog, which starts a fit of the setting in force at once."""
        params = self.state.params
        why = self.tuning.fit_check(params) if self.state.data is not None else "no store is open"
        if why:
            self.message.emit(f"No fit: {why}", 8000)
            return None
        if self.fit_dialog is None:
            dlg = self.fit_dialog = FitDialog(self._preview, self._query_text,
                                              lambda name: style.color(getattr(style.theme(), name)), self.dialog_parent)
            dlg.start_requested.connect(self._start_fit)
            dlg.cancel_requested.connect(lambda: self.workers.cancel("judge fit"))
            dlg.accept_requested.connect(self.accept_fit)
            dlg.finished.connect(lambda _r: self.workers.cancel("judge fit"))
        existing = {ps.name for ps in saved_parameter_sets(self.store)} if self.store is not None else set()
        agents = {q.agents for q in self.tuning.judged if q.agents}
        self.fit_dialog.prepare(self.tuning.set_name, len(self.tuning.judged), params, self.tuning.family,
                                len(agents), existing, self._write_refusal())
        self.fit_dialog.show()
        self.fit_dialog.raise_()
        self._start_fit(*self.fit_dialog.options())
        return self.fit_dialog

    def _query_text(self, query_id: str) -> str:
        judged = self.tuning.judged
        q = None if judged is None else judged.by_id().get(query_id)
        return query_id if q is None else f"{query_id}: {q.query if q.query.strip() else 'like ' + str(q.like)}"

    def _preview(self, memory_id: str) -> str:
        data = self.state.data
        i = None if data is None else data.arrays.index_of(memory_id)
        return "(not in the store)" if i is None else str(data.previews[i])

    def _start_fit(self, metric: str, folds: int, by_agent: bool) -> None:
        params, dlg, t = self.state.params, self.fit_dialog, self.tuning
        why = t.fit_check(params)
        if why:
            dlg.failed(why)
            return
        folds = max(2, min(folds, len(t.judged)))

        def done(report) -> None:
            t.fitted(report, params)
            dlg.show_report(report, params)
            self.workers.submit("judge changes", t.changes_job(params, params.replace(**report.fitted)),
                                on_done=dlg.show_changes, on_error=lambda e: dlg.changes_failed(str(e)), lane=LANE)
        dlg.started()
        self.workers.submit("judge fit", t.fit_job(params, metric, folds, by_agent), on_done=done,
                            on_error=lambda e: dlg.failed(str(e)), on_progress=dlg.progress, lane=LANE)

    def accept_fit(self, name: str) -> bool:
        """Keep the fitted parameters as the parameter set `name` (an undoable step) and use them.
        A fit that is not recommended is kept only because the user chose to (the dialog says what
        that means)."""
        t = self.tuning
        report, start = t.report, t.report_start
        why = self._write_refusal()
        if report is None or start is None or why:
            self.message.emit(f"Not saved: {why or 'no fit to accept'}", 8000)
            return False
        try:
            ps = fitted_set(report, name, start, force=not report.recommended)
            out = self.perform(save_parameters(ps))
        except ValueError as e:
            self.error.emit("Parameter set not saved", str(e))
            return False
        if out is None:
            return False
        before = self.state.params
        after = before.replace(preset=ps.preset, **dict(ps.values))
        self._applied = (name, before, after)
        self.state.set_params(after)
        self.message.emit(f"{out.text}; the sliders show it (Edit ▸ Undo takes it back)", 10000)
        if self.fit_dialog is not None:
            self.fit_dialog.accepted_as(name)
        return True

    def _follow_applied(self, saved) -> None:
        """An accepted fit undone (its parameter set gone) puts the sliders back where they were,
        if they still show it; redone, it shows it again (a setting moved since stays)."""
        if self._applied is None:
            return
        name, before, after = self._applied
        exists = any(ps.name == name for ps in saved)
        now = self.state.params
        if not exists and same_setting(now, after):
            self.state.set_params(now.replace(preset=before.preset, **{f: getattr(before, f)
                                                                       for f in preset(before.preset).settings}))
        elif exists and same_setting(now, before):
            self.state.set_params(now.replace(preset=after.preset, **{f: getattr(after, f)
                                                                      for f in preset(after.preset).settings}))

    # ------------------------------------------------------------ unsaved marks at the end
    def unsaved_count(self) -> int:
        return len(self.book.unsaved()) + self.book.unsaved_elsewhere()

    def may_close(self, close_again) -> bool:
        """True when nothing unsaved would be lost; else a question is shown (Discard and quit /
        Cancel) and `close_again()` is called after Discard."""
        n = self.unsaved_count()
        if not n:
            return True
        box = QMessageBox(QMessageBox.Warning, "Unsaved marks",
                          f"Marks on {n} quer{'y' if n == 1 else 'ies'} are not saved in a judged set. Quit anyway "
                          "and lose them? (Cancel, then Judge ▸ Save query to judged set keeps them.)",
                          QMessageBox.Cancel, self.dialog_parent)
        box.setTextFormat(Qt.PlainText)
        discard = box.addButton("Discard and quit", QMessageBox.DestructiveRole)

        def answered(_r) -> None:
            if box.clickedButton() is discard:
                self.book.discard()
                close_again()
        box.finished.connect(answered)
        self._open(box)
        return False

    # ------------------------------------------------------------ helpers
    def _update_enabled(self) -> None:
        has_query = self.book.current is not None
        for key in MARK_KEYS:
            self.actions[key].setEnabled(self.state.data is not None)
            self.actions[key].setToolTip(plain_tooltip(self.actions[key].statusTip() + (
                "" if has_query else " — run a query first")))
        why = self.save_refusal()
        self.actions["save"].setEnabled(why is None)
        self.actions["save"].setToolTip(plain_tooltip(self.actions["save"].statusTip() + (f" — not now: {why}" if why else "")))
        writable = self._write_refusal() is None
        for key in ("import", "import_trec"):
            self.actions[key].setEnabled(writable)
        chosen = self.tuning.set_name is not None
        self.actions["export"].setEnabled(chosen)
        self.actions["delete_set"].setEnabled(chosen and writable)
        self.actions["delete_query"].setEnabled(chosen and writable and self.tuning.query_id is not None)
        self._update_fit()

    def _update_fit(self) -> None:
        """Fit… is on with a judged set chosen and a preset that has weights or knobs to fit."""
        act, why = self.actions["fit"], None
        if self.state.data is None or self.tuning.set_name is None:
            why = "choose a judged set first"
        else:
            try:
                fit_space(self.state.params.preset)
            except NothingToFit as e:
                why = str(e)
        act.setEnabled(why is None)
        act.setToolTip(plain_tooltip(act.statusTip() + (f" — not now: {why}" if why else "")))

    def _open(self, dlg) -> None:
        self.dialog = dlg
        dlg.setWindowModality(Qt.WindowModal)
        dlg.open()
