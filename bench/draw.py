"""Drawing benchmark at fleet scale: `python bench/draw.py [--sizes 100000,1000000] [--repeat 15]`.

Opens each store in the real window (offscreen, 1500×950) and measures, as medians over
`--repeat` runs:
- map and timeline pan/zoom frames (the view moved, the plot repainted) zoomed out, drawn as a
  density image with outliers (DensityPointsItem) and, for comparison, every point drawn
  (the same item with its density mode off), then zoomed in until points are drawn;
- select a memory → every panel repainted (table, detail, timeline, map, graph, reflect meter):
  random memories, and memories that take part in the reflection graph;
- the reflection graph: the layout job (memviz.layout.graph_layout and the panel's adaptation),
  the clusters of a summarised graph, and the panel's redraw.
Stores are bench/app.py's generator (40 clusters of vectors, 4 agents, reflections with 4 source
ids each: ~210k provenance links at 1M), built once under $TMPDIR/memviz-bench/ (1M: ~5 min, 2.6 GB).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

SOURCES = 4  # source ids per reflection: 1M memories -> ~210k links


def store_path(n: int) -> str:
    import app  # bench/app.py's generator
    folder = os.path.join(tempfile.gettempdir(), "memviz-bench")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"draw-{n}.db")
    if not os.path.exists(path):
        t = time.perf_counter()
        app.build(path + ".part", n, sources=SOURCES)
        os.replace(path + ".part", path)
        print(f"built {path} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    return path


class Clock:
    """Wall time and the GUI thread's CPU time of a step: on a busy machine (other processes on
    both cores) the wall time is mostly waiting; the CPU time is what the step costs."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def __enter__(self):
        self._t, self._c = time.perf_counter(), time.thread_time()
        return self

    def __exit__(self, *exc) -> None:
        self.wall.append(time.perf_counter() - self._t)
        self.cpu.append(time.thread_time() - self._c)

    def row(self, measure: str, n: int, note: str = "") -> tuple:
        return measure, n, med(self.wall), med(self.cpu), note


def med(xs) -> float:
    return statistics.median(xs) * 1e3


def frames(vb, viewport, repeat: int, zoom_axes=(True, True)) -> Clock:
    """Alternately pan by 2% and zoom in/out by 10% (ending where it started), repainting each time."""
    from PySide6.QtCore import QPointF
    clock = Clock()
    for i in range(repeat):
        (x0, x1), (y0, y1) = vb.viewRange()
        with clock:
            if i % 2 == 0:
                vb.translateBy(QPointF(0.02 * (x1 - x0) * (1 if i % 4 == 0 else -1), 0))
            else:
                f = 0.9 if i % 4 == 1 else 1 / 0.9
                vb.scaleBy((f if zoom_axes[0] else 1, f if zoom_axes[1] else 1))
            viewport.repaint()
    return clock


def bench_size(n: int, repeat: int, rows: list) -> None:
    from PySide6.QtCore import QSettings

    from memviz.app.main import make_app, process_until
    app = make_app()  # noqa: F841 - keeps the QApplication alive
    from memviz.app.panels import graph_panel
    from memviz.app.window import MainWindow

    path = store_path(n)
    os.environ.setdefault("MEMVIZ_CACHE_DIR", os.path.join(tempfile.gettempdir(), "memviz-bench", "draw-cache"))
    settings = QSettings(os.path.join(tempfile.mkdtemp(), "draw.ini"), QSettings.IniFormat)
    win = MainWindow(settings)
    win.map.auto_umap = False
    win.resize(1500, 950)
    win.show()
    opened = []
    win.opened.connect(opened.append)
    with Clock() as opening:
        win.open_path(path, read_only=True)
        process_until(lambda: opened, 1800)
        win.repaint()
    # frames while the open's background jobs (map labels, token counts, graph) still run: they
    # share the GIL with the GUI thread
    busy = []
    for panel, axes in ((win.timeline, (True, False)), (win.map, (True, True))):
        panel.plot.viewport().repaint()
        busy.append(frames(panel.vb, panel.plot.viewport(), repeat, axes))
    jobs = ", ".join(j for j in ("map labels", "token count", "graph", "table ahead") if win.workers.running(j)) or "none left"
    with Clock() as graph_wait:
        process_until(lambda: win.graph.graph is not None, 1800)
        process_until(win.workers.idle, 1800)  # every job done
    data = win.state.data
    rows.append(opening.row("window open → interactive (first paint)", n, "the core part's figure; for context"))
    rows.append(graph_wait.row("  then every background job done (after the open)", n, "in the background"))
    for name, clock in zip(("timeline", "map"), busy):
        rows.append(clock.row(f"{name} pan/zoom frame while the open's jobs run", n, f"jobs then: {jobs}"))

    # --- map and timeline frames: density (zoomed out), every point, zoomed in
    for name, panel, axes in (("map", win.map, (True, True)), ("timeline", win.timeline, (True, False))):
        item, vb, vp = panel.points, panel.vb, panel.plot.viewport()
        panel.redraw(fit=True) if name == "timeline" else vb.autoRange(padding=0.03)
        vp.repaint()  # the density grid is built at the first frame: not a pan/zoom frame
        with Clock() as build:
            item._grid = None
            vp.repaint()
        dens = frames(vb, vp, repeat, axes)
        mode = item.last_frame.mode if item.last_frame is not None else "points"
        rows.append(dens.row(f"{name} pan/zoom frame, zoomed out ({mode})", len(item), "≤ 40 wanted"))
        rows.append(build.row(f"  {name}: first frame after new points (grid built)", len(item),
                              "once per redraw of the points"))
        keep = item.points_max
        item.points_max = 10 ** 12
        every = frames(vb, vp, max(3, repeat // 3), axes)
        item.points_max = keep
        vp.repaint()
        rows.append(every.row(f"  {name} frame, every point drawn (density off)", len(item),
                              f"density {med(every.cpu) / max(med(dens.cpu), 1e-3):.0f}× less CPU"))
        # zoom in on the densest part until points are drawn
        for _ in range(40):
            f = item.last_frame
            if f is None or f.mode == "points":
                break
            vb.scaleBy((0.7 if axes[0] else 1, 0.7 if axes[1] else 1))
            vp.repaint()
        shown = item.last_frame.visible if item.last_frame is not None else len(item)
        zin = frames(vb, vp, repeat, axes)
        rows.append(zin.row(f"{name} pan/zoom frame, zoomed in (points)", shown, "≤ 40 wanted; points in view"))
        panel.redraw(fit=True) if name == "timeline" else vb.autoRange(padding=0.03)
        vp.repaint()
    recolour = Clock()
    for by in ("importance", "agent", "kind"):  # the binning is kept: only the colours are summed again
        with recolour:
            win.map.color_by.setCurrentText(by)
            win.map.plot.viewport().repaint()
    rows.append(recolour.row("map colour mode changed → redrawn", len(win.map.points), "redraw + first frame"))

    # --- selection: every panel follows
    rng = np.random.default_rng(3)
    g = win.graph.graph
    in_graph = g.rows[g.rows >= 0] if g is not None else np.zeros(0, np.int64)
    for label, pool in (("a random memory", np.arange(data.n)), ("a memory in the graph", in_graph)):
        if not len(pool):
            continue
        clock = Clock()
        for _ in range(repeat):
            r = int(pool[rng.integers(len(pool))])
            with clock:
                win.state.select([r])
                win.repaint()
        rows.append(clock.row(f"select {label} → every panel repainted", n, "≤ 100 wanted"))
    win.state.select([])
    win.repaint()

    # --- the reflection graph
    with Clock() as build:
        g = graph_panel.build_graph(data)
    rows.append(build.row(f"graph layout ({g.n_links:,} links, {g.n:,} nodes), background job", n,
                          "graph_layout + the panel's Graph"))
    with Clock() as ready:
        win.graph._graph_ready(data, g)
        win.graph.repaint()
    what = "clusters" if win.graph.summary is not None else "every node and link"
    rows.append(ready.row(f"  graph ready → drawn ({what})", n, "GUI thread"))
    rows.append(frames(win.graph.vb, win.graph.plot.viewport(), repeat).row("  graph pan/zoom frame", n))
    win.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args(argv)
    rows: list = []
    load = os.getloadavg()[0]
    for n in (int(s) for s in args.sizes.split(",")):
        bench_size(n, args.repeat, rows)
    width = max(len(r[0]) for r in rows)
    print(f"load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, on {os.cpu_count()} cores; "
          "wall = elapsed, cpu = the GUI thread's own")
    print(f"{'measure':<{width}}  {'points':>9}  {'wall ms':>8}  {'cpu ms':>8}  note")
    for m, k, wall, cpu, note in rows:
        print(f"{m:<{width}}  {k:>9,}  {wall:>8.1f}  {cpu:>8.1f}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
