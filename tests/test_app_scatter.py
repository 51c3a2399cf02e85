"""Drawing many points does not crash, and the installed Qt binding does not leak references.

PySide6 6.12.0 on CPython 3.11 takes a reference from None/True on every signal, which
aborts the interpreter ("none_dealloc" / "bool_dealloc"); pyproject.toml pins below it.
The drawing tests run in a subprocess, since that failure would take pytest down with it."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.qt  # imports Qt inside the tests and in child processes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_script(code: str, timeout: int = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_binding_keeps_singleton_references():
    from PySide6.QtCore import QCoreApplication, QObject, Signal

    app = QCoreApplication.instance() or QCoreApplication([])  # noqa: F841

    class Probe(QObject):
        ping = Signal()

    p = Probe()
    p.ping.connect(lambda: None)
    p.objectNameChanged.connect(lambda _n: None)
    before = sys.getrefcount(None), sys.getrefcount(True)
    for i in range(200):
        p.ping.emit()
        p.setObjectName(f"p{i}")
    assert (sys.getrefcount(None), sys.getrefcount(True)) == pytest.approx(before, abs=20), \
        "this PySide6 leaks references to None/True (6.12.0 does): pin a working version"


def test_many_signals_and_uncached_symbols_do_not_abort():
    # 20k C++ signals into Python slots and 20k emits, then symbols drawn one by one without
    # pyqtgraph's cache: each of these alone aborted CPython 3.11 + PySide6 6.12.0.
    out = run_script("""
        import sys, numpy as np
        import memviz.app
        import pyqtgraph as pg
        from PySide6.QtCore import QObject, Signal
        app = pg.mkQApp()
        class O(QObject):
            s = Signal()
        o = O(); o.s.connect(lambda: None); o.objectNameChanged.connect(lambda n: None)
        for i in range(20000):
            o.s.emit(); o.setObjectName(str(i))
        w = pg.PlotWidget(); w.resize(500, 400)
        s = pg.ScatterPlotItem(pxMode=True, useCache=False)
        s.setData(x=np.random.rand(5000), y=np.random.rand(5000), size=7, brush=pg.mkBrush('r'))
        w.addItem(s); w.show(); app.processEvents(); w.grab()
        print("survived", sys.getrefcount(None) > 0)
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "survived True" in out.stdout


@pytest.mark.slow
def test_map_and_timeline_draw_100k_points():
    out = run_script("""
        import numpy as np, os, tempfile, time
        import memviz.app
        from memviz.app.main import make_app
        app = make_app()
        from memviz.session.state import AppState, StoreData
        from memviz.app.panels.map_panel import MapPanel
        from memviz.app.panels.timeline_panel import TimelinePanel
        from memviz.app.workers import Workers
        from memviz.store.arrays import MemoryArrays
        from memviz.store import Provenance
        n = 100_000
        rng = np.random.default_rng(0)
        emb = rng.normal(size=(n, 16)).astype(np.float32)
        emb /= np.linalg.norm(emb, axis=1, keepdims=True)
        kinds = np.array(["episode", "fact", "reflection", "preference"], dtype=object)[rng.integers(0, 4, n)]
        vu = np.where(rng.random(n) < 0.05, 1.0, np.nan)
        a = MemoryArrays(ids=np.array([f"m{i}" for i in range(n)], dtype=object), rowid=np.arange(1, n + 1),
            kind=kinds, agent=np.array(["a"] * n, dtype=object), importance=rng.integers(1, 11, n).astype(float),
            event_time=np.sort(rng.uniform(0, 1e7, n)), created_at=np.zeros(n), last_accessed=np.full(n, np.nan),
            valid_until=vu, confidence=np.ones(n), decay_rate=np.zeros(n), access_count=np.zeros(n, np.int64),
            protected=np.zeros(n, bool), embedding=emb, has_embedding=np.ones(n, bool), embedding_model="m",
            bad_json=np.zeros(n, bool), bad_text=np.zeros(n, bool), preview=np.array(["text"] * n, dtype=object))
        class FakeStore:  # only what the two panels read: no database, so no cached map labels either
            path = "mem"
            read_only = True

            def meta(self, key, default=None):
                return default
        data = StoreData(store=FakeStore(), arrays=a, provenance_=Provenance(), counts={},
                         kinds=["episode", "fact", "reflection", "preference"], agents=["a"])
        st = AppState(); wk = Workers()
        m = MapPanel(st, wk); m.auto_umap = False; t = TimelinePanel(st)
        for w in (m, t):
            w.resize(900, 600); w.show()
        st.set_data(data)
        st.select(np.arange(0, n, 7))
        for w in (m, t):
            for i in range(3):
                w.vb.scaleBy((0.8, 0.8)); w.plot.viewport().repaint()
            img = w.plot.grab()
            assert img.width() == w.plot.width()
        for name in ("kind", "importance", "age"):
            m.color_by.setCurrentText(name); m.plot.viewport().repaint()
        from memviz.app.plots.points_item import PointsItem
        items = [m.points, t.points, m.overlay, m.topk, m.marker, t.overlay]
        assert all(isinstance(it, PointsItem) for it in items)
        # a handful of pre-rendered symbols, not one per point
        assert 0 < t.points.atlas_entries() <= 4 * 5 * 6 and 0 < m.points.atlas_entries() <= 25 * 2
        print("drawn", len(m.points), len(t.points), len(m.overlay))
    """)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "drawn 100000 100000 14286" in out.stdout
