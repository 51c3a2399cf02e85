"""`memviz [--read-only] [PATH]`: the window. Without PATH it opens the bundled sample store,
copied first into the user's data folder so edits never touch the installed file."""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

SAMPLE_NAME = "assistant.db"


def bundled_sample() -> Path:
    """sample_dbs/assistant.db next to the package (the repository / source install)."""
    return Path(__file__).resolve().parents[2] / "sample_dbs" / SAMPLE_NAME


def user_sample_copy() -> str:
    """The user's own copy of the sample store (made on first use). Raises OSError if there is none."""
    from PySide6.QtCore import QStandardPaths  # noqa: PLC0415

    src = bundled_sample()
    folder = Path(QStandardPaths.writableLocation(QStandardPaths.AppDataLocation)) / "samples"
    dst = folder / SAMPLE_NAME
    if not dst.exists():
        if not src.exists():
            raise OSError(f"The sample store is not installed ({src} is missing). Open a store with File ▸ Open.")
        folder.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_suffix(".db.part")
        shutil.copyfile(src, tmp)  # a copy of a closed file; renamed so a half copy is never opened
        os.replace(tmp, dst)
    return str(dst)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="memviz", description="Open the memviz window.")
    p.add_argument("path", nargs="?", help="a memory store (.db); default: the bundled sample")
    p.add_argument("--read-only", action="store_true", help="open without writing anything")
    return p.parse_args(argv)


def make_app(argv=()):
    """The QApplication with the names QSettings and QStandardPaths use."""
    from PySide6.QtWidgets import QApplication  # noqa: PLC0415

    app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "memviz", *argv])
    app.setApplicationName("memviz")
    app.setOrganizationName("memviz")
    return app


def process_until(cond, timeout: float = 60.0, poll: float = 0.01) -> bool:
    """Run the event loop until cond() is true or `timeout` seconds pass (scripts: screenshots,
    benchmarks); returns cond()."""
    import time  # noqa: PLC0415

    from PySide6.QtWidgets import QApplication  # noqa: PLC0415

    end = time.perf_counter() + timeout
    while not cond() and time.perf_counter() < end:
        QApplication.processEvents()
        time.sleep(poll)
    return cond()


def run(argv) -> int:
    args = parse_args(list(argv))
    app = make_app()
    from .window import MainWindow  # noqa: PLC0415 - after the QApplication exists

    win = MainWindow()
    win.show()
    if args.path:
        win.open_path(args.path, read_only=args.read_only)
    else:
        try:
            win.open_path(user_sample_copy(), read_only=args.read_only)
        except OSError as e:
            win.statusBar().showMessage(str(e))
    return app.exec()
