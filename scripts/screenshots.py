"""Screenshots of the real window: `python scripts/screenshots.py DB OUTDIR [--size WxH ...]`.

Opens DB in a MainWindow with fresh settings (a native store read-only, so the shot writes
nothing into it, e.g. no UMAP cache; another system's store as the window opens it, writable
where that system allows memviz's edits, since only its mirror in memviz's cache is written), runs a query (when the retrieval
engine is there), selects a reflection so the graph shows a neighbourhood, waits for the
background work (store load, graph, UMAP) and saves the whole window and each panel as
PNG (`window.png` at the first size, `window-WxH.png` at the others, `panel-timeline.png`, ...;
`--name isabella` writes `isabella.png`, `isabella-WxH.png`; `--no-panels` only the window;
`--theme dark` (or light) the window in View ▸ Theme's dark (light) colours). Run under Xvfb
(`xvfb-run -a python -m ...`) for real window decorations and fonts, or with QT_QPA_PLATFORM=offscreen.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/screenshots.py")
    ap.add_argument("db")
    ap.add_argument("outdir")
    ap.add_argument("--size", action="append", default=None, help="window size WxH (repeatable)")
    ap.add_argument("--query", default="What does the user like to eat?")
    ap.add_argument("--select", default=None, help="id to select (default: the deepest reflection)")
    ap.add_argument("--umap-wait", type=float, default=90.0, help="seconds to wait for UMAP")
    ap.add_argument("--name", default="window", help="file name of the window shots (default: window)")
    ap.add_argument("--no-panels", dest="panels", action="store_false", help="no panel-*.png")
    ap.add_argument("--theme", choices=["system", "light", "dark"], default="system",
                    help="View ▸ Theme's choice for the shots (default: the desktop's colours)")
    ap.add_argument("--writable", action="store_true",
                    help="open a native store writable, as a user would (it is written to: the map's layout is cached)")
    args = ap.parse_args(argv)
    sizes = [tuple(int(v) for v in s.lower().split("x")) for s in (args.size or ["1500x950"])]
    os.makedirs(args.outdir, exist_ok=True)

    from PySide6.QtCore import QSettings

    from memviz.app.main import make_app, process_until
    app = make_app()  # noqa: F841 - the reference keeps the QApplication alive
    from memviz.app.theme import SETTING
    from memviz.app.window import MainWindow

    wait = process_until

    settings = QSettings(os.path.join(tempfile.mkdtemp(), "shots.ini"), QSettings.IniFormat)
    settings.setValue(SETTING, args.theme)
    win = MainWindow(settings)
    win.resize(*sizes[0])
    win.show()
    opened = []
    win.opened.connect(opened.append)
    win.open_failed.connect(lambda p, m: opened.append(None))
    from memviz import frameworks
    win.open_path(args.db, read_only=not args.writable and frameworks.recognise(args.db) is None)
    if not wait(lambda: opened, 120) or opened[0] is None:
        print("could not open", args.db, file=sys.stderr)
        return 2
    wait(lambda: win.graph.graph is not None, 60)
    if not win.map.method.startswith("UMAP") and win.map.auto_umap:
        wait(lambda: win.workers.running("umap"), 5)  # it starts once the store is on screen
        wait(lambda: win.map.method.startswith("UMAP"), args.umap_wait)
    wait(lambda: not win.workers.running("map labels"), 30)  # the map's region names
    data = win.state.data
    target = args.select
    if target is None and win.graph.graph is not None and win.graph.graph.n:
        g = win.graph.graph
        real = g.rows >= 0
        if real.any():
            target = data.arrays.ids[g.rows[real][int(g.level[real].argmax())]]
    if args.query:
        win.query.text.setText(args.query)
        got = []
        win.query.ranked.connect(lambda r, s: got.append(r))
        win.query.run_query()
        wait(lambda: got, 60)
        win.map.color_by.setCurrentText("score")
    if target:
        win.state.select_ids([target])
    win.statusBar().clearMessage()  # the open's message names this machine's path; the bar shows the store
    for k, (w, h) in enumerate(sizes):
        win.resize(w, h)
        win.reset_docks()
        wait(lambda: False, 0.8)
        win.grab().save(os.path.join(args.outdir, f"{args.name}.png" if k == 0 else f"{args.name}-{w}x{h}.png"))
        if k == 0 and args.panels:  # each panel as laid out in the first (main) size
            for name in win.panels:
                win.docks[name].grab().save(os.path.join(args.outdir, f"panel-{name}.png"))
    print("saved to", args.outdir, "| map:", win.map.method, "| selected:", target)
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
