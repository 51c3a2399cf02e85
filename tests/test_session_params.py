"""The retrieval parameters live in the Qt-free AppState: set_params, params_changed, and the
time filter as their time_range."""
from __future__ import annotations

from memviz.retrieval import Params, preset_params
from memviz.session.state import AppState


def test_params_start_at_the_first_preset_and_changes_are_announced_once():
    state = AppState()
    assert state.params == preset_params("dual-memory")
    seen = []
    state.params_changed.connect(lambda p, source: seen.append((p, source)))
    who = object()
    state.set_params(state.params.replace(alpha=0.9, k=3), source=who)
    assert state.params.alpha == 0.9 and state.params.k == 3
    assert seen == [(state.params, who)]
    state.set_params(state.params.replace(alpha=0.9), source=who)  # no change: no call
    assert len(seen) == 1


def test_the_time_filter_is_the_params_time_range_both_ways():
    state = AppState()
    filters, params = [], []
    state.time_filter_changed.connect(filters.append)
    state.params_changed.connect(lambda p, source: params.append(p))
    state.set_time_range((20.0, 10.0))
    assert state.params.time_range == (10.0, 20.0) and filters == [(10.0, 20.0)]
    assert params[-1].time_range == (10.0, 20.0)  # a query follows the time filter too
    state.set_params(state.params.replace(time_range=(1.0, 2.0), gamma=1.5))
    assert state.time_range == (1.0, 2.0) and filters[-1] == (1.0, 2.0)  # the other panels filter
    assert state.params == preset_params("dual-memory", gamma=1.5, time_range=(1.0, 2.0))
    state.set_time_range(None)
    assert state.params.time_range is None and state.params.gamma == 1.5


def test_params_keep_fields_no_widget_shows():
    state = AppState()
    state.set_params(Params(preset="hybrid", rrf_k=30, tags=["health"]))
    assert state.params.rrf_k == 30 and state.params.tags == ("health",) and state.params.preset == "hybrid"
