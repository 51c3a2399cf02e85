"""The map with memviz.layout: UMAP computed in the background, swapped in, cached for reopen."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QCoreApplication, QSettings  # noqa: E402
from test_app_support import build_store  # noqa: E402

from memviz.app.window import MainWindow  # noqa: E402


def open_window(qtbot, tmp_path, path, auto_umap):
    w = MainWindow(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat))
    w.map.auto_umap = auto_umap
    qtbot.addWidget(w)
    w.show()
    with qtbot.waitSignal(w.opened, timeout=30000):
        w.open_path(str(path))
    return w


@pytest.mark.slow
def test_umap_swapped_in_then_cached(qtbot, tmp_path, monkeypatch):
    """Laid out as a large store is (a sample fitted, the rest placed: thresholds lowered to this
    store's size), the window says so, and says it again when the map comes from the cache."""
    import memviz.layout.sampled as sampled
    monkeypatch.setattr(sampled, "SAMPLE_ABOVE", 14)
    monkeypatch.setattr(sampled, "SAMPLE", 14)
    path = tmp_path / "mem.db"
    build_store(path).close()
    w = open_window(qtbot, tmp_path, path, auto_umap=False)
    assert w.map.method == "PCA"
    pca = w.map.coords.copy()
    seen, texts = [], []
    w.workers.activity.connect(lambda name, f, text: seen.append((name, f)) if name == "umap" else None)
    w.workers.activity.connect(lambda name, f, text: texts.append(text) if name == "umap" and text else None)
    w.map.start_umap()
    qtbot.waitUntil(lambda: w.map.method.startswith("UMAP"), timeout=420000)
    assert seen and any(f >= 0 for _, f in seen)  # progress reached the status bar
    # the stages the status bar showed, in order (numba's compile is "preparing", never "0%")
    stages = [t.split(" (")[0] for t in dict.fromkeys(texts)]
    assert stages[0] == "UMAP: preparing" and "UMAP: nearest neighbours" in stages
    assert stages.index("UMAP: nearest neighbours") < stages.index("UMAP: optimising layout") < \
        stages.index("UMAP: placing")
    assert any(t.startswith("UMAP: optimising layout (epoch ") for t in texts)
    umap = w.map.coords.copy()
    has = w.state.data.arrays.has_embedding
    assert np.isfinite(umap[has]).all() and not np.allclose(umap[has], pca[has])
    assert len(w.map.rows) == int(has.sum())
    how = f"UMAP of a random 14 of {int(has.sum())} memories; the other {int(has.sum()) - 14} placed by neighbours"
    assert w.map.method.startswith(how + " (") and how in w.map.method_label.text()
    assert sampled.method_detail() in w.map.method_label.toolTip()
    w.close()
    w2 = open_window(qtbot, tmp_path, path, auto_umap=True)
    assert w2.map.method == how + " (cached)" and how in w2.map.method_label.text()
    np.testing.assert_allclose(w2.map.coords[has], umap[has], rtol=1e-5)
    assert not w2.workers.running("umap")


def test_umap_cancel_keeps_pca(qtbot, tmp_path, monkeypatch):
    """Cancelled while it optimises (given epochs for minutes), UMAP's worker process is stopped
    at once, the job ends, and the map keeps its PCA layout."""
    import memviz.layout.umap_worker as umap_worker
    monkeypatch.setitem(umap_worker.DEFAULT_PARAMS, "n_epochs", 10 ** 7)
    path = tmp_path / "mem.db"
    build_store(path).close()
    w = open_window(qtbot, tmp_path, path, auto_umap=False)
    texts = []
    w.workers.activity.connect(lambda name, f, text: texts.append(text) if name == "umap" else None)
    w.map.start_umap()
    assert w.workers.running("umap") and w.cancel_button.isVisible()
    qtbot.waitUntil(lambda: any(t.startswith("UMAP: optimising layout") for t in texts), timeout=420000)
    fitting = umap_worker.shared_worker().pid
    w.workers.cancel("umap")
    assert not w.cancel_button.isVisible() and not w.workers.running("umap")
    assert w.workers.wait(30000), "the UMAP job went on after its cancel"
    assert umap_worker.shared_worker().pid != fitting  # the process that was fitting was stopped
    QCoreApplication.processEvents()  # what the ended job posted is delivered (and dropped)
    assert w.map.method == "PCA"
