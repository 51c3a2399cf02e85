"""A scrubber step in the window (issue 15: ≤ 100 ms at 100k memories, every panel updated).

    PYTHONPATH=. python bench/time_travel.py [--n 100000] [--steps 15]

Opens bench/history.py's store (built once under bench/out/: a history of audited edits over
the store's span) in the window, offscreen, with a query running (hybrid preset: the store has
no vectors) and the prompt view on, then moves the as-of bar to random moments. Prints medians
(ms) of: the step (AppState.set_as_of and every panel's as-of handler: table, timeline, map,
graph, detail, prompt view, edit rules), the step plus a repaint of the whole window, and the
step until the query panel shows the re-ranked results (its engine lane, off the GUI thread).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from history import OUT, build  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--steps", type=int, default=15)
    args = ap.parse_args(argv)
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, f"history_{args.n}.db")
    if not os.path.exists(path):
        print(f"building {path} …", file=sys.stderr)
        build(path, args.n)

    from PySide6.QtCore import QEventLoop, QSettings, QTimer

    from memviz.app.main import make_app, process_until
    app = make_app()
    from memviz.app.window import MainWindow

    def wait_for(signal, timeout=120.0):
        loop = QEventLoop()
        signal.connect(lambda *_a: loop.quit())
        QTimer.singleShot(int(timeout * 1000), loop.quit)
        loop.exec()

    settings = QSettings(os.path.join(OUT, "time-travel-settings.ini"), QSettings.IniFormat)
    w = MainWindow(settings)
    w.map.auto_umap = False
    w.resize(1500, 950)
    w.show()
    QTimer.singleShot(0, lambda: w.open_path(path, read_only=True))
    wait_for(w.opened)
    w.docks["prompt"].raise_()  # in view, so it assembles on every step (hidden, it would wait to be shown)
    process_until(lambda: w.prompt.plan is not None, 120.0)
    w.query.preset.setCurrentText("hybrid")
    w.query.text.setText("coffee meeting")
    w.query.run_query()
    wait_for(w.query.ranked)
    w.workers.wait()
    app.processEvents()
    lo, hi = w.as_of_bar.span
    w.as_of_bar.go_to(lo + (hi - lo) / 2)  # the first step reads the audit log (Timeline): once per load
    wait_for(w.query.ranked)
    process_until(lambda: not w.workers.running("token count"), 300.0)

    rng = np.random.default_rng(1)
    step, painted, ranked = [], [], []
    for T in rng.uniform(lo, hi, args.steps):
        t0 = time.perf_counter()
        w.as_of_bar.go_to(float(T))
        step.append(time.perf_counter() - t0)
        w.repaint()
        painted.append(time.perf_counter() - t0)
        wait_for(w.query.ranked)
        ranked.append(time.perf_counter() - t0)
        app.processEvents()
    prompt = []
    for T in rng.uniform(lo, hi, args.steps):
        w.state.set_as_of(float(T))
        t0 = time.perf_counter()
        w.prompt.refresh()
        prompt.append(time.perf_counter() - t0)

    def med(xs):
        return f"{statistics.median(xs) * 1000:.1f}"

    def runs(xs):
        return " ".join(f"{x * 1000:.0f}" for x in xs)
    n = w.state.data.n
    print(f"| measure ({n:,} memories, {args.steps} steps) | median ms | runs (ms) |")
    print("|---|---|---|")
    print(f"| scrubber step: every panel's as-of handler | {med(step)} | {runs(step)} |")
    print(f"| … plus a repaint of the whole window | {med(painted)} | {runs(painted)} |")
    print(f"| … until the query panel shows the re-ranked top k | {med(ranked)} | {runs(ranked)} |")
    print(f"| prompt view alone (assemble + list + text) | {med(prompt)} | {runs(prompt)} |")
    w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
