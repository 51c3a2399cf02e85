"""The evaluator over the engine: its pruned rankings are the rankings of a brute-force
recombination of every candidate (random data with duplicates and ties, hypothesis; the sample
stores), for every preset, weights (zero and negative too) and knob values; they agree with
`Engine.score`'s top k but for near-ties within the cosines' error bound; near misses, what
would change, wins and losses; the precompute's progress and cancel."""
from __future__ import annotations

import os
import shutil

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import memviz.judge.evaluator as E
import memviz.store as ms
from memviz.judge import JudgedQuery, JudgedSet, prune
from memviz.judge.evaluator import JudgedEvaluator, query_params
from memviz.retrieval import Engine, preset_params
from memviz.retrieval.presets import preset
from memviz.tasks import Cancelled, Task

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINEAR = ("dual-memory", "generative-agents", "ada")


def brute(ev: JudgedEvaluator, params, d: int) -> dict[str, list[str]]:
    """Every candidate scored by the preset's own combine, best first, ties in candidate order."""
    out = {}
    for qid in ev.query_ids:
        c = ev.components(qid, params)
        s = preset(params.preset).combine(c, params)
        out[qid] = [str(x) for x in ev.arrays.ids[c.rows[np.argsort(-s, kind="stable")[:d]]]]
    return out


# ------------------------------------------------------------------ the pruning alone, on random arrays
@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 400), depth=st.integers(1, 40), seed=st.integers(0, 10**6), ties=st.booleans(),
       dims=st.integers(1, 4))
def test_pruned_top_d_is_the_top_d_of_all_or_says_it_cannot_be(n, depth, seed, ties, dims):
    rng = np.random.default_rng(seed)
    vals = [rng.integers(0, 4, n).astype(float) if ties else rng.normal(size=n) for _ in range(dims)]
    if n > 4:   # duplicated candidates
        for v in vals:
            v[: n // 3] = v[n - n // 3:]
    kept = prune.kept([prune.buckets(v, distinct=8 if ties else 0) for v in vals], depth + 3)
    for w in rng.dirichlet(np.ones(dims), 6).tolist() + [[0.0] * (dims - 1) + [1.0]]:
        s = sum(wi * v for wi, v in zip(w, vals))
        want = np.argsort(-s, kind="stable")[:depth]
        sk = s[kept]
        top = prune.top(sk, depth)
        if len(kept) == n or prune.certified(sk, sk[top[-1]], depth + 3):
            assert np.array_equal(kept[top], want)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(1, 30))
def test_the_kernels_rank_as_numpy_does(seed, d):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 200, rng.integers(1, 12))
    offsets = np.r_[0, np.cumsum(sizes)]
    s = rng.integers(0, 6, offsets[-1]).astype(float)
    out, reach = prune.top_segments(s, offsets, d)
    for q in range(len(sizes)):
        seg = s[offsets[q]:offsets[q + 1]]
        want = prune.top(seg, d)
        assert np.array_equal(out[q][out[q] >= 0] - offsets[q], want)
        assert reach[q] == (np.count_nonzero(seg >= seg[want[-1]]) if len(want) else 0)
    assert np.array_equal(prune.above(s, np.array([1.0, 3.0])), 2 - np.searchsorted([1.0, 3.0], s, side="right"))


# ------------------------------------------------------------------ random stores
def _random_store(path, rng, n, agents=("ann", "bob")):
    v = rng.normal(size=(n // 2 + 1, 8)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    recs = []
    for i in range(n):
        t = 1_700_000_000 + 3600 * int(rng.integers(0, 40))   # many memories share a time
        recs.append({"id": f"m{i}", "kind": "fact", "agent": agents[i % len(agents)], "content": f"memory {i}",
                     "importance": float(rng.integers(1, 4)), "embedding": v[i % len(v)],   # duplicated vectors
                     "embedding_model": "m", "event_time": t, "created_at": t,
                     "last_accessed": t + 60 if i % 3 else None, "confidence": float(rng.uniform(0.2, 1.0)),
                     "decay_rate": 0.05, "attributes": {"cycle": int(rng.integers(1, 6))} if i % 2 else {}})
    s = ms.create(path)
    s.insert_memories(recs)
    return s


def _random_set(rng, n, q=6):
    out = []
    for i in range(q):
        rel = {f"m{j}": int(rng.integers(1, 3)) for j in rng.choice(n, 3, replace=False)}
        kw = {"as_of": 1_700_000_000 + 3600.0 * int(rng.integers(20, 45))} if i % 2 else {}
        if i % 3 == 0:
            kw["agents"] = ("ann",)
        out.append(JudgedQuery(f"q{i}", rel, like=f"m{int(rng.integers(0, n))}", **kw))
    return JudgedSet("r", tuple(out))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), name=st.sampled_from(LINEAR + ("working-memory",)), decay=st.booleans())
def test_the_evaluator_ranks_as_a_brute_force_recombination(tmp_path_factory, seed, name, decay):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(30, 120))
    with _random_store(str(tmp_path_factory.mktemp("r") / "s.db"), rng, n) as s:
        base = preset_params(name, confidence_decay=decay)
        ev = JudgedEvaluator(s, _random_set(rng, n), base, depth=4, now=1_700_000_000 + 3600 * 50.0)
        settings_ = [base]
        if preset(name).weights:
            settings_ += [base.replace(alpha=a, beta=b, gamma=g) for a, b, g in
                          [(0, 0, 1), (0, 1, 0), (1, 0, 0), (0.3, 0.3, 0.4), (0, 0.5, 0.5), (-1, 0.5, 0.2)]]
        for k in ev.searchable:
            settings_ += [base.replace(**{k: E.KNOBS[k].lo}), base.replace(**{k: E.KNOBS[k].hi, "alpha": 0.0})]
        for p in settings_:
            assert ev.rankings(p, 4) == brute(ev, p, 4), p


# ------------------------------------------------------------------ the sample stores
@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("sim") / "simulation.db"
    shutil.copy(os.path.join(ROOT, "sample_dbs", "simulation.db"), path)
    s = ms.open(str(path))
    a = s.arrays()
    rng = np.random.default_rng(3)
    picks = rng.choice(len(a), 24, replace=False)
    texts = {r["id"]: r["content"] for r in s.get_many([str(a.ids[i]) for i in picks], fields=("content",))}
    qs = []
    for n, i in enumerate(picks):
        mid = str(a.ids[i])
        near = np.argsort(-(a.embedding @ a.embedding[i]))[1:5]
        rel = {str(a.ids[j]): 2 if r == 0 else 1 for r, j in enumerate(near)}
        if n % 4 == 0:
            qs.append(JudgedQuery(f"q{n}", rel, like=mid))
        else:
            qs.append(JudgedQuery(f"q{n}", rel, query=" ".join(texts[mid].split()[:8]),
                                  as_of=float(np.nanmax(a.created_at)) - 7200.0 * n))
    yield s, a, JudgedSet("sample", tuple(qs))
    s.close()


@pytest.mark.parametrize("name", LINEAR + ("hybrid", "working-memory"))
def test_on_the_sample_every_setting_ranks_as_the_brute_force(sample, name):
    s, a, judged = sample
    base = preset_params(name)
    ev = JudgedEvaluator(s, judged, base)
    assert ev.levels == (10, 100) and sum(ev.kept_sizes(10)) <= sum(ev.kept_sizes()) <= sum(ev.candidate_sizes())
    rng = np.random.default_rng(1)
    for w in rng.dirichlet(np.ones(3), 4).tolist() + [[0, 0, 1], [1, 0, 0]]:
        p = base.replace(alpha=w[0], beta=w[1], gamma=w[2]) if preset(name).weights else base
        for k in ev.searchable:
            p = p.replace(**{k: float(rng.choice([E.KNOBS[k].lo, getattr(base, k), E.KNOBS[k].hi]))})
        full = brute(ev, p, ev.depth)
        assert ev.rankings(p) == full
        assert ev.rankings(p, 10) == {q: r[:10] for q, r in full.items()}   # the shallow level's own kept


@pytest.mark.parametrize("name", LINEAR)
def test_on_the_sample_the_top_k_is_engine_scores_but_for_near_ties(sample, name, monkeypatch):
    """Engine.score rescores the rows near the k-th with exact cosines; the components carry
    float32 ones: a difference is allowed only between memories whose scores lie within the
    cosines' error (scaled by what relevance is multiplied by)."""
    s, a, judged = sample
    monkeypatch.setattr(E, "KEEP_COSINES", 0)   # the engine's own products: what a fresh engine computes
    base = preset_params(name)
    ev = JudgedEvaluator(s, judged, base)
    engine = Engine(s, a, now=ev.now)
    differ = 0
    for p in (base, base.replace(alpha=0.2, beta=0.5, gamma=0.3)):
        ranked = ev.rankings(p, p.k)
        for q in judged:
            if q.like:
                engine.set_query(like=q.like)
            else:
                engine.set_query(q.query)
            want = engine.score(query_params(p, q)).ids
            if ranked[q.id] == want:
                continue
            differ += 1
            c = ev.components(q.id, p)
            score = dict(zip((str(x) for x in a.ids[c.rows]), preset(name).combine(c, p)))
            rel = c.values["relevance"]
            cos = (a.embedding[c.rows].astype(np.float64) @ engine.query_vector.astype(np.float64))
            scale = float(np.max(np.abs(rel)) / max(np.ptp(cos), 1e-12)) if name == "generative-agents" else 1.0
            tol = 4 * c.cosine_error * abs(p.alpha) * max(scale, 1.0)
            kth = score[ranked[q.id][-1]]
            for m in set(ranked[q.id]) ^ set(want):
                assert abs(score[m] - kth) <= tol, (q.id, m)
    assert differ <= 2


def test_near_misses_what_would_change_and_wins(sample):
    s, a, judged = sample
    base = preset_params("dual-memory")
    ev = JudgedEvaluator(s, judged, base)
    relevance_only = base.replace(alpha=1.0, beta=0.0, gamma=0.0)
    m0, m1 = ev.metrics(base), ev.metrics(relevance_only)
    assert set(m0.means) == {"recall@10", "ndcg@10", "mrr", "p@10"}
    assert m1.means["ndcg@10"] > m0.means["ndcg@10"]   # the relevant are the query's neighbours
    wl = ev.wins_losses(relevance_only, base)
    assert wl.better > 0 and wl.better + wl.worse + wl.same == len(judged)
    changes = ev.what_would_change(base, relevance_only)
    assert changes and all(c.entered or c.left for c in changes)
    moved = {c.query_id: c for c in changes}
    for qid, c in moved.items():
        new = ev.rankings(relevance_only, 10)[qid]
        assert [m.memory_id for m in c.entered] == [m for m in new if m not in ev.rankings(base, 10)[qid]]
    qid = next(q.id for q in judged if q.like is None)
    misses = ev.near_misses(qid, base)
    full = brute(ev, base, 10**6)[qid]
    for h in misses:
        assert h.rank is None or (h.rank > 10 and full[h.rank - 1] == h.memory_id)
        if h.rank is not None:
            assert h.component in ("relevance", "recency", "importance") and h.short_by >= 0
            assert abs(sum(h.contributions.values()) - sum(h.cutoff.values())) >= 0
            assert h.describe().startswith(f"{h.memory_id}: rank {h.rank}, {h.component}")
    with pytest.raises(KeyError, match="no judged query 'nope'"):
        ev.near_misses("nope", base)
    assert ev.accepts(preset_params("ada")) and "ada" in ev.accepts(preset_params("ada"))
    assert ev.accepts(base.replace(confidence_decay=True)) == "confidence_decay changed since the evaluator was prepared"
    assert ev.accepts(base.replace(tau_hours=3.0, alpha=9.0)) is None
    with pytest.raises(ValueError, match="prepare a new evaluator"):
        ev.metrics(preset_params("ada"))
    g = ev.grid(base, "alpha", [0.0, 0.5, 1.0], "beta", [0.0, 1.0])
    assert g.shape == (2, 3) and g[0, 2] == ev.metrics(base.replace(alpha=1.0, beta=0.0)).means["ndcg@10"]
    assert g[1, 0] == ev.metrics(base.replace(alpha=0.0, beta=1.0), ("ndcg@10",)).means["ndcg@10"]


def test_the_precompute_reports_progress_and_stops_on_cancel(sample):
    s, a, judged = sample
    heard = []
    JudgedEvaluator(s, judged, preset_params("ada"), task=Task(on_progress=lambda f, t: heard.append((f, t))))
    assert heard[0][1].startswith("Embedding") and heard[-1] == (1.0, f"{len(judged)} judged queries ready")
    assert any(t.startswith("Ranking judged query 11 of") for _, t in heard)
    task = Task()
    seen = []

    def cancel_at_second(fraction, text):
        seen.append(text)
        if text.startswith("Ranking judged query 11"):
            task.cancel()
    task._on_progress = cancel_at_second
    with pytest.raises(Cancelled):
        JudgedEvaluator(s, judged, preset_params("ada"), task=task)


def test_a_query_that_cannot_be_ranked_is_said(sample, tmp_path):
    s, a, judged = sample
    path = str(tmp_path / "novec.db")
    with ms.create(path) as t:
        t.insert_memories([{"id": "m1", "kind": "fact", "content": "no vector"},
                           {"id": "m2", "kind": "fact", "content": "none either"}])
        with pytest.raises(ValueError, match="1 judged query cannot be ranked: query 'q1': memory m1 has no embedding"):
            JudgedEvaluator(t, JudgedSet("x", (JudgedQuery("q1", {"m2": 1}, like="m1"),)), preset_params("dual-memory"))
        ev = JudgedEvaluator(t, JudgedSet("x", (JudgedQuery("q1", {"m2": 1}, query="none"),)), preset_params("working-memory"))
        assert ev.rankings(preset_params("working-memory"))["q1"] == ["m1", "m2"] or \
            set(ev.rankings(preset_params("working-memory"))["q1"]) == {"m1", "m2"}
