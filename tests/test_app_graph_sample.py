"""The reflection graph of the bundled sample as a newcomer first sees it, at the two window sizes
the README shows: labels apart and beside their nodes, the selection's chain labelled level by level
from the top down, and links outside it faint (hundreds of them must not make a grey fan)."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QImage

from memviz.app.plain_text import plain_tooltip
from memviz.app.plots import style

SAMPLE = Path(__file__).resolve().parent.parent / "sample_dbs" / "assistant.db"
SIZES = [(1100, 700), (1920, 1080)]


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "assistant.db"
    shutil.copyfile(SAMPLE, path)
    return path


def open_sample(qtbot, make_window, sample, size, select_deepest: bool):
    win = make_window(sample, read_only=True, graph=True, size=size, timeout=60000)
    gp = win.graph
    g = gp.graph
    real = np.flatnonzero(g.rows >= 0)
    top = int(real[np.argmax(g.level[real])])
    if select_deepest:
        win.state.select_ids([win.state.data.arrays.ids[g.rows[top]]])
    gp.fit_view()
    qtbot.waitUntil(lambda: not gp._relabel.isActive(), timeout=5000)  # labels follow the view on a timer
    return win, gp, top


def beside(label: QRectF, node: QRectF) -> bool:
    """Whether a label is beside a node: at its height, left or right of it."""
    return abs(label.center().y() - node.center().y()) < 2 and \
        0 <= min(abs(label.left() - node.right()), abs(node.left() - label.right())) <= 6


def node_rect(gp, i) -> QRectF:
    """The node's marker, in scene pixels."""
    g, data = gp.graph, gp.state.data
    r = float(style.importance_sizes(data.arrays.importance[[g.rows[i]]], 6, 16)[0]) / 2
    c = gp.vb.mapViewToScene(QPointF(g.x[i], g.y[i]))
    return QRectF(c.x() - r, c.y() - r, 2 * r, 2 * r)


@pytest.mark.parametrize("size", SIZES)
def test_the_deepest_chain_reads_top_to_bottom_with_labels_apart(qtbot, make_window, sample, size):
    win, gp, top = open_sample(qtbot, make_window, sample, size, select_deepest=True)
    g = gp.graph
    rects = gp.label_rects()
    area = gp.vb.sceneBoundingRect()
    for k, r in enumerate(rects):
        assert area.contains(r), (r, area)
        for other in rects[k + 1:]:
            assert not r.intersects(other), (r, other)
    assert any(beside(r, node_rect(gp, top)) for r in rects)  # the selection is named where it is
    # the selection and, below it, one memory per level down to the evidence
    chain = gp.chain
    assert chain[0] == top and list(g.level[chain]) == list(range(int(g.level[top]), -1, -1))
    labelled = gp.labelled_nodes()
    for i in chain:  # each labelled beside its node, at its level: the labels read top to bottom
        assert i in labelled, (i, g.level[i])
        assert beside(labelled[i], node_rect(gp, i))
        text = gp.labels[list(labelled).index(i)].textItem.toPlainText()
        assert len(text.rstrip("…")) >= 5
        start = win.state.data.previews[g.rows[i]][:len(text.rstrip("…"))]
        assert text.rstrip("…") == start
    ys = [labelled[i].center().y() for i in chain]
    assert ys == sorted(ys)
    for i, label in labelled.items():  # no label hides a node of the chain
        for j in chain:
            if j != i:
                assert not label.intersects(node_rect(gp, j)), (i, j)


def drawn_contrast(item) -> float:
    """How far a link item's colour, as drawn over the white plot, is from the background (0-1)."""
    c = item.opts["pen"].color()
    return c.alphaF() * (1 - (c.redF() + c.greenF() + c.blueF()) / 3)


def test_links_outside_the_lineage_recede_and_the_chain_is_drawn_on_top(qtbot, make_window, sample):
    win, gp, _ = open_sample(qtbot, make_window, sample, SIZES[0], select_deepest=True)
    chain, lineage = gp.chain_edges, gp.hot_edges
    for faint in (gp.edges, gp.arrows, gp.sup_edges):
        assert drawn_contrast(faint) <= drawn_contrast(chain) / 3, faint
        assert faint.opts["pen"].widthF() < chain.opts["pen"].widthF()
        assert faint.zValue() < lineage.zValue() < chain.zValue()
    assert drawn_contrast(lineage) < drawn_contrast(chain) and lineage.opts["pen"].widthF() < chain.opts["pen"].widthF()
    x, y = chain.getData()
    assert len(x) == 2 * (len(gp.chain) - 1)  # one dark segment per step of the chain
    # the line beside Fit, cut where the panel is narrow, is whole in its tooltip
    assert "links" in gp.info.text() and gp.info.toolTip() == plain_tooltip(gp.info.text())


@pytest.mark.parametrize("size", SIZES)
def test_hundreds_of_links_make_no_grey_fan(qtbot, make_window, sample, size):
    """Nothing selected: the plot's grey pixels (links, arrowheads; label text left out) stay light."""
    win, gp, _ = open_sample(qtbot, make_window, sample, size, select_deepest=False)
    assert gp.graph.n_links > 700
    img = gp.plot.grab().toImage().convertToFormat(QImage.Format_RGB32)
    w, h = img.width(), img.height()
    px = np.frombuffer(img.constBits(), np.uint8).reshape(h, img.bytesPerLine() // 4, 4)[:, :w, :3].astype(int)
    mask = np.zeros((h, w), bool)
    box = gp.vb.sceneBoundingRect().toAlignedRect()
    mask[max(box.top(), 0):box.bottom(), max(box.left(), 0):box.right()] = True
    for r in gp.label_rects():
        q = r.toAlignedRect()
        mask[max(q.top() - 1, 0):q.bottom() + 2, max(q.left() - 1, 0):q.right() + 2] = False
    grey = (px.max(axis=2) - px.min(axis=2) < 8) & (px.mean(axis=2) < 225) & mask
    back = gp.plot.backgroundBrush().color()
    assert back.lightness() > 240  # the light theme: links are grey on white
    assert grey.sum() < 0.01 * mask.sum(), grey.sum() / mask.sum()


def test_a_redraw_while_the_graph_is_built_does_not_say_there_is_none(qtbot, make_window, sample):
    # a theme change or a selection redraws the panel before its graph is ready: the line keeps
    # saying it is being built, not "no derived memories" of a store full of them
    win = make_window(sample)
    gp = win.graph
    gp._graph_timer.stop()   # the build held back, as while the window paints its other panels
    assert gp.graph is None and gp.info.text() == "building the graph…"
    gp.redraw(fit=True)
    assert gp.info.text() == "building the graph…"
    gp._start_graph_job()
    qtbot.waitUntil(lambda: gp.graph is not None, timeout=20000)
    assert "source links" in gp.info.text()
