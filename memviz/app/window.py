"""The main window: it builds and wires its parts. Dockable panels over one AppState, the
controllers (app/controllers/: opening, copying and exporting stores, edits, reflect/consolidate
tools, the store's clock, judging and tuning), menus, toolbar, status bar, settings. It does no
work of its own.

The window is the only module that knows all the parts: panels and controllers get what they
need in their constructor (the state, the workers, the undo stack, the settings, a `perform`
callback) and talk back through signals (`message`, `reload_requested`, `error`, …) that
the window connects here. Nothing outside this file reads or sets the window's attributes
(tests/test_app_wiring.py checks it). `add_context_provider(fn)`: fn(ids) -> list[QAction]
appended to every panel's context menu.
"""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future

from PySide6.QtCore import QByteArray, QEvent, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QColor, QGuiApplication, QKeySequence, QUndoStack
from PySide6.QtWidgets import QDockWidget, QLabel, QMainWindow, QMenu, QMessageBox, QProgressBar, QPushButton, QToolBar

from memviz.app.controllers.clock_status import ClockStatus
from memviz.app.controllers.edit_controller import EditController
from memviz.app.controllers.exporter import Exporter
from memviz.app.controllers.judge_controller import MARK_KEYS, JudgeController
from memviz.app.controllers.live_controller import LiveController
from memviz.app.controllers.recent_files import RecentFiles
from memviz.app.controllers.reflect_tools import ReflectTools
from memviz.app.controllers.store_copier import StoreCopier
from memviz.app.controllers.store_opener import StoreOpener
from memviz.app.dialogs.check_dialog import CheckDialog
from memviz.app.dialogs.help_dialogs import AboutDialog, GuideDialog, ShortcutsDialog, shortcut_rows
from memviz.app.dialogs.import_dialog import ImportDialog, is_import_source
from memviz.app.panels.asof_bar import AsOfBar
from memviz.app.panels.detail_panel import DetailPanel
from memviz.app.panels.diff_panel import DiffPanel
from memviz.app.panels.graph_panel import GraphPanel
from memviz.app.panels.judged_panel import JudgedPanel, MarksBar, ReadoutStrip
from memviz.app.panels.map_panel import MapPanel
from memviz.app.panels.prompt_panel import PromptPanel
from memviz.app.panels.query_panel import QueryPanel
from memviz.app.panels.retired_panel import RetiredPanel
from memviz.app.panels.start_page import StartPage
from memviz.app.panels.table_panel import TablePanel
from memviz.app.panels.timeline_panel import TimelinePanel
from memviz.app.plain_text import plain_tooltip
from memviz.app.plots.style import ThemeLabel, theme
from memviz.app.status_bar import StatusBar
from memviz.app.theme import ThemeChooser
from memviz.app.workers import Workers
from memviz.session.state import AppState
from memviz.store import iso
from memviz.store.postgres.dsn import label
from memviz.words import count

PROGRESS_WIDTH = 220  # px of the status bar's progress bar; its text is cut to fit, whole in the tooltip
SETTINGS_VERSION = 3  # bump when the dock layout changes incompatibly (restoreState then falls back)


class MainWindow(QMainWindow):
    """opened(path): a store is shown. open_failed(path, message)."""

    opened = Signal(str)
    open_failed = Signal(str, str)
    copied = Signal(str)  # the redacted target of a finished File ▸ Copy store to…

    def __init__(self, settings: QSettings | None = None, auto_umap: bool = True) -> None:
        """`auto_umap`: the map starts UMAP by itself once a store is shown (scripts and
        benchmarks that time something else turn it off)."""
        super().__init__()
        self.settings = settings if settings is not None else QSettings()
        self.state = AppState()
        self.workers = Workers(self)
        self.undo_stack = QUndoStack(self)
        self.context_providers: list[Callable[[list[str]], list[QAction]]] = []
        self.error_box: QMessageBox | None = None
        self.check_dialog: CheckDialog | None = None
        self.import_dialog: ImportDialog | None = None  # made on first use
        self.help_dialog = None  # the help dialog shown last
        self.setWindowTitle("memviz")
        self.setAcceptDrops(True)
        self.setDockNestingEnabled(True)
        self.setDockOptions(QMainWindow.AnimatedDocks | QMainWindow.AllowNestedDocks | QMainWindow.AllowTabbedDocks)
        self.setStatusBar(StatusBar())  # a long message ends in "…", whole in its tooltip

        self.timeline = TimelinePanel(self.state)
        self.graph = GraphPanel(self.state, self.workers)
        self.map = MapPanel(self.state, self.workers)
        self.map.auto_umap = auto_umap
        self.query = QueryPanel(self.state, self.workers)
        self.table = TablePanel(self.state, self.workers)
        self.detail = DetailPanel(self.state)
        self.panels = {"timeline": self.timeline, "graph": self.graph, "map": self.map, "query": self.query,
                       "table": self.table, "detail": self.detail}
        # the controllers: live refresh, edits (actions, undo), reflect/consolidate tools
        self.live = LiveController(self.state, self.workers, self)
        self.live.message.connect(lambda text, ms: self.statusBar().showMessage(text, ms))
        self.live.error.connect(self.show_error)
        # opening and copying stores, export
        self.recent = RecentFiles(self.settings)
        self.opener = StoreOpener(self.state, self.workers, self.recent, self.statusBar().currentMessage, self)
        self.opener.opened.connect(self.opened)
        self.opener.open_failed.connect(self.open_failed)
        self.opener.message.connect(self.statusBar().showMessage)
        self.opener.error.connect(self.show_error)
        self.opener.import_requested.connect(self.show_import)
        self.opener.status_changed.connect(self._update_status)
        self.copier = StoreCopier(self.state, self.workers, self.recent, self)
        self.copier.copied.connect(self.copied)
        self.copier.message.connect(self.statusBar().showMessage)
        self.copier.error.connect(self.show_error)
        self.exporter = Exporter(self.state, self.query.results.records, self.table.shown_rows,
                                 {name: self.panels[name].export_image for name in ("timeline", "graph", "map")}, self)
        self.exporter.message.connect(self.statusBar().showMessage)
        self.exporter.error.connect(self.show_error)
        self.edits = EditController(self.state, self.undo_stack, self.workers, self)
        self.edits.message.connect(lambda text, ms: self.statusBar().showMessage(text, ms))
        self.edits.refresh_requested.connect(self.live.refresh)
        self.add_context_provider(self.edits.context_actions)
        self.retired = RetiredPanel(self.state, self.edits, self.workers)
        self.reflect_tools = ReflectTools(self.state, self.workers, self.settings, self.edits.perform, self)
        self.reflect_tools.error.connect(self.show_error)
        self.reflect_action = self.reflect_tools.reflect_action
        self.clock_status = ClockStatus(self.state, self)  # the store's clock: status bar, Tools menu
        self.clock_status.error.connect(self.show_error)
        self.clock_status.reload_requested.connect(self.reload)
        # what the agent sees, and when: the prompt view, diffs, the window's "as of" moment
        self.prompt = PromptPanel(self.state, self.workers)
        self.diff = DiffPanel(self.state, self.workers)
        self.as_of_bar = AsOfBar(self.state)
        # judging and tuning: marks on the results, judged sets, the quality readout, fits
        self.judge = JudgeController(self.state, self.workers, self.query.model, self.edits.perform, self,
                                     targets=lambda: self.query.result_ids_in_focus() or self.state.selected_ids)
        self.judge.message.connect(lambda text, ms: self.statusBar().showMessage(text, ms))
        self.judge.error.connect(self.show_error)
        self.judge.run_requested.connect(self.query.run)
        self.judge.choices_changed.connect(self.query.set_parameter_choices)
        self.judge.marks_changed.connect(self.query.results.reformat)
        self.edits.edited.connect(self.judge.edited)
        self.add_context_provider(self.judge.context_actions)
        self.query.results.add_column(self.judge.grade_column())
        self.query.show_column("grade", self.judge.judging())
        self.judge.judging_changed.connect(lambda on: self.query.show_column("grade", on))
        self.query.add_result_actions([self.judge.actions[k] for k in MARK_KEYS])
        self.marks_bar = MarksBar(self.judge.book, self.judge.actions)
        self.marks_bar.query_requested.connect(self.query.run)
        self.query.add_below_results(self.marks_bar)
        self.query.add_below_settings(ReadoutStrip(self.state, self.judge.tuning))
        self.judged = JudgedPanel(self.state, self.judge.tuning, self.judge.actions)
        self.judged.set_chosen.connect(self.judge.choose_set)
        self.judged.query_chosen.connect(self.judge.choose_query)
        self.judged.memory_chosen.connect(self.judge.select_memory)
        self.judged.measure_chosen.connect(self.judge.set_measure)
        self.judged.axes_chosen.connect(self.judge.set_axes)
        self.judged.point_chosen.connect(self.judge.try_point)
        self.judged.picture_shown.connect(self.judge.set_picture_shown)

        self.docks: dict[str, QDockWidget] = {}
        titles = {"timeline": "Timeline", "graph": "Reflection graph", "map": "Map", "query": "Query",
                  "table": "Memories", "detail": "Detail", "retired": "Retired", "prompt": "Prompt view",
                  "diff": "Diff", "judged": "Judged queries"}
        for name, panel in {**self.panels, "retired": self.retired, "prompt": self.prompt, "diff": self.diff,
                            "judged": self.judged}.items():
            dock = QDockWidget(titles[name], self)
            dock.setObjectName(f"dock_{name}")
            dock.setWidget(panel)
            self.docks[name] = dock
            panel.context_requested.connect(self.show_context_menu)
        self.docks["retired"].visibilityChanged.connect(self.retired.set_shown)  # read only while in view
        self.docks["prompt"].visibilityChanged.connect(self.prompt.set_shown)  # assembles only while in view
        self.docks["judged"].visibilityChanged.connect(self.judge.set_shown)  # measures only while in view
        self.as_of_toolbar = QToolBar("As of")
        self.as_of_toolbar.setObjectName("toolbar_as_of")
        self.as_of_toolbar.addWidget(self.as_of_bar)
        self._place_docks()
        self._build_menus()
        self._build_status()
        # with no store open, what to do is shown over the docks (empty axes would say nothing)
        self.start_page = StartPage(self)
        self.start_page.open_requested.connect(self.opener.choose_file)
        self.start_page.sample_requested.connect(self.open_sample)
        self.start_page.import_requested.connect(lambda: self.show_import())
        self.start_page.recent_chosen.connect(self.open_path)
        self.open_failed.connect(lambda path, text: self.start_page.set_problem(f"Could not open {path}: {text}"))
        self.state.data_changed.connect(self._show_start_page)
        self._show_start_page(None)
        self.state.data_changed.connect(self._update_status)
        self.state.selection_changed.connect(lambda *a: self._update_status())
        self.state.time_filter_changed.connect(lambda *a: self._update_status())
        self.state.as_of_changed.connect(lambda *a: self._update_status())
        self._restore_settings()

    # ------------------------------------------------------------ layout
    def _place_docks(self) -> None:
        d = self.docks
        # the query runs the full height on the right, so its results keep their rows at any size;
        # on the left: the timeline, the two plots, then the table beside the detail
        self.setCorner(Qt.TopRightCorner, Qt.RightDockWidgetArea)
        self.setCorner(Qt.BottomRightCorner, Qt.RightDockWidgetArea)
        self.addDockWidget(Qt.TopDockWidgetArea, d["timeline"])
        self.addDockWidget(Qt.LeftDockWidgetArea, d["map"])
        self.splitDockWidget(d["map"], d["graph"], Qt.Horizontal)
        self.addDockWidget(Qt.RightDockWidgetArea, d["query"])
        self.addDockWidget(Qt.BottomDockWidgetArea, d["table"])
        self.splitDockWidget(d["table"], d["detail"], Qt.Horizontal)
        self.tabifyDockWidget(d["table"], d["retired"])  # behind the table
        # one tab group only: Qt (6.x) leaves a stale copy of the tab bar of a second group on screen
        self.tabifyDockWidget(d["table"], d["prompt"])
        self.tabifyDockWidget(d["table"], d["diff"])
        self.tabifyDockWidget(d["table"], d["judged"])
        d["table"].raise_()
        self._size_docks()

    def _size_docks(self) -> None:
        """Proportions of the default layout (applied again once the window has its size): the
        query column gets a larger share of a narrow window, its content column stays readable."""
        d = self.docks
        h, w = max(self.height(), 600), max(self.width(), 800)
        right = .44 if w < 1300 else .40 if w < 1700 else .36
        left = w * (1 - right)
        self.resizeDocks([d["timeline"], d["map"], d["table"]], [int(h * .23), int(h * .41), int(h * .36)], Qt.Vertical)
        self.resizeDocks([d["map"], d["graph"], d["query"]], [int(left * .5), int(left * .5), int(w * right)],
                         Qt.Horizontal)
        self.resizeDocks([d["table"], d["detail"]], [int(left * .58), int(left * .42)], Qt.Horizontal)

    def reset_docks(self) -> None:
        """View ▸ Reset layout: the docks placed again as _place_docks places them (rebuilt,
        not restoreState(): restoring left the previous tab bars painted over the docks)."""
        for dock in self.docks.values():
            dock.setFloating(False)
            self.removeDockWidget(dock)
        self._place_docks()
        for dock in self.docks.values():
            dock.show()
        self.docks["table"].raise_()
        self._size_docks()

    # ------------------------------------------------------------ menus
    def _build_menus(self) -> None:
        mb = self.menuBar()
        file = mb.addMenu("&File")
        self.open_action = file.addAction("&Open…", self.opener.choose_file)
        self.open_action.setShortcut(QKeySequence.Open)
        self.recent_menu = file.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(lambda: self.recent.fill(self.recent_menu, self.open_path))
        file.addAction("Open &database…", self.opener.choose_database)
        sample = file.addAction("Open the &sample store", self.open_sample)  # in Help too
        file.addAction("&Import…", lambda: self.show_import()).setShortcut(QKeySequence("Ctrl+I"))
        self.reload_action = file.addAction("Re&load", self.reload)
        self.reload_action.setShortcut(QKeySequence.Refresh)
        self.copy_action = file.addAction("&Copy store to…", self.copier.choose_target)
        file.addSeparator()
        export = file.addMenu("&Export")
        self.export_menu = export
        export.addAction("Query results as CSV…", lambda: self.exporter.export_dialog("results", "csv"))
        export.addAction("Query results as JSON…", lambda: self.exporter.export_dialog("results", "json"))
        export.addAction("Memory table as CSV…", lambda: self.exporter.export_dialog("table", "csv"))
        export.addAction("Memory table as JSON…", lambda: self.exporter.export_dialog("table", "json"))
        export.addSeparator()
        for name in ("timeline", "graph", "map"):
            for fmt in ("png", "svg"):
                export.addAction(f"{name.capitalize()} plot as {fmt.upper()}…",
                                 lambda n=name, f=fmt: self.exporter.export_dialog(n, f))
        file.addSeparator()
        quit_ = file.addAction("&Quit", self.close)
        quit_.setShortcut(QKeySequence.Quit)

        edit = mb.addMenu("&Edit")
        self.undo_action = self.undo_stack.createUndoAction(self, "&Undo")
        self.undo_action.setShortcut(QKeySequence.Undo)
        self.redo_action = self.undo_stack.createRedoAction(self, "&Redo")
        self.redo_action.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence.Redo])
        edit.addAction(self.undo_action)
        edit.addAction(self.redo_action)
        edit.addSeparator()
        find = edit.addAction("&Find…", self.find)
        find.setShortcut(QKeySequence.Find)
        edit.addAction("Copy selected &ids", self.copy_ids).setShortcut(QKeySequence("Ctrl+Shift+C"))
        edit.addAction("Select &none", lambda: self.state.select([])).setShortcut(QKeySequence("Ctrl+Shift+A"))
        self.clear_filter_action = edit.addAction("Clear &time filter", lambda: self.state.set_time_range(None))
        edit.addSeparator()
        for act in self.edits.actions.values():
            edit.addAction(act)

        view = mb.addMenu("&View")
        for dock in self.docks.values():
            view.addAction(dock.toggleViewAction())
        view.addSeparator()
        self.retired_action = view.addAction("Show &retired memories")
        self.retired_action.setCheckable(True)
        self.retired_action.setChecked(True)
        self.retired_action.toggled.connect(self.state.set_show_retired)
        self.state.show_retired_changed.connect(self.retired_action.setChecked)
        view.addAction("Reset &layout", self.reset_docks)
        self.theme = ThemeChooser(self.settings, self)  # System / Light / Dark, applied from the settings
        view.addMenu(self.theme.menu)

        judge = mb.addMenu("&Judge")
        for key in (*MARK_KEYS, None, "save", None, "import", "import_trec", "export", "delete_query", "delete_set",
                    None, "pin", "fit"):
            judge.addSeparator() if key is None else judge.addAction(self.judge.actions[key])
        judge.addSeparator()
        judge.addAction("Show judged &queries", lambda: (self.docks["judged"].show(), self.docks["judged"].raise_()))

        tools = mb.addMenu("&Tools")
        tools.addAction(self.reflect_action)
        self.umap_action = tools.addAction("Compute &UMAP", self.map.start_umap)
        tools.addAction(self.reflect_tools.consolidate_action)
        tools.addAction(self.reflect_tools.llm_action)
        self.check_action = tools.addAction("&Check store…", self.check_store)
        tools.addAction(self.clock_status.action)
        # off while no store is open (the start page says what to do instead)
        self.store_actions = [self.reload_action, self.copy_action, export.menuAction(), find, self.clear_filter_action,
                              self.umap_action, self.check_action, self.clock_status.action]

        help_ = mb.addMenu("&Help")
        help_.addAction("&User guide", self.show_guide).setShortcut(QKeySequence.HelpContents)
        help_.addAction("&Keyboard shortcuts", self.show_shortcuts).setShortcut(QKeySequence("Ctrl+/"))
        help_.addAction(sample)
        help_.addSeparator()
        help_.addAction("&About memviz", self.show_about)

        # the toolbar's Undo/Redo keep a fixed label (the menu's say what; here the tooltip does),
        # so the buttons after them do not jump each time the label would change
        self.toolbar_undo = QAction("Undo", self, enabled=False, triggered=self.undo_stack.undo)
        self.toolbar_redo = QAction("Redo", self, enabled=False, triggered=self.undo_stack.redo)
        self.undo_stack.canUndoChanged.connect(self.toolbar_undo.setEnabled)
        self.undo_stack.canRedoChanged.connect(self.toolbar_redo.setEnabled)
        self.undo_stack.undoTextChanged.connect(lambda t: self.toolbar_undo.setToolTip(plain_tooltip(f"Undo {t}".strip())))
        self.undo_stack.redoTextChanged.connect(lambda t: self.toolbar_redo.setToolTip(plain_tooltip(f"Redo {t}".strip())))
        self.toolbar = QToolBar("Main")
        self.toolbar.setObjectName("toolbar_main")
        self.toolbar.addAction(self.open_action)
        self.toolbar.addAction(self.toolbar_undo)
        self.toolbar.addAction(self.toolbar_redo)
        self.toolbar.addSeparator()
        self.toolbar.addAction(self.reflect_action)
        self.toolbar.addSeparator()
        for key in ("correct", "confirm", "delete", "restore"):
            self.toolbar.addAction(self.edits.actions[key])
        self.addToolBar(self.toolbar)
        self.addToolBar(self.as_of_toolbar)  # beside the edit toolbar: one row, more room for the panels

    def _build_status(self) -> None:
        sb = self.statusBar()
        self.status_store = QLabel()
        self.status_store.setTextFormat(Qt.PlainText)
        self.status_counts = QLabel()
        self.status_counts.setTextFormat(Qt.PlainText)
        self.status_model = QLabel()
        self.status_model.setTextFormat(Qt.PlainText)
        self.status_ro = ThemeLabel(pick=lambda t: t.ok)  # "writable" in the theme's green; "READ-ONLY" bold, its alarm red
        # a fixed width: in a crowded status bar Qt squeezed it until its text wrapped over the bar
        self.progress = QProgressBar(minimumWidth=PROGRESS_WIDTH, maximumWidth=PROGRESS_WIDTH, maximum=1000)
        self.progress.setTextVisible(True)
        self.cancel_button = QPushButton("Cancel")
        self.progress.hide()
        self.cancel_button.hide()
        # "+N new": memories written since the user last looked; a click selects them (nothing moves by itself)
        self.new_button = QPushButton()
        self.new_button.setFlat(True)
        self.new_button.setToolTip("Memories written since you last looked: click to select them")
        self.new_button.hide()
        self.new_button.clicked.connect(self.select_new)
        self._new_ids: list[str] = []
        self._own_ids: set[str] = set()  # what the user's own edits wrote: not new to them
        self.edits.edited.connect(lambda out: self._own_ids.update(out.ids))
        self.state.rows_changed.connect(self._rows_changed)
        self.state.data_changed.connect(self._new_after_reload)
        sb.addWidget(self.status_store, 2)
        sb.addWidget(self.status_counts, 3)
        sb.addPermanentWidget(self.new_button)  # permanent: a status message never runs under it
        sb.addPermanentWidget(self.progress)
        sb.addPermanentWidget(self.cancel_button)
        sb.addPermanentWidget(self.status_model)
        sb.addPermanentWidget(self.status_ro)
        sb.addPermanentWidget(self.clock_status.label)
        sb.addPermanentWidget(self.reflect_tools.meter)
        self._job = None
        self.workers.activity.connect(self._job_progress)
        self.workers.finished.connect(self._job_finished)
        self.cancel_button.clicked.connect(lambda: self._job and self.workers.cancel(self._job))

    def _show_start_page(self, data) -> None:
        """The start page while no store is open; the actions that need one are off meanwhile."""
        empty = data is None
        for act in self.store_actions:
            act.setEnabled(not empty)
        if empty:
            self.start_page.set_recent(self.recent.files())
            self._place_start_page()
            self.start_page.show()
            self.start_page.raise_()
        else:
            self.start_page.set_problem(None)
            self.start_page.hide()

    def _place_start_page(self) -> None:
        """Over everything between the toolbar and the status bar."""
        top = self.menuBar().geometry().bottom() + 1
        if not self.toolbar.isHidden() and self.toolBarArea(self.toolbar) == Qt.TopToolBarArea:
            top = max(top, self.toolbar.geometry().bottom() + 1)
        bottom = self.statusBar().geometry().top() if not self.statusBar().isHidden() else self.height()
        self.start_page.setGeometry(0, top, self.width(), max(bottom - top, 0))

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self.start_page.isHidden():  # the bars have their final geometry now
            QTimer.singleShot(0, self._place_start_page)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if not self.start_page.isHidden():  # (isVisible is false until the window is shown)
            self._place_start_page()

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.PaletteChange:
            self._show_new()  # "+N new" in the new scheme's colour (a style sheet keeps the one it was given)

    def _rows_changed(self, delta) -> None:
        data = self.state.data
        added = data.arrays.ids[delta.added].tolist()
        self._new_ids += [m for m in added if m not in self._own_ids]  # (a delta removes no row: nothing to drop)
        self._own_ids.difference_update(added)
        self._show_new()
        self._update_status()

    def _new_after_reload(self, data) -> None:
        """Another store: nothing is new; the same store read again whole: the new ones still there."""
        if not self.state.reloaded:
            self._forget_new()
            self._own_ids.clear()
            return
        self._new_ids = [m for m in self._new_ids if data.arrays.index_of(m) is not None]
        self._show_new()

    def _show_new(self) -> None:
        self.new_button.setText(f"+{len(self._new_ids):,} new")
        style = f"color: {theme().new}; font-weight: bold;"  # the map's ring colour
        if self.new_button.styleSheet() != style:  # (a refresh comes every second under writes)
            self.new_button.setStyleSheet(style)
        self.new_button.setVisible(bool(self._new_ids))

    def select_new(self) -> None:
        """Select the memories counted by "+N new" (the panels show them where they are) and reset the count."""
        ids = self._new_ids
        self._forget_new()
        self.state.select_ids(ids)

    def _forget_new(self) -> None:
        self._new_ids = []
        self.new_button.hide()

    def _job_progress(self, name: str, fraction: float, text: str) -> None:
        # quick or quiet jobs: no progress bar flicker
        if name in ("score", "query", "graph", "refresh", "place", "watch", "table", "table ahead", "judge readout",
                    "judge grid", "judge changes", "judge fit"):  # (a fit shows its progress in its dialog)
            return
        self._job = name
        self.progress.setRange(0, 0 if fraction < 0 else 1000)
        if fraction >= 0:
            self.progress.setValue(int(fraction * 1000))
        full = text or name
        percent = " %p%" if fraction >= 0 else ""
        metrics = self.progress.fontMetrics()
        room = PROGRESS_WIDTH - 16 - (metrics.horizontalAdvance(" 100%") if percent else 0)
        shown = metrics.elidedText(full, Qt.ElideRight, room)
        self.progress.setFormat(shown + percent)
        self.progress.setToolTip(plain_tooltip(full))  # the whole text where the bar shows it cut
        self.progress.show()
        self.cancel_button.setVisible(True)  # cancelling an open keeps the store shown now

    def _job_finished(self, name: str) -> None:
        if name == self._job:
            self._job = None
            self.progress.hide()
            self.cancel_button.hide()

    def _update_status(self, *_):
        data = self.state.data
        if data is None:
            for w in (self.status_store, self.status_counts, self.status_model, self.status_ro):
                w.setText("")
            self.setWindowTitle("memviz")
            return
        s = data.store
        c = self.state.shown_counts()  # as of the moment shown
        self.status_store.setText(label(s.path))  # a DSN: its database and host
        self.status_store.setToolTip(plain_tooltip(s.path))
        sel = len(self.state.selection)
        filt = "" if self.state.time_range is None else " · time filter on"
        agents = list(c["by_agent"])
        who = f"agent {agents[0]}" if len(agents) == 1 and agents[0] else count(len(agents), "agent")
        filt += "" if self.state.as_of is None else f" · as of {iso(self.state.as_of)} UTC"
        self.status_counts.setText(f"{count(c['total'], 'memory')} ({c['live']:,} current, {c['retired']:,} retired) · "
                                   f"{count(len(c['by_kind']), 'kind')} · {who}"
                                   f"{f' · {sel:,} selected' if sel else ''}{filt}")
        model, dim = data.model
        self.status_model.setText(f"{model} ({dim}-d)" if model else "no embeddings")
        self.status_ro.setText("READ-ONLY" if s.read_only else "writable")
        self.status_ro.setToolTip(plain_tooltip(s.read_only_reason or "edits are written to this file"))
        if self.status_ro.font().bold() != s.read_only:  # (asked at every live refresh: changed only when it changes)
            font = self.status_ro.font()
            font.setBold(s.read_only)
            self.status_ro.setFont(font)
            self.status_ro.set_pick((lambda t: t.alarm) if s.read_only else (lambda t: t.ok))
        self.setWindowTitle(f"memviz — {label(s.path)}{' [read-only]' if s.read_only else ''}")

    # ------------------------------------------------------------ opening (app/controllers/store_opener.py)
    def open_path(self, path: str, read_only: bool = False, prefetched: Future | None = None) -> None:
        """Open a store in the background; the current one stays until the new one is ready
        (`opened` or `open_failed` then). `prefetched`: a Future of the same read already under way."""
        self.opener.open_path(path, read_only, prefetched)

    def check_store(self) -> CheckDialog:
        """Tools ▸ Check store…: show (or raise) the check dialog and check the open store."""
        if self.check_dialog is None:
            self.check_dialog = CheckDialog(self.state, self.workers, self.reload, self)
        self.check_dialog.show()
        self.check_dialog.raise_()
        self.check_dialog.run_check()
        return self.check_dialog

    def open_sample(self, *, read_only: bool = False) -> None:
        self.opener.open_sample(read_only=read_only)

    def reload(self) -> None:
        """Re-read the whole open store (File ▸ Reload), keeping the selection and the view."""
        self.live.reload()

    def show_error(self, title: str, text: str) -> None:
        """A non-blocking message box (plain text); kept in `error_box` so tests can read it."""
        box = QMessageBox(QMessageBox.Critical, title, text, QMessageBox.Ok, self)
        box.setTextFormat(Qt.PlainText)
        box.setWindowModality(Qt.WindowModal)
        box.open()
        self.error_box = box

    # ------------------------------------------------------------ drag and drop
    def dragEnterEvent(self, event) -> None:
        if any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        files = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if files:
            event.acceptProposedAction()
            if is_import_source(files[0]):  # a folder or a JSON(L) dump: import it first
                self.show_import(files[0])
            else:
                self.open_path(files[0])

    def show_import(self, source: str | None = None) -> ImportDialog:
        """The window's one import dialog (made on first use), shown non-modally, pre-filled with
        `source` unless an import is running."""
        dlg = self.import_dialog
        if dlg is None:
            dlg = self.import_dialog = ImportDialog(self.workers, self.open_path, self, alarm=lambda: QColor(theme().alarm))
        if source and not dlg.running:
            dlg.set_source(source)
        dlg.show()
        dlg.raise_()
        dlg.activateWindow()
        return dlg

    def note_plugins(self, problems: list[str]) -> None:
        """The plugins skipped at start-up (memviz/plugins.py), one line each: said in the status
        bar, and kept there as a mark whose tooltip lists them."""
        if problems:
            mark = QLabel(f"⚠ {count(len(problems), 'plugin')} skipped")
            mark.setTextFormat(Qt.PlainText)
            mark.setToolTip(plain_tooltip("\n".join(problems)))
            self.statusBar().addPermanentWidget(mark)
            self.statusBar().showMessage(problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""),
                                         15000)

    def describe(self) -> str:
        """One line on what is shown (the launcher's startup report)."""
        data = self.state.data
        if data is None:
            return "no store"
        return f"{data.n} {'memory' if data.n == 1 else 'memories'}, map: {self.map.method}"  # read by bench/launch.py

    # ------------------------------------------------------------ actions
    def find(self) -> None:
        self.docks["table"].show()
        self.docks["table"].raise_()
        self.table.focus_search()

    def copy_ids(self) -> None:
        QGuiApplication.clipboard().setText("\n".join(self.state.selected_ids))

    def add_context_provider(self, fn: Callable[[list[str]], list[QAction]]) -> None:
        self.context_providers.append(fn)

    def context_menu_for(self, ids: list[str]) -> QMenu:
        menu = QMenu(self)
        n = len(ids)
        menu.addAction(f"Copy id{'s' if n > 1 else ''}", self.copy_ids).setEnabled(n > 0)
        q = menu.addAction("Query by this memory", self.query.query_selected)
        q.setEnabled(n >= 1)
        for fn in self.context_providers:
            actions = fn(list(ids))
            if actions:
                menu.addSeparator()
                for a in actions:
                    menu.addAction(a)
        return menu

    def show_context_menu(self, ids: list, pos) -> None:
        self.context_menu_for(ids).popup(pos)

    def show_shortcuts(self) -> ShortcutsDialog:
        """Help ▸ Keyboard shortcuts: every shortcut the window's actions carry."""
        dlg = ShortcutsDialog(shortcut_rows([a.menu() for a in self.menuBar().actions() if a.menu()]), self)
        dlg.open()
        self.help_dialog = dlg
        return dlg

    def show_guide(self) -> GuideDialog:
        """Help ▸ User guide: the manual's pages (memviz.manual), with their screenshots where there are."""
        dlg = GuideDialog(self)
        dlg.show()
        self.help_dialog = dlg
        return dlg

    def show_about(self) -> AboutDialog:
        """Help ▸ About: the version report (memviz --version's)."""
        dlg = AboutDialog(self)
        dlg.open()
        self.help_dialog = dlg
        return dlg

    # ------------------------------------------------------------ settings
    def _restore_settings(self) -> None:
        s = self.settings
        geo = s.value("geometry")
        if isinstance(geo, QByteArray) and not geo.isEmpty():
            self.restoreGeometry(geo)
        else:
            screen = QGuiApplication.primaryScreen()
            avail = screen.availableGeometry() if screen else None
            w, h = (min(1500, avail.width() - 40), min(950, avail.height() - 40)) if avail else (1400, 900)
            self.resize(max(w, 800), max(h, 600))
        st = s.value("windowState")
        restored = isinstance(st, QByteArray) and not st.isEmpty() and self.restoreState(st, SETTINGS_VERSION)
        if not restored:
            QTimer.singleShot(0, self._size_docks)  # once shown at its real size
        self.timeline.lanes.setCurrentText(str(s.value("timeline/lanes", "kind")))
        self.map.color_by.setCurrentText(str(s.value("map/color_by", "kind")))

    def save_settings(self) -> None:
        s = self.settings
        s.setValue("geometry", self.saveGeometry())
        s.setValue("windowState", self.saveState(SETTINGS_VERSION))
        s.setValue("timeline/lanes", self.timeline.lanes.currentText())
        s.setValue("map/color_by", self.map.color_by.currentText())
        s.sync()

    def closeEvent(self, event) -> None:
        if not self.judge.may_close(self.close):  # unsaved marks: asked first (never lost silently)
            event.ignore()
            return
        # jobs first: a poll or reload still reading on a connection would make its close fail
        # (apsw allows no close while another thread uses the connection)
        self.workers.shutdown()
        self.live.close()
        self.edits.close()
        self.save_settings()
        if self.state.data is not None:
            self.state.data.store.close()
        super().closeEvent(event)
