"""Benchmark of the window on a large store: `python bench/app.py [--n 100000] [--repeat 15]`.

Measures, offscreen: launch → interactive (window shown, store loaded, PCA map drawn),
selection propagation, slider move → results table repainted,
map pan/zoom frame, table sort/search, and reopen with the cached UMAP (with --umap the
first UMAP's cost is printed too). Prints a table of medians.
The store is generated once (random unit vectors labelled with the local model, so text
queries embed for real) and kept under $TMPDIR/memviz-bench/.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402

import memviz.store as ms  # noqa: E402
from memviz.embed import LOCAL_DIM, LOCAL_MODEL  # noqa: E402

WORDS = ("alice bob carol dave coffee tea train paris lisbon porto meeting project deadline dog cat garden "
         "recipe peanut allergy marathon laptop battery python test bug deploy server movie book sister "
         "brother birthday gift flight hotel rain sunny budget invoice doctor dentist gym yoga piano").split()
KINDS = ["episode"] * 14 + ["fact"] * 3 + ["preference", "reflection"]
AGENTS = ["assistant", "alice", "bob", "planner"]


def build(path: str, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    store = ms.create(path)
    t0 = 1_735_689_600
    centres = rng.normal(size=(40, LOCAL_DIM)).astype(np.float32)
    batch = 5000
    ids = [f"m{i:06d}" for i in range(n)]
    for start in range(0, n, batch):
        recs = []
        for i in range(start, min(n, start + batch)):
            kind = KINDS[rng.integers(len(KINDS))]
            v = centres[rng.integers(40)] + 0.6 * rng.normal(size=LOCAL_DIM).astype(np.float32)
            rec = {"id": ids[i], "kind": kind, "agent": AGENTS[rng.integers(len(AGENTS))],
                   "content": " ".join(rng.choice(WORDS, size=12)).capitalize() + ".",
                   "importance": int(rng.integers(1, 11)), "event_time": t0 + i * 300 + int(rng.integers(0, 300)),
                   "embedding": v / np.linalg.norm(v), "embedding_model": LOCAL_MODEL,
                   "valid_until": (t0 + i * 300 + 86400) if rng.random() < 0.03 else None}
            if kind == "reflection" and i > 50:
                rec["source_ids"] = [ids[j] for j in rng.integers(max(0, i - 2000), i, size=3)]
            recs.append(rec)
        store.insert_memories(recs, audit=False)
        print(f"  built {min(n, start + batch):,}/{n:,}", file=sys.stderr, end="\r")
    store.close()
    print(file=sys.stderr)


def median_ms(xs) -> str:
    return f"{statistics.median(xs) * 1000:.1f}" if xs else "n/a"


def spread(xs) -> str:
    return "runs " + " ".join(f"{x * 1000:.0f}" for x in xs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--umap", action="store_true", help="also compute the first UMAP (slow) if memviz.layout exists")
    args = ap.parse_args(argv)
    folder = os.path.join(tempfile.gettempdir(), "memviz-bench")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"app-{args.n}.db")
    if not os.path.exists(path):
        t = time.perf_counter()
        build(path + ".part", args.n)
        os.replace(path + ".part", path)
        print(f"built {path} in {time.perf_counter() - t:.1f} s", file=sys.stderr)

    from PySide6.QtCore import QPointF, QSettings  # noqa: PLC0415

    from memviz.app.main import make_app, process_until  # noqa: PLC0415
    app = make_app()
    from memviz.app.window import MainWindow  # noqa: PLC0415

    def wait(cond, timeout=120.0):
        return process_until(cond, timeout, poll=0.0005)

    rows = []  # (measure, n, median ms, note)
    settings = QSettings(os.path.join(folder, "bench-settings.ini"), QSettings.IniFormat)

    # --- launch -> interactive
    launch = []
    for _ in range(5):
        t = time.perf_counter()
        win = MainWindow(settings)
        win.map.auto_umap = False
        win.resize(1500, 950)
        win.show()
        done = []
        win.opened.connect(done.append)
        win.open_path(path)
        wait(lambda: done)
        win.repaint()
        app.processEvents()
        launch.append(time.perf_counter() - t)
        last = win
        if _ < 4:
            win.workers.wait()  # the next launch starts on a quiet process (graph job done)
            win.close()
    win = last
    n = win.state.data.n
    rows.append((f"launch → interactive (store read, map drawn: {win.map.method})", n, median_ms(launch),
                 f"≤ 2000 wanted; {spread(launch)}"))

    # --- selection propagation (select one memory: table, timeline, graph, map, detail follow)
    sel = []
    rng = np.random.default_rng(1)
    for _ in range(args.repeat):
        r = int(rng.integers(n))
        t = time.perf_counter()
        win.state.select([r])
        win.repaint()
        sel.append(time.perf_counter() - t)
    rows.append(("select one memory → every panel repainted", n, median_ms(sel), ""))

    # --- map pan / zoom frame
    vb, vp = win.map.vb, win.map.plot.viewport()
    frames = []
    for i in range(args.repeat):
        t = time.perf_counter()
        if i % 2:
            vb.scaleBy((0.9, 0.9))
        else:
            vb.translateBy(QPointF(0.01 * (vb.viewRange()[0][1] - vb.viewRange()[0][0]), 0))
        vp.repaint()
        frames.append(time.perf_counter() - t)
    rows.append(("map pan/zoom frame (all points drawn)", len(win.map.rows), median_ms(frames), "≤ 40 wanted"))

    tl_frames = []
    for i in range(args.repeat):
        t = time.perf_counter()
        win.timeline.vb.scaleBy((0.9 if i % 2 else 1.1, 1))
        win.timeline.plot.viewport().repaint()
        tl_frames.append(time.perf_counter() - t)
    rows.append(("timeline zoom frame", len(win.timeline.rows), median_ms(tl_frames), ""))

    # --- table
    srt, search = [], []
    for i in range(5):
        t = time.perf_counter()
        win.table._header_clicked(2 + i % 2)
        win.table.view.viewport().repaint()
        srt.append(time.perf_counter() - t)
        t = time.perf_counter()
        win.table.search.setText(["coffee", "peanut allergy", "m0123", "garden", "zzz"][i])
        win.table.refilter()
        win.table.view.viewport().repaint()
        search.append(time.perf_counter() - t)
    win.table.search.setText("")
    win.table.refilter()
    rows.append(("table sort by a column + repaint", n, median_ms(srt), ""))
    rows.append(("table search + repaint", n, median_ms(search), ""))

    # --- slider -> results repainted
    q = win.query
    got = []
    q.ranked.connect(lambda r, s: got.append(r))
    q.text.setText("coffee with alice in lisbon")
    t = time.perf_counter()
    q.run_query()
    wait(lambda: got)
    rows.append(("first query (embed + all components)", n, median_ms([time.perf_counter() - t]), ""))
    slider, overlay = [], []
    for i in range(args.repeat):
        got.clear()
        t = time.perf_counter()
        q.alpha.slider.setValue((q.alpha.slider.value() + 37) % q.alpha.slider.maximum())
        q._score_timer.stop()  # measure the work, not the 20 ms debounce
        q.rescore()
        wait(lambda: got)
        q.view.viewport().repaint()
        slider.append(time.perf_counter() - t)
        t = time.perf_counter()
        win.map._result_timer.stop()
        win.map._apply_result()
        win.map.plot.viewport().repaint()
        overlay.append(time.perf_counter() - t)
        wait(lambda: False, 0.1)  # the throttled map update of a real drag happens here
    rows.append(("slider move → results table repainted", n, median_ms(slider), "≤ 50 wanted"))
    rows.append(("  then map top-k/marker update + repaint", n, median_ms(overlay), "throttled to ~12/s"))

    # --- UMAP: first computation and reopen with the cache
    if args.umap:
        t = time.perf_counter()
        win.map.start_umap()
        wait(lambda: win.map.method.startswith("UMAP"), timeout=3600)
        rows.append(("first UMAP (background, incl. worker start)", n, median_ms([time.perf_counter() - t]), ""))
    reopen = []
    for _ in range(5):
        t = time.perf_counter()
        w2 = MainWindow(settings)
        w2.map.auto_umap = False
        w2.show()
        done = []
        w2.opened.connect(done.append)
        w2.open_path(path)
        wait(lambda: done)
        w2.repaint()
        reopen.append(time.perf_counter() - t)
        cached = w2.map.method
        w2.workers.wait()
        w2.close()
    rows.append((f"reopen (map: {cached})", n, median_ms(reopen), f"≤ 2000 wanted; {spread(reopen)}"))
    win.close()

    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'points':>8}  {'median ms':>9}  note")
    for m, k, ms_, note in rows:
        print(f"{m:<{width}}  {k:>8,}  {ms_:>9}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
