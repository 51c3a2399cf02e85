"""Timeline: every memory on a real time axis, in lanes by kind or by agent.

Marker size = importance, colour = kind; retired (superseded or soft-deleted) memories are
hollow and faded, and hidden when "show retired" is off. Dragging with the range tool (or
Shift+drag) draws a time range that filters the other panels; its edges stay draggable.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QCheckBox, QComboBox, QLabel, QSizePolicy, QToolButton

from memviz.app.plain_text import plain_tooltip
from memviz.app.plots import style
from memviz.app.plots.scatter_panel import ScatterPanel
from memviz.app.workers import PacedCall
from memviz.session.state import AppState
from memviz.store import iso

DRAWN = {"event_time", "importance", "valid_until", "kind", "agent"}  # what a point shows
STYLED = {"importance", "valid_until", "kind"}  # ... of which only its marker, not its place (lanes by agent)


class TimelinePanel(ScatterPanel):
    def __init__(self, state: AppState, parent=None) -> None:
        self.time_axis = pg.DateAxisItem(orientation="bottom", utcOffset=0)
        super().__init__(state, parent, axis_items={"bottom": self.time_axis})
        self.points.grid_size = (4096, 256)  # zoomed along time only: fine cells along x
        self.vb.shift_tool = "xrange"
        self.vb.setMouseEnabled(x=True, y=False)
        self.plot.setLabel("bottom", "event time (UTC)")
        self.lanes = QComboBox()
        self.lanes.addItems(["kind", "agent"])
        self.show_retired = QCheckBox("show retired", checked=True)
        self.range_tool = QToolButton(text="Drag a time range", checkable=True)
        self.range_tool.setToolTip("Drag across the timeline to filter every panel to that time range "
                                   "(Shift+drag does the same)")
        self.clear_range = QToolButton(text="Clear range", enabled=False)
        self.fit = QToolButton(text="Fit")
        self.follow = QCheckBox("follow newest")
        self.follow.setToolTip("When the agent writes, move the view so its newest memory is at the right edge "
                               "(the zoom stays)")
        self.range_label = QLabel()
        self.range_label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        for w in (QLabel("lanes by"), self.lanes, self.show_retired, self.range_tool, self.clear_range, self.fit,
                  self.follow):
            self.toolbar.addWidget(w)
        self.toolbar.addWidget(self.range_label, 1)
        self.region = pg.LinearRegionItem(movable=True)
        self.region.setZValue(-5)
        self.region.hide()
        self.plot.addItem(self.region, ignoreBounds=True)
        self.region.sigRegionChangeFinished.connect(self._region_moved)
        self.lanes.currentIndexChanged.connect(lambda: self.redraw(fit=True))
        self.show_retired.toggled.connect(state.set_show_retired)
        self.range_tool.toggled.connect(lambda on: setattr(self.vb, "tool", "xrange" if on else "pan"))
        self.clear_range.clicked.connect(lambda: state.set_time_range(None))
        self.fit.clicked.connect(lambda: self.vb.autoRange(padding=0.02))
        state.data_changed.connect(lambda _d: self.redraw(fit=not state.reloaded))  # a re-read keeps the view
        state.rows_changed.connect(self._on_rows)
        self._live = PacedCall(self._live_redraw, self)
        self._newest: float | None = None  # event time of the newest memory added since the last live redraw
        self._added: list = []             # rows added since the last live redraw
        self._restyle: list = []           # rows whose marker changed since (a memory retired, a new importance)
        self._whole = False                # ... and whether a point moved (everything is drawn again)
        self._kinds_drawn = 0
        state.show_retired_changed.connect(self._retired_toggled)
        state.time_filter_changed.connect(self._time_filter_changed)
        self.lane_names: list[str] = []
        self.vb.sigResized.connect(lambda *_: self._label_lanes())
        # the window's "as of" moment, drawn on the timeline and draggable: a scrubber on the timeline
        self.as_of_line = pg.InfiniteLine(angle=90, movable=True, label="as of", labelOpts={"position": 0.85})
        self.as_of_line.setZValue(20)
        self.as_of_line.hide()
        self.plot.addItem(self.as_of_line, ignoreBounds=True)
        self.as_of_line.sigPositionChangeFinished.connect(lambda line: state.set_as_of(line.value()))
        state.as_of_changed.connect(self._on_as_of)
        self.restyle()

    def restyle(self) -> None:
        super().restyle()
        t = self.theme
        self.region.setBrush(style.color(t.tool, 35))
        self.region.setHoverBrush(style.color(t.tool, 60))
        self.as_of_line.setPen(pg.mkPen(style.color(t.as_of, 230), width=2))
        self.as_of_line.label.setColor(t.as_of)
        self.redraw()

    def shown_lane_labels(self) -> list[int]:
        """The lanes whose name is written on the axis (every lane when they have room)."""
        n = len(self.lane_names)
        if not n:
            return []
        per_lane = self.vb.height() / n  # the fitted y range holds the n lanes
        line = self.fontMetrics().height()
        stride = max(1, int(np.ceil(line / max(per_lane, 1e-6))))
        return list(range(0, n, stride))

    def _label_lanes(self) -> None:
        """Lane names on the axis, thinned out when the lanes are closer than a line of text (the
        full list is in the axis tooltip)."""
        names = self.lane_names
        left = self.plot.getAxis("left")
        left.setTicks([[(i, names[i] or "(none)") for i in self.shown_lane_labels()]])
        left.setToolTip(plain_tooltip("lanes: " + ", ".join(n or "(none)" for n in names)) if names else "")

    # ------------------------------------------------------------ drawing
    def redraw(self, fit: bool = False) -> None:
        data = self.state.data
        if data is None:
            self.set_points([], [], [])
            self.points.clear()
            self.draw_selection()
            return
        a = data.arrays
        by = self.lanes.currentText()
        names = data.kinds if by == "kind" else data.agents
        self.lane_names = list(names)
        self._kinds_drawn = len(data.kinds)
        rows = np.flatnonzero(self.state.exists_mask())  # as of the moment shown
        if not self.state.show_retired:
            rows = rows[a.live[rows]]
        x, y = self._positions(rows)
        self.set_points(x, y, rows)
        codes, styles = style.kind_styles(data, rows)
        self.points.set_data(self.x, self.y, codes, styles, size=style.importance_sizes(a.importance[rows]))
        left = self.plot.getAxis("left")
        self._label_lanes()
        left.setWidth(min(160, 12 + 7 * max((len(n) for n in names), default=4)))
        self.vb.setLimits(yMin=-1, yMax=len(names))
        if fit:
            self.vb.setYRange(-0.6, len(names) - 0.4, padding=0)
            if len(x):
                lo, hi = float(np.nanmin(x)), float(np.nanmax(x))
                pad = max((hi - lo) * 0.02, 60.0)
                self.vb.setXRange(lo - pad, hi + pad, padding=0)
        self.draw_selection()

    def _on_rows(self, delta) -> None:
        """A live refresh: drawn again in the user's view (in the next event-loop turn, one
        redraw for refreshes that come together, paced: memviz.app.workers.PacedCall); new rows
        are drawn after the others and changed markers restyled, unless a point moved or appears
        (then everything is drawn again). With "follow newest" the view slides (same width) so
        that the newest memory is at its right edge."""
        drawn = delta.fields & DRAWN
        if not len(delta.added) and not drawn:
            return
        if len(delta.added):
            newest = float(np.nanmax(self.state.data.arrays.event_time[delta.added]))
            self._newest = newest if self._newest is None else max(self._newest, newest)
            self._added.append(delta.added)
        if drawn:
            styled = STYLED if self.lanes.currentText() == "agent" else STYLED - {"kind"}
            shown = self.state.show_retired or not (len(delta.retired) or len(delta.restored))
            if drawn <= styled and shown and self.state.as_of is None:
                self._restyle.append(delta.changed)
            else:
                self._whole = True
        self._live.request()

    def _live_redraw(self) -> None:
        """New rows drawn after the others (PointsItem.append), changed markers restyled
        (PointsItem.restyle); else everything again."""
        added, restyle, whole = self._added, self._restyle, self._whole
        self._added, self._restyle, self._whole = [], [], False
        rows = np.concatenate(added) if added else np.zeros(0, np.int64)
        if whole or not self._append(rows) or (restyle and not self._restyled(np.concatenate(restyle))):
            self.redraw()
        if len(rows):
            self.flash_new(*self._positions(rows))
        newest, self._newest = self._newest, None
        if self.follow.isChecked() and newest is not None and np.isfinite(newest):
            (lo, hi), _ = self.vb.viewRange()
            if newest > hi or newest < lo:
                width = hi - lo
                self.vb.setXRange(newest - width * 0.95, newest + width * 0.05, padding=0)

    def _restyled(self, rows: np.ndarray) -> bool:
        """The markers of `rows` drawn in their style now (kind, retired, importance); False when
        one needs a style not drawn yet (then redraw)."""
        data = self.state.data
        if len(data.kinds) != self._kinds_drawn:
            return False
        points = self.point_of_rows(np.unique(rows))
        rows = self.rows[points]
        codes = style.kind_codes(data, rows)  # (the styles drawn stay)
        return self.points.restyle(points, codes, size=style.importance_sizes(data.arrays.importance[rows]))

    def _append(self, rows: np.ndarray) -> bool:
        data = self.state.data
        names = data.kinds if self.lanes.currentText() == "kind" else data.agents
        if names != self.lane_names or len(data.kinds) != self._kinds_drawn:
            return False  # a new lane, or a new kind (its colour shifts the style codes): everything moves
        if not self.state.show_retired:
            rows = rows[np.isnan(data.arrays.valid_until[rows])]
        x, y = self._positions(rows)
        codes = style.kind_codes(data, rows)  # (the styles drawn stay)
        if not self.points.append(x, y, codes, size=style.importance_sizes(data.arrays.importance[rows])):
            return False
        self.add_points(x, y, rows)
        self.draw_selection()
        return True

    def _positions(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """x = event time, y = the lane with a deterministic jitter (equal times do not stack on one pixel)."""
        data = self.state.data
        a = data.arrays
        lane = data.kind_codes if self.lanes.currentText() == "kind" else data.agent_codes
        jitter = ((a.rowid[rows] * 2654435761) % 1000) / 1000.0 - 0.5
        return a.event_time[rows], lane[rows] + jitter * 0.7

    def _retired_toggled(self, show: bool) -> None:
        self.show_retired.blockSignals(True)
        self.show_retired.setChecked(show)
        self.show_retired.blockSignals(False)
        self.redraw()

    # ------------------------------------------------------------ time range filter
    def on_shape(self, tool, pts, finished, modifiers) -> None:
        if tool != "xrange":
            return super().on_shape(tool, pts, finished, modifiers)
        lo, hi = float(pts[:, 0].min()), float(pts[:, 0].max())
        if finished and hi > lo:
            self.state.set_time_range((lo, hi))

    def _region_moved(self) -> None:
        if self.region.isVisible():
            self.state.set_time_range(self.region.getRegion())

    def _time_filter_changed(self, rng) -> None:
        self.clear_range.setEnabled(rng is not None)
        if rng is None:
            self.region.hide()
            self.range_label.setText("")
            return
        self.region.blockSignals(True)
        self.region.setRegion(rng)
        self.region.blockSignals(False)
        self.region.show()
        self.range_label.setText(f"  filter: {iso(rng[0])} → {iso(rng[1])}")

    # ------------------------------------------------------------ as of
    def _on_as_of(self, T) -> None:
        self.as_of_line.blockSignals(True)
        if T is not None:
            self.as_of_line.setValue(T)
        self.as_of_line.blockSignals(False)
        self.as_of_line.setVisible(T is not None)
        self.redraw()
