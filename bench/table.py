"""The memory table's sort and search at 100k and 1M rows: the way before (Python's sort of the
texts, one `in` test per row, on the GUI thread) against memviz.session.table_order (numpy over
UTF-8 buffers), side by side in one run, and the table panel itself (a worker past
BACKGROUND_ROWS): a header click, a search typed, and the longest the GUI thread was held.

    PYTHONPATH=. python bench/table.py [--sizes 100000,1000000] [--reps 5] [--no-panel]

Rows are made here, no store needed: bench/retrieval.py's texts (8 of its words; every third
capitalised) and ids (m000000...), as in the stores bench/scale.py reads. Times: median
(min-max) of wall time, and the median CPU time of this process beside it (other work on the
machine stretches wall times; the load average is printed). GUI hold: the longest the GUI
thread went without running a 1 ms timer from the click or the search until its rows were
shown - the table's repaint with the new rows included (timed on its own in the last row). "In a
worker": the sort run in another thread while this one sleeps 0.2 ms at a time; the longest
it then waited for the GIL (what a worker doing that sort would hold the GUI thread).
Targets (issue 16): a sort and a search of 1M rows within 300 ms, the GUI thread kept free.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from retrieval import WORDS  # noqa: E402

from memviz.session.table_order import ColumnOrders, TextSearch, stable_order  # noqa: E402

NEEDLES = ("coffee", "river bri", "m00012", "e", "zzz")   # a new text each time
TYPING = ("c", "co", "cof", "coff", "coffe", "coffee")


def texts_and_ids(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n)
    words = np.array(WORDS, dtype=object)
    texts = np.empty(n, object)
    texts[:] = [(" ".join(w).capitalize() if i % 3 else " ".join(w))
                for i, w in enumerate(words[rng.integers(0, len(WORDS), (n, 8))].tolist())]
    ids = np.empty(n, object)
    ids[:] = [f"m{i:06d}" for i in range(n)]
    return texts, ids


# the way before (memviz until this change): kept here to compare against
def old_order(key: np.ndarray) -> np.ndarray:
    values = key.tolist()
    return np.fromiter(sorted(range(len(values)), key=values.__getitem__), np.int64, count=len(values))


def old_search(lower: list, ids: list, text: str, rows: np.ndarray | None = None) -> np.ndarray:
    lo = lower if rows is None else [lower[r] for r in rows.tolist()]
    ii = ids if rows is None else [ids[r] for r in rows.tolist()]
    return np.fromiter(((text in p) or (text in i) for p, i in zip(lo, ii)), bool, count=len(lo))


def timed(fn, reps: int):
    """(median wall ms, min, max, median CPU ms, last result); fn(i)."""
    wall, cpu, out = [], [], None
    for i in range(reps):
        w, c = time.perf_counter(), time.process_time()
        out = fn(i)
        cpu.append((time.process_time() - c) * 1e3)
        wall.append((time.perf_counter() - w) * 1e3)
    return statistics.median(wall), min(wall), max(wall), statistics.median(cpu), out


def gil_hold(fn) -> float:
    """The longest this thread waited for the GIL (a 0.2 ms sleep loop) while `fn` ran in
    another: what a worker running `fn` costs the GUI thread at most, in ms."""
    done = threading.Event()
    th = threading.Thread(target=lambda: (fn(), done.set()))
    worst, last = 0.0, time.perf_counter()
    th.start()
    while not done.is_set():
        time.sleep(0.0002)
        now = time.perf_counter()
        worst, last = max(worst, now - last), now
    th.join()
    return worst * 1e3


def core_rows(n: int, reps: int) -> list[tuple]:
    texts, ids = texts_and_ids(n)
    rows = []
    for name, key in (("content", texts), ("id", ids)):
        old = timed(lambda i: old_order(key), max(1, reps // 2))
        new = timed(lambda i: stable_order(key), reps)
        assert np.array_equal(old[-1], new[-1]), name
        rows.append((n, f"first sort by {name} (the column's order made)", old, new, None))
        held = [gil_hold(lambda: old_order(key)), gil_hold(lambda: stable_order(key))]
        rows.append((n, "  the same in a worker: the GUI thread's longest GIL wait", (held[0],) * 3 + (None,),
                     (held[1],) * 3 + (None,), None))
    orders, shown = ColumnOrders(), np.ones(n, bool)
    half = np.arange(n) % 2 == 0
    orders.shown_in_order("c", lambda: texts, (texts,), shown)
    resort = timed(lambda i: orders.shown_in_order("c", lambda: texts, (texts,), half if i % 2 else shown), reps)
    rows.append((n, "sort again, any filter (order kept)", None, resort, None))

    search = TextSearch()
    made = timed(lambda i: (search.reset(texts, ids), search.prepare()), 1)
    rows.append((n, "search buffers made (a worker, after open)", None, made, None))
    lower, idl = [t.lower() for t in texts.tolist()], ids.tolist()
    old = timed(lambda i: old_search(lower, idl, NEEDLES[i % len(NEEDLES)]), len(NEEDLES))
    new = timed(lambda i: (setattr(search, "_last", None), search.mask(NEEDLES[i % len(NEEDLES)]))[-1],
                len(NEEDLES))
    for t in NEEDLES:
        assert np.array_equal(old_search(lower, idl, t), search.mask(t)), t
    rows.append((n, "search, a new text (" + ", ".join(NEEDLES) + ")", old, new, None))

    def typing_old(i, last=[None]):  # noqa: B006 - the last answer, as the old TextSearch kept it
        text = TYPING[i % len(TYPING)]
        last[0] = old_search(lower, idl, text, None if i % len(TYPING) == 0 else np.flatnonzero(last[0]))
        return last[0]

    def typing_new(i):
        if i % len(TYPING) == 0:
            search._last = None
        return search.mask(TYPING[i % len(TYPING)])
    rows.append((n, "search, typing on (c, co, ... coffee)", timed(typing_old, 2 * len(TYPING)),
                 timed(typing_new, 2 * len(TYPING)), None))
    return rows


def panel_rows(n: int) -> list[tuple]:
    """The table panel with a worker, offscreen: what a user waits for, and the GUI thread's longest hold."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QElapsedTimer, QTimer
    from PySide6.QtWidgets import QApplication

    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
    from test_app_table_order import big_data  # the test's rows (StoreData without a store)

    from memviz.app.panels.table_panel import COLUMNS, TablePanel
    from memviz.app.workers import Workers
    from memviz.session.state import AppState

    app = QApplication.instance() or QApplication([])
    state, workers = AppState(), Workers()
    panel = TablePanel(state, workers)
    panel.resize(1000, 600)
    panel.show()
    clock = QElapsedTimer()
    clock.start()
    hold = {"last": 0, "max": 0}

    def tick():  # the GUI thread's longest gap between two 1 ms timer ticks
        now = clock.elapsed()
        hold["max"], hold["last"] = max(hold["max"], now - hold["last"]), now
    beat = QTimer(interval=1, timeout=tick)

    def watch():
        hold["last"], hold["max"] = clock.elapsed(), 0
        beat.start()

    def until(cond, limit=120.0):
        t = time.perf_counter()
        while not cond():
            app.processEvents()
            time.sleep(0.0005)
            if time.perf_counter() - t > limit:
                raise TimeoutError
        return (time.perf_counter() - t) * 1e3

    def settled():
        return not (workers.running("table") or panel._refilter_timer.isActive())

    data = big_data(n)
    t = time.perf_counter()
    state.set_data(data)
    opened = (time.perf_counter() - t) * 1e3
    ahead = until(lambda: settled() and not workers.running("table ahead")) + opened
    rows = [(n, "panel: set_data on the GUI thread", None, (opened,) * 3 + (None,), None),
            (n, "panel: search buffers + every order made (a worker)", None, (ahead,) * 3 + (None,), None)]
    for name in ("content", "id", "importance"):
        watch()
        t = time.perf_counter()
        panel._header_clicked(COLUMNS.index(name))
        until(settled)
        took = (time.perf_counter() - t) * 1e3
        beat.stop()
        rows.append((n, f"panel: click on {name} → rows shown (longest GUI hold)", None,
                     (took,) * 3 + (None,), hold["max"]))
    for text in ("coffee", "river bri"):
        panel.search.clear()
        until(settled)
        watch()
        t = time.perf_counter()
        panel.search.setText(text)   # what typing does; the panel waits typing's pause (150 ms) first
        panel._refilter_timer.stop()
        panel.refilter()
        until(settled)
        took = (time.perf_counter() - t) * 1e3
        beat.stop()
        rows.append((n, f"panel: search {text!r} → rows shown (longest GUI hold)", None,
                     (took,) * 3 + (None,), hold["max"]))
    reps = []
    for _ in range(3):   # what the GUI thread spends on the table's new rows anyway: one repaint
        t = time.perf_counter()
        panel.view.viewport().repaint()
        reps.append((time.perf_counter() - t) * 1e3)
    rows.append((n, "panel: one repaint of the table (for the GUI hold)", None,
                 (statistics.median(reps), min(reps), max(reps), None), None))
    workers.shutdown()
    panel.close()
    return rows


def fmt(v) -> str:
    return "—" if v is None else f"{v:.0f}" if v >= 100 else f"{v:.1f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--no-panel", action="store_true")
    args = ap.parse_args(argv)
    out = []
    for n in [int(s) for s in args.sizes.split(",")]:
        print(f"{n:,} rows ...", file=sys.stderr, flush=True)
        out += core_rows(n, args.reps)
        if not args.no_panel:
            out += panel_rows(n)
    print(f"\nload average before/after: {os.getloadavg()[0]:.1f} (2 cores shared); wall ms median (min–max), "
          f"CPU ms of this process; old = Python's sort / one `in` per row, on the GUI thread")
    print(f"{'rows':>9} | {'measure':58} | {'old wall':>18} | {'old cpu':>7} | {'new wall':>18} | {'new cpu':>7} | "
          f"{'old/new':>7} | GUI hold")
    for n, what, old, new, hold in out:
        def cell(r):
            return "—" if r is None else f"{fmt(r[0])} ({fmt(r[1])}–{fmt(r[2])})"
        ratio = f"{old[0] / new[0]:.1f}×" if old is not None and new[0] else "—"
        print(f"{n:>9,} | {what:58} | {cell(old):>18} | {fmt(old[3]) if old else '—':>7} | {cell(new):>18} | "
              f"{fmt(new[3]):>7} | {ratio:>7} | {fmt(hold) if hold is not None else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
