"""`memviz [--read-only] [PATH]`: the window. Without PATH it opens the user's copy of the
sample store (memviz.samples.bundled: made in the user's data folder on first use).

With PATH the store is read in a thread started before Qt and pyqtgraph are imported, so the
two overlap. MEMVIZ_STARTUP_REPORT=<epoch seconds when the launch began> prints the time to
the first painted store and quits (bench/launch.py measures the real launch that way)."""
from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import Future

from memviz.background import in_thread
from memviz.desktop import APP_ID, ICON_PNG, ICON_SVG


def parse_args(argv):
    p = argparse.ArgumentParser(prog="memviz", usage="memviz [--read-only] [DB]",
                                description="Open the memviz window (memviz --help lists the headless commands).")
    p.add_argument("path", nargs="?", metavar="DB",
                   help="a memory store (.db); default: the sample store (made in the user's data folder on first use)")
    p.add_argument("--read-only", action="store_true", help="open without writing anything; edits are refused")
    return p.parse_args(argv)


GUI_SWITCH_INTERVAL_S = 0.0005


def make_app(argv=()):
    """The QApplication with the names QSettings and QStandardPaths use, memviz's icon, and the
    name of its desktop entry (memviz --install-desktop-entry; Wayland matches windows to it)."""
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "memviz", *argv])
    app.setApplicationName("memviz")
    app.setOrganizationName("memviz")
    app.setDesktopFileName(APP_ID)
    icon = QIcon(str(ICON_SVG))
    icon.addFile(str(ICON_PNG))  # where Qt has no SVG reader, the 256 px picture, scaled
    app.setWindowIcon(icon)
    # A worker's pure-Python job (labels, token counts) may keep the GIL for the whole switch
    # interval each time a paint hands it back, and a frame crosses into Python hundreds of times:
    # a shorter interval keeps a large pan smooth while jobs run (bench/draw.py, the manual's performance page)
    sys.setswitchinterval(GUI_SWITCH_INTERVAL_S)
    return app


def process_until(cond, timeout: float = 60.0, poll: float = 0.01) -> bool:
    """Run the event loop until cond() is true or `timeout` seconds pass (scripts: screenshots,
    benchmarks); returns cond()."""
    import time

    from PySide6.QtWidgets import QApplication

    end = time.perf_counter() + timeout
    while not cond() and time.perf_counter() < end:
        QApplication.processEvents()
        time.sleep(poll)
    return cond()


def scratch_window(size=(1500, 950), umap: bool = False):
    """A shown MainWindow whose settings live in a new temporary folder, so nothing of the
    user's layout is read or written (scripts, benchmarks; after make_app())."""
    import tempfile

    from PySide6.QtCore import QSettings

    from memviz.app.window import MainWindow
    win = MainWindow(QSettings(os.path.join(tempfile.mkdtemp(), "memviz.ini"), QSettings.IniFormat), auto_umap=umap)
    win.resize(*size)
    win.show()
    return win


def open_and_wait(win, path: str, timeout: float, read_only: bool = False) -> bool:
    """Open `path` in `win` and run the event loop until it is shown (True), or the open failed
    or `timeout` seconds passed (False)."""
    ended = []
    win.opened.connect(lambda _path: ended.append(True))
    win.open_failed.connect(lambda _path, _message: ended.append(False))
    win.open_path(path, read_only=read_only)
    return process_until(lambda: ended, timeout) and ended[0]


def prefetch(path: str, read_only: bool) -> Future:
    """Open and read a store in a thread (no Qt needed); the window's open job takes the result."""
    def read():
        from memviz.frameworks import open_and_read
        from memviz.session.state import open_store_data
        return open_and_read(os.path.abspath(path), open_store_data, read_only=read_only, check_later=True)
    return in_thread(read, "memviz-prefetch")


def load_plugins() -> list[str]:
    """Every installed plugin loaded (memviz/plugins.py); a line for each one skipped."""
    from memviz.about import load_plugins
    return [p.line() for p in load_plugins() if p.error is not None]


def run(argv) -> int:
    args = parse_args(list(argv))
    from memviz.app.platform_check import platform_problem
    problem = platform_problem()
    if problem:
        print(problem, file=sys.stderr)
        return 1
    early = prefetch(args.path, args.read_only) if args.path and os.path.isfile(args.path) else None
    plugins = in_thread(load_plugins, "memviz-plugins")  # beside Qt's import
    app = make_app()
    from memviz.app.window import MainWindow  # after the QApplication exists

    win = MainWindow()
    win.show()
    report_slot_errors(win)
    win.note_plugins(plugins.result())
    if os.environ.get("MEMVIZ_STARTUP_REPORT"):
        _report_startup(app, win, float(os.environ["MEMVIZ_STARTUP_REPORT"]))
    if args.path:
        win.open_path(args.path, read_only=args.read_only, prefetched=early)
    else:
        win.open_sample(read_only=args.read_only)
    return app.exec()


def report_slot_errors(win) -> None:
    """An exception that escapes a Qt slot is shown in the window, not left as a traceback on
    the terminal: an SQLite error as the store's own message (what happened, what to do),
    anything else as a bug whose details go to a log file in the user cache folder."""
    from memviz.store.errors import StoreError, translate
    from memviz.userdirs import user_cache_dir

    def hook(kind, err, tb) -> None:
        if issubclass(kind, KeyboardInterrupt):
            return sys.__excepthook__(kind, err, tb)
        err = translate(err)
        if isinstance(err, StoreError):
            win.show_error("Store error", str(err))
            return
        import traceback
        log = user_cache_dir() / "errors.log"
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "a", encoding="utf-8") as f:
                f.write("".join(traceback.format_exception(kind, err, tb)) + "\n")
            where = f"The details are in {log}; please include them when you report it."
        except OSError:
            where = "".join(traceback.format_exception(kind, err, tb))
        win.show_error("memviz hit a bug", f"{kind.__name__}: {err}\n\n{where}")
    sys.excepthook = hook


def _report_startup(app, win, began: float) -> None:
    """Print seconds from `began` to the first store painted (or the open failing), then quit."""
    import time

    def opened(_path) -> None:
        win.repaint()
        print(f"memviz: interactive after {time.time() - began:.3f} s ({win.describe()})", flush=True)
        app.quit()

    def failed(_path, message) -> None:
        print(f"memviz: open failed after {time.time() - began:.3f} s: {message}", flush=True)
        app.quit()
    win.opened.connect(opened)
    win.open_failed.connect(failed)
