"""Presets as objects: one registry that a new preset enters like the built-in ones, ranked by the
engine and the CLI without any change to either; parameter sets; the component accessor that
recombines weights without the top-k cascade; the engine branches on no preset's name; the int8
index is kept by quantized.py, not hung on the arrays."""
from __future__ import annotations

import ast
import gc
import json
import math
import os
import subprocess
import sys
import textwrap
import weakref
from pathlib import Path

import numpy as np
import pytest
from conftest import unit_vectors

import memviz.store as ms
from memviz.retrieval import (
    PRESETS,
    Engine,
    LinearPreset,
    ParameterSet,
    Preset,
    Static,
    all_presets,
    parameter_sets,
    preset,
    preset_params,
    quantized,
    register_preset,
    unregister_preset,
)
from memviz.retrieval.presets import check_preset

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = [ROOT / "sample_dbs" / "assistant.db", ROOT / "sample_dbs" / "simulation.db"]
BUILT_IN = ("dual-memory", "generative-agents", "ada", "hybrid", "working-memory")
T0 = 1_700_000_000


class ImportanceOnly(LinearPreset):
    def static(self, run):
        return Static(values={"importance": run.arrays.importance[run.rows] / 10})


def importance_only(name="importance-only"):
    return ImportanceOnly(name=name, description="score = γ·importance/10", source="a test",
                          components=("importance",), weights={"importance": "gamma"}, uses_ref_time=False,
                          defaults=dict(gamma=2.0, k=5), needs_vector=False)


def cosine_importance():
    """A linear preset without full-text search: γ·importance/10 + α·cosine, in that order (the
    engine gives relevance, the same static part the rest)."""
    return ImportanceOnly(name="cosine-importance", description="score = γ·importance/10 + α·cosine",
                            source="a test", components=("relevance", "importance"),
                            order=("importance", "relevance"), weights={"relevance": "alpha", "importance": "gamma"},
                            uses_ref_time=False, defaults=dict(alpha=1.0, gamma=0.5, k=8))


@pytest.fixture
def registered():
    """Register test presets for one test; the registry is as it was afterwards."""
    names = []

    def add(p):
        register_preset(p)
        names.append(p.name)
        return p
    yield add
    for name in names:
        unregister_preset(name)
    assert tuple(PRESETS) == BUILT_IN


def fill(store, n=300, dim=16, seed=1, model="test/16", V=None):
    V = unit_vectors(n, dim, seed) if V is None else V
    rng = np.random.default_rng(seed)
    store.insert_memories([dict(id=f"m{i:04d}", agent=("ann", "bob")[i % 2], kind="episode", content=f"note {i % 9}",
                                importance=float(rng.integers(1, 11)), embedding=V[i], embedding_model=model,
                                created_at=T0 - 60 * i) for i in range(n)], audit=False)


# ---------------------------------------------------------------- the registry
def test_built_in_presets_enter_the_registry_like_any_other():
    assert tuple(p.name for p in all_presets()) == BUILT_IN == tuple(PRESETS)
    for p in all_presets():
        check_preset(p)   # what register_preset checks holds for each
        assert PRESETS[p.name] == p.description
    with pytest.raises(ValueError, match="already registered"):
        register_preset(preset("ada"))
    with pytest.raises(ValueError, match="unknown preset 'nope'; choose one of: dual-memory, generative-agents"):
        preset("nope")


@pytest.mark.parametrize("make, error, message", [
    (lambda: object(), TypeError, "not a retrieval preset"),
    (lambda: Preset(name="x", description="", source="", components=("a",), defaults={}), ValueError,
     "needs `rank` and `component_values`"),
    (lambda: LinearPreset(name="x", description="", source="", components=("relevance", "recency"), defaults={}),
     ValueError, r"components \['recency'\] need a `static` method"),
    (lambda: importance_only().__class__(name="x", description="", source="", components=("importance",),
                                         order=("importance", "recency"), defaults={}), ValueError, "order"),
    (lambda: ImportanceOnly(name="x", description="", source="", components=("importance",),
                            weights={"importance": "agents"}, defaults={}), ValueError, "numeric Params fields"),
    (lambda: ImportanceOnly(name="x", description="", source="", components=("importance",),
                            defaults={"gama": 1.0}), ValueError, r"no Params field: \['gama'\]"),
    (lambda: ImportanceOnly(name="x", description="", source="", components=("importance",),
                            defaults={"k": 0}), ValueError, "not valid parameters: k must be at least 1"),
    (lambda: ImportanceOnly(name=" x", description="", source="", components=("importance",), defaults={}),
     ValueError, "needs a name"),
    (lambda: type("OwnCandidates", (ImportanceOnly,), {"candidates": lambda self, rows, a, m, p: rows[::2]})(
        name="x", description="", source="", components=("importance",), defaults={}), ValueError, "candidate_rule"),
])
def test_a_preset_missing_what_the_engine_needs_is_refused_with_the_reason(make, error, message):
    with pytest.raises(error, match=message):
        register_preset(make())
    assert tuple(PRESETS) == BUILT_IN


def test_a_new_linear_preset_ranks_through_the_engine(store, registered):
    registered(importance_only())
    fill(store, 40)
    e = Engine(store, now=T0)   # no query at all: importance alone needs none
    r = e.score(preset_params("importance-only"))
    a = store.arrays()
    want = sorted(range(len(a)), key=lambda i: (-(a.importance[i] / 10 * 2.0), i))[:5]   # ties in store order
    assert r.ids == [str(a.ids[i]) for i in want]
    assert r.score.tolist() == [a.importance[i] / 10 * 2.0 for i in want]
    assert list(r.weighted) == ["importance"] and "cosine" not in r.raw
    # its decay factor and filters come from the engine like every preset's
    r2 = e.score(preset_params("importance-only", agents=("bob",), confidence_decay=True, k=40))
    assert {str(a.agent[a.index_of(m)]) for m in r2.ids} == {"bob"} and r2.candidates == 20
    assert np.all(np.diff(r2.score) <= 0) and "decay_factor" in r2.raw


@pytest.mark.parametrize("int8", [False, True])
def test_a_new_relevance_preset_ranks_exactly_like_a_plain_loop(store, registered, int8):
    """A BM25-free preset weighing cosine and importance, through the first pass (int8 or
    float32), the middle pass and the exact rescoring: the top k of a plain float64 loop."""
    registered(cosine_importance())
    dim = 64
    V = unit_vectors(600, dim, 1)
    V[300:320] = V[3]   # exact ties
    fill(store, 600, dim=dim, model=f"test/{dim}", V=V)
    arrays = store.arrays()
    if int8:
        assert quantized.index_for(arrays, wait=True, min_rows=0) is not None
    e = Engine(store, arrays, now=T0)
    e.set_query(vector=V[3] + 0.3 * unit_vectors(1, dim, 9)[0])
    e.score(preset_params("cosine-importance"))
    assert (e._rel_err > 100 * e._delta) == int8   # the int8 first pass, or the float32 one
    for alpha, gamma, k in ((1.0, 0.5, 8), (3.0, 0.01, 20), (0.0, 1.0, 5), (-1.0, 0.2, 7)):
        p = preset_params("cosine-importance", alpha=alpha, gamma=gamma, k=k)
        qv = e.query_vector.astype(np.float64).tolist()
        loop = []
        for i in range(len(arrays)):
            cos = math.fsum(x * y for x, y in zip(arrays.embedding[i].astype(np.float64).tolist(), qv))
            loop.append((arrays.importance[i] / 10 * gamma + cos * alpha, i))
        want = sorted(loop, key=lambda t: (-t[0], t[1]))[:k]
        got = e.score(p)
        assert got.ids == [str(arrays.ids[i]) for _, i in want], (alpha, gamma)
        assert got.score.tolist() == [s for s, _ in want]


def test_a_new_preset_ranks_through_the_command_line(tmp_path):
    """`python -m memviz query --preset` with a preset an outside module registered (the way a
    plug-in will): no change to the engine or the command."""
    path = tmp_path / "m.db"
    s = ms.create(str(path))
    fill(s, 12)
    s.close()
    code = textwrap.dedent(f"""
        import runpy, sys
        from memviz.retrieval import LinearPreset, Static, register_preset

        class ImportanceOnly(LinearPreset):
            def static(self, run):
                return Static(values={{"importance": run.arrays.importance[run.rows] / 10}})

        register_preset(ImportanceOnly(name="importance-only", description="score = γ·importance/10",
                                       source="a plug-in", components=("importance",),
                                       weights={{"importance": "gamma"}}, uses_ref_time=False,
                                       defaults=dict(gamma=2.0, k=5), needs_vector=False))
        sys.argv = ["memviz", "query", {str(path)!r}, "anything", "--preset", "importance-only", "-k", "3",
                    "--gamma", "0.5", "--json"]
        runpy.run_module("memviz", run_name="__main__", alter_sys=True)
        """)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    items = json.loads(out.stdout)
    store = ms.open(str(path), read_only=True)
    a = store.arrays()
    store.close()
    want = sorted(range(len(a)), key=lambda i: (-a.importance[i], i))[:3]
    assert [it["id"] for it in items] == [str(a.ids[i]) for i in want]
    assert [it["importance_weighted"] for it in items] == [a.importance[i] / 10 * 0.5 for i in want]
    assert "cannot embed the query" in out.stderr   # the text was not needed: a note, not an error


# ---------------------------------------------------------------- parameter sets
def test_parameter_sets_are_listed_with_the_presets_and_become_params(registered):
    listed = parameter_sets()
    assert [s.name for s in listed] == list(BUILT_IN)
    for s in listed:
        assert s.params() == preset_params(s.name)
    fitted = ParameterSet.of("fitted", preset_params("generative-agents", alpha=1.7, decay=0.99, agents=("ann",)),
                             "weights fitted on judged queries")
    assert dict(fitted.values) == dict(alpha=1.7, beta=0.5, gamma=2.0, decay=0.99, agent_weights=True, k=30)
    assert fitted.params() == preset_params("generative-agents", alpha=1.7, decay=0.99)   # no filters kept
    assert fitted.params(agents=("bob",)).agents == ("bob",)
    again = ParameterSet.from_dict(json.loads(json.dumps(fitted.as_dict())))
    assert again == fitted and [s.name for s in parameter_sets([again])][-1] == "fitted"
    # a set of an outside preset: same shape
    registered(importance_only())
    mine = ParameterSet("mostly important", "importance-only", {"gamma": 3.0})
    assert mine.params().gamma == 3.0 and mine.params().k == 5
    with pytest.raises(ValueError, match="no such parameter: gama"):
        ParameterSet("bad", "dual-memory", {"gama": 1.0})
    with pytest.raises(ValueError, match="unknown preset 'gone'"):
        ParameterSet("orphan", "gone", {"alpha": 1.0}).params()
    with pytest.raises(ValueError, match="not a parameter set"):
        ParameterSet.from_dict({"name": "x"})


# ---------------------------------------------------------------- components and combine
def same_ranking(ids_a, scores_a, ids_b, scores_b, tol: float) -> None:
    """The two top-k lists agree but for near-ties: scores within `tol` place by place, and a
    memory placed differently (or in one list only) scores within `tol` of where it would be."""
    assert len(ids_a) == len(ids_b)
    np.testing.assert_allclose(scores_a, scores_b, rtol=0, atol=tol)
    place_a = {m: i for i, m in enumerate(ids_a)}
    for i, m in enumerate(ids_b):
        if ids_a[i] != m:
            j = place_a.get(m)
            other = scores_a[j] if j is not None else scores_a[-1]   # absent: a near-tie at the k-th place
            assert abs(scores_b[i] - other) <= 2 * tol, (i, m, scores_b[i], other)


def top_of(scores: np.ndarray, rows: np.ndarray, arrays, k: int):
    pick = np.argsort(-scores, kind="stable")[:k]
    return [str(x) for x in arrays.ids[rows[pick]]], scores[pick]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_components_recombined_give_the_engines_top_k(path):
    """What the judged evaluator will do: per query, the components once, then any weights
    recombined with `combine`; its top k equal `score`'s (but for near-ties), for every preset."""
    store = ms.open(str(path), read_only=True)
    try:
        e = Engine(store)
        a = e.arrays
        shared = {}
        for qi, query in enumerate(("what did we decide about the festival lights?", "coffee", "a walk by the sea")):
            e.set_query(query)
            for name in BUILT_IN:
                p = preset(name)
                base = preset_params(name, k=15)
                settings = [base, base.replace(confidence_decay=True)]
                if p.weights:
                    settings += [base.replace(alpha=0.0), base.replace(alpha=2.0, beta=0.1, gamma=0.7),
                                 base.replace(beta=3.0, gamma=0.0)]
                comps = e.components(base)
                for params in settings:
                    c = comps if params.confidence_decay == base.confidence_decay else e.components(params)
                    s = p.combine(c, params)
                    assert s.dtype == np.float64 and len(s) == len(c.rows)
                    got = e.score(params)
                    # each cosine within cosine_error, times its weight (and 1/(max - min) <= 2 where
                    # generative-agents normalises relevance)
                    weights = [p.weight(x, params) for x in p.components]
                    tol = 2 * c.cosine_error * (1 + sum(abs(w) for w in weights if w is not None)) + 1e-12
                    ids, scores = top_of(s, c.rows, a, params.k)
                    same_ranking(ids, scores, got.ids, got.score, tol)
                    if c.cosine_error == 0:   # no float32 cosines: the very values of the engine
                        assert np.array_equal(s, got.all_scores[c.rows], equal_nan=True)
                # recency and importance do not depend on the query: one copy serves every query
                for comp in set(comps.values) - {"relevance", "fts", "vector"}:
                    first = shared.setdefault((name, comp), comps.values[comp])
                    assert np.array_equal(first, comps.values[comp]), (name, comp, qi)
    finally:
        store.close()


def test_components_of_an_empty_candidate_set_and_without_a_query(store):
    fill(store, 20)
    e = Engine(store, now=T0)
    c = e.components(preset_params("dual-memory", agents=("nobody",)))
    assert len(c.rows) == 0 and set(c.values) == {"relevance", "recency", "importance"}
    with pytest.raises(ValueError, match="needs a query"):
        e.components(preset_params("dual-memory"))
    w = e.components(preset_params("working-memory"))   # needs no query
    assert len(w.rows) == 20 and c.cosine_error == 0 == w.cosine_error


# ---------------------------------------------------------------- the engine's shape
def test_the_engine_branches_on_no_preset_name():
    """engine.py holds no preset's name: what differs between presets lives in the preset."""
    path = ROOT / "memviz" / "retrieval" / "engine.py"
    tree = ast.parse(path.read_text())
    names = set(BUILT_IN) | {"ga", "dual", "working", "hybrid", "ada"}
    strings = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    assert not [s.value for s in strings if s.value in names]
    for node in ast.walk(tree):   # and compares nothing with a Params' preset field
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            assert not any(isinstance(x, ast.Attribute) and x.attr == "preset" for x in parts), ast.unparse(node)


def test_the_int8_index_is_quantizeds_own_and_goes_with_its_arrays(store):
    dim = 32
    fill(store, 200, dim=dim, model=f"test/{dim}")
    arrays = store.arrays()
    fields_before = set(vars(arrays))
    idx = quantized.index_for(arrays, wait=True, min_rows=0)
    assert idx is not None and set(vars(arrays)) == fields_before   # nothing hung on the arrays
    gone = weakref.ref(idx)
    del idx, arrays
    gc.collect()
    assert gone() is None   # the index lives as long as its arrays, no longer
