"""A scrubber step in the window (issue 15: ≤ 100 ms at 100k memories, every panel updated).

    PYTHONPATH=. python bench/time_travel.py [--n 100000] [--steps 15]

Opens bench/history.py's store (built once under bench/out/: a history of audited edits over
the store's span) in the window, offscreen, with every panel ready (the reflection graph built,
the prompt view in view and assembled) and a query running (hybrid preset: the store has no
vectors), then moves the as-of bar to random moments. Prints medians (ms) of:

- the step: AppState.set_as_of and every as-of handler (table, timeline, map, graph, detail,
  prompt view, edit rules, status bar), synchronously;
- until the query panel shows the re-ranked top k (its engine lane runs off the GUI thread
  while the GUI thread paints the panels changed by the step);
- until the window has settled: the ranking shown and every pending paint done, and the GUI
  thread's CPU time in that span (wall times on a shared machine swing with its load);
- each handler on its own, and a repaint of each plot (what the event loop pays per step).
"""
from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from history import OUT, build  # noqa: E402


def timed_handlers(callbacks, name: str, into: dict) -> None:
    """Wrap every handler of a Callbacks with a timer filed under its owner's name."""
    def label(fn) -> str:
        owner = getattr(fn, "__self__", None)
        where = type(owner).__name__ if owner is not None else fn.__qualname__.split(".")[0]
        what = fn.__name__ if fn.__name__ != "<lambda>" else "λ"
        return f"{name} → {where}.{what}"

    def wrap(fn):
        key = label(fn)

        def timed(*a):
            t0 = time.perf_counter()
            try:
                return fn(*a)
            finally:
                into[key].append(time.perf_counter() - t0)
        return timed
    callbacks._fns = [wrap(f) for f in callbacks._fns]


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
    process_until(lambda: w.graph.graph is not None, 120.0)  # a graph job still running would share the GIL
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
    process_until(lambda: False, 0.5)  # whatever the first step left pending

    handlers: dict[str, list] = collections.defaultdict(list)
    for name in ("as_of_changed", "params_changed", "result_changed"):
        timed_handlers(getattr(w.state, name), name, handlers)
    shown_at = []  # when the query panel showed a ranking (timed in the signal: the loop's exit comes later)
    w.query.ranked.connect(lambda *_a: shown_at.append(time.perf_counter()))
    rng = np.random.default_rng(1)
    step, ranked, settled, cpu = [], [], [], []
    for T in rng.uniform(lo, hi, args.steps):
        t0, c0 = time.perf_counter(), time.thread_time()
        w.as_of_bar.go_to(float(T))
        step.append(time.perf_counter() - t0)
        wait_for(w.query.ranked)
        ranked.append(shown_at[-1] - t0)
        app.processEvents()  # the paints the step and the ranking asked for
        settled.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
        process_until(lambda: False, 0.15)  # the map's throttled top-k rings, then the next step
    paints = collections.defaultdict(list)
    for _ in range(5):
        for name in ("timeline", "map", "graph"):
            t0 = time.perf_counter()
            getattr(w, name).plot.viewport().repaint()
            paints[name].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        w.query.view.viewport().repaint()
        paints["query results"].append(time.perf_counter() - t0)
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
    print(f"| … until the query panel shows the re-ranked top k | {med(ranked)} | {runs(ranked)} |")
    print(f"| … until the window has settled (every pending paint done) | {med(settled)} | {runs(settled)} |")
    print(f"| GUI thread's CPU time in that (less sensitive to a busy machine) | {med(cpu)} | {runs(cpu)} |")
    print(f"| prompt view alone (assemble + list + text) | {med(prompt)} | {runs(prompt)} |")
    print()
    print("| handler (per step) | median ms | max ms |")
    print("|---|---|---|")
    for key, xs in sorted(handlers.items(), key=lambda kv: -statistics.median(kv[1])):
        print(f"| {key} | {med(xs)} | {max(xs) * 1000:.1f} |")
    for name, xs in paints.items():
        print(f"| repaint of the {name} view | {med(xs)} | {max(xs) * 1000:.1f} |")
    w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
