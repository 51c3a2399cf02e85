"""The store's own clock: recorded, offered from the newest memory, or the wall clock; used
by recency, consolidation and the importance meter; shown and overridable on the CLI."""
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

import memviz.store as ms
from memviz.cli import main
from memviz.importers import import_generative_agents
from memviz.reflect import importance_status, plan_consolidation
from memviz.retrieval import Engine, preset_params
from memviz.store.clock import NEWEST, SIMULATED, WALL, parse_clock, record_clock, simulated, store_clock
from tests.conftest import unit_vectors
from tests.test_import_ga import ann_nodes, make_persona

ROOT = Path(__file__).resolve().parents[1]
T0 = ms.to_epoch("2023-02-13T10:00:00")
HOUR = 3600


def _fill(store, times, *, kind="episode", agent="a"):
    v = unit_vectors(len(times), 8)
    store.insert_memories([dict(id=f"m{i}", agent=agent, kind=kind, content=f"memory {i}", importance=5,
                                embedding=v[i], embedding_model="test-8", created_at=t, event_time=t)
                           for i, t in enumerate(times)])
    return v


def _recency(store, vector, **kw):
    e = Engine(store, **kw)
    e.set_query(vector=vector)
    r = e.score(preset_params("dual-memory", k=10))
    return {mid: r.explain(i)["recency"] for i, mid in enumerate(r.ids)}


def test_a_live_store_runs_on_the_wall_clock(store):
    _fill(store, [time.time() - 2 * HOUR, time.time() - HOUR])
    assert store_clock(store).mode == WALL
    rec = _recency(store, unit_vectors(1, 8, seed=5)[0])
    assert rec["m1"] == pytest.approx(np.exp(-1 / 24), rel=1e-3)  # one hour old, τ = 24 h


def test_a_store_long_past_is_offered_its_newest_memory(store):
    v = _fill(store, [T0 - 5 * HOUR, T0])
    c = store_clock(store)
    assert (c.mode, c.at) == (NEWEST, T0)
    rec = _recency(store, v[0])
    assert rec["m1"] == pytest.approx(1.0) and rec["m0"] == pytest.approx(np.exp(-5 / 24))
    # the wall clock would make both 0 (the bug: every recency 9.6e-274)
    assert max(_recency(store, v[0], now=time.time()).values()) < 1e-30


def test_a_recorded_clock_is_used_and_survives_reopening(store, store_path):
    v = _fill(store, [T0 - 5 * HOUR, T0])
    record_clock(store, simulated(T0 + 24 * HOUR, "test"))
    store.close()
    with ms.open(str(store_path)) as s:
        c = store_clock(s)
        assert (c.mode, c.at, c.source) == (SIMULATED, T0 + 24 * HOUR, "test")
        assert _recency(s, v[0])["m1"] == pytest.approx(np.exp(-1.0))
        assert plan_consolidation(s, kinds=None).now == T0 + 24 * HOUR
        record_clock(s, None)  # forgotten: back to the automatic choice
        assert store_clock(s).mode == NEWEST


def test_the_importance_meter_counts_up_to_the_clock(store):
    _fill(store, [T0 - HOUR, T0, T0 + HOUR])
    record_clock(store, simulated(T0))
    st = importance_status(store, "a")
    assert (st.count, st.accumulated) == (2, 10.0)  # the memory after the clock has not happened yet
    record_clock(store, parse_clock("wall", store))
    assert importance_status(store, "a").count == 3


def test_bad_clock_text_is_a_clear_message(store):
    with pytest.raises(ValueError, match="'wall', 'newest'"):
        parse_clock("yesterday-ish", store)
    with pytest.raises(ValueError, match="no memories"):
        parse_clock("newest", store)


def test_cli_prints_the_clock_and_now_overrides(store, store_path, capsys):
    _fill(store, [T0 - 5 * HOUR, T0])
    record_clock(store, simulated(T0, "test"))
    store.close()
    assert main(["query", str(store_path), "--like", "m0", "-k", "2", "--json"]) == 0
    out, err = capsys.readouterr()
    assert "clock: 2023-02-13 10:00:00 UTC (simulated)" in err
    assert max(it["recency"] for it in json.loads(out)) == pytest.approx(1.0)
    assert main(["query", str(store_path), "--like", "m0", "-k", "2", "--json", "--now", "2023-02-14T10:00"]) == 0
    out, err = capsys.readouterr()
    assert "clock: 2023-02-14 10:00:00 UTC (simulated)" in err
    assert max(it["recency"] for it in json.loads(out)) == pytest.approx(np.exp(-1.0))
    assert main(["stats", str(store_path), "--no-integrity"]) == 0
    assert "clock: 2023-02-13 10:00:00 UTC (simulated) — test" in capsys.readouterr().out
    assert main(["consolidate", str(store_path), "--dry-run", "--now", "wall"]) == 0
    assert "(wall)" in capsys.readouterr().out
    assert main(["clock", str(store_path), "--set", "2023-03-01T00:00"]) == 0
    assert "2023-03-01 00:00:00 UTC (simulated)" in capsys.readouterr().out
    with ms.open(str(store_path), read_only=True) as s:
        assert store_clock(s).at == ms.to_epoch("2023-03-01T00:00")
    assert main(["query", str(store_path), "--like", "m0", "--now", "soon"]) == 2
    assert "use ISO 8601" in capsys.readouterr().err


def test_a_generative_agents_import_runs_on_curr_time(tmp_path):
    persona = make_persona(tmp_path / "Ann", "Ann Baker", ann_nodes())
    import_generative_agents(persona, tmp_path / "ann.db")
    with ms.open(str(tmp_path / "ann.db"), read_only=True) as s:
        c = store_clock(s)
        assert (c.mode, ms.iso(c.at)) == (SIMULATED, "2023-02-13 10:00:00")
        assert "curr_time" in c.source


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("sample") / "assistant.db"
    shutil.copy(ROOT / "sample_dbs" / "assistant.db", path)
    return path


def test_the_sample_records_its_clock_and_recency_is_alive(sample):
    with ms.open(str(sample), read_only=True) as s:
        c = store_clock(s)
        assert c.mode == SIMULATED
        newest = s.conn.execute("SELECT max(max(event_time, created_at)) FROM memories").fetchone()[0]
        assert c.at == newest
        e = Engine(s)
        e.set_query("what does Elena drink in the morning?")
        r = e.score(preset_params("dual-memory"))
        assert max(r.raw["recency"]) > 0.01  # not 9.6e-274: the ages are hours and days, not 15,000 h


def test_consolidating_the_sample_prunes_nothing_by_age(sample):
    with ms.open(str(sample), read_only=True) as s:
        plan = plan_consolidation(s)
        assert plan.prune == []  # was 83 ticked "539 days since use" on the wall clock
        lo, hi = s.time_span()
        assert plan.decay and max(d.days for d in plan.decay) <= (hi - lo) / 86400  # within the sample's half year


def test_a_store_without_memviz_tables_has_a_clock_all_the_same(tmp_path):
    import apsw

    from memviz.store.schema import _V1

    path = str(tmp_path / "bare.db")
    c = apsw.Connection(path)
    c.execute(_V1[0])  # only the memories table, as another tool might write it
    c.execute("INSERT INTO memories(id, kind, content, event_time, created_at) VALUES ('a', 'fact', 'x', ?, ?)",
              (T0, T0))
    c.close()
    with ms.open(path, read_only=True) as s:
        assert s.meta("clock", "none") == "none"
        c = store_clock(s)
        assert (c.mode, c.at) == (NEWEST, T0)
