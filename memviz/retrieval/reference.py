"""The same scoring as engine.py, written the way the reference implementations do it: one
plain Python loop per memory, dicts of floats (the Generative Agents `retrieve.py` style).

It shares no scoring code with the engine (only the store's own reader), so it serves as an
independent cross-check in the tests and as the baseline the benchmark compares against.
Cosines are the exact dot of the stored float32 unit vectors (math.fsum of the products),
the definition the engine's exact pass uses.
"""
from __future__ import annotations

import math
import operator


def load_nodes(store, arrays=None) -> list[dict]:
    """Every memory as a plain dict, in store order. `embedding` stays the arrays' float32 row
    (converted to a list inside the loop, as GA's cos_sim converts its lists)."""
    a = arrays if arrays is not None else store.arrays()
    # tags and attributes decoded by the store (malformed or of the wrong type: empty)
    extra = {r["id"]: (r["tags"], r["attributes"]) for r in store.get_many(a.ids.tolist(), fields=("tags", "attributes"))}

    def opt(x):
        return None if x != x else float(x)

    nodes = []
    for i in range(len(a)):
        tags, attrs = extra.get(a.ids[i], ([], {}))
        nodes.append({
            "id": str(a.ids[i]), "agent": a.agent[i], "kind": a.kind[i], "importance": float(a.importance[i]),
            "event_time": float(a.event_time[i]), "created_at": float(a.created_at[i]),
            "last_accessed": opt(a.last_accessed[i]), "valid_until": opt(a.valid_until[i]),
            "confidence": float(a.confidence[i]), "decay_rate": float(a.decay_rate[i]),
            "protected": bool(a.protected[i]),
            "embedding": a.embedding[i] if a.has_embedding[i] else None,
            "tags": [str(x) for x in tags], "attributes": attrs,
        })
    return nodes


def cos_sim(a, b) -> float:
    return math.fsum(map(operator.mul, a, b))


def normalize_dict_floats(d, target_min, target_max):
    min_val = min(val for val in d.values())
    max_val = max(val for val in d.values())
    range_val = max_val - min_val
    if range_val == 0:
        for key in d:
            d[key] = (target_max - target_min) / 2
    else:
        for key, val in d.items():
            d[key] = ((val - min_val) * (target_max - target_min) / range_val + target_min)
    return d


def _passes(node, p, exclude_id) -> bool:
    if node["id"] == exclude_id:
        return False
    if p.as_of is not None:
        if node["created_at"] > p.as_of:
            return False
        if not p.include_retired and node["valid_until"] is not None and node["valid_until"] <= p.as_of:
            return False
    elif not p.include_retired and node["valid_until"] is not None:
        return False
    if p.agents is not None and node["agent"] not in p.agents:
        return False
    if p.kinds is not None and node["kind"] not in p.kinds:
        return False
    if p.time_range is not None:
        lo, hi = p.time_range
        if (lo is not None and node["event_time"] < lo) or (hi is not None and node["event_time"] > hi):
            return False
    if p.protected_only and not node["protected"]:
        return False
    if p.tags is not None and not any(t in node["tags"] for t in p.tags):
        return False
    return True


def _last_accessed(node, as_of):
    la = node["last_accessed"] if node["last_accessed"] is not None else node["created_at"]
    if as_of is not None and la > as_of:
        la = node["created_at"]
    return la


def _decay(node, ref, as_of):
    if node["protected"]:
        return node["confidence"]
    days = max(ref - _last_accessed(node, as_of), 0.0) / 86400.0
    return node["confidence"] * math.exp(-node["decay_rate"] * days ** 0.8)


def _relevance(node, q):
    e = node["embedding"]
    return 0.0 if e is None else cos_sim(e.tolist(), q)


def retrieve(nodes, query, params, *, now, fts=None, ga_weights=None, exclude_id=None) -> list[tuple[str, float]]:
    """Top k (id, score) under `params`, best first. `query` is the query vector (a list of
    floats), `fts` the store's full-text hits [(id, bm25)] for hybrid, `now` the reference time
    when params.as_of is not set."""
    p = params
    ref = p.as_of if p.as_of is not None else now
    q = None if query is None else [float(x) for x in query]
    cands = [n for n in nodes if _passes(n, p, exclude_id)]
    scores = {}
    if p.preset == "generative-agents":
        scores = _generative_agents(cands, q, p, ga_weights or {}, ref)
    elif p.preset in ("dual-memory", "ada"):
        if p.preset == "ada":
            cycles = _ada_cycles(nodes)
            current = max([cycles[n["id"]] for n in nodes if n["created_at"] <= ref] or list(cycles.values()))
        for n in cands:
            rel = _relevance(n, q)
            imp = n["importance"] / 10
            f = _decay(n, ref, p.as_of) if p.confidence_decay else None
            if p.preset == "dual-memory":
                rec = math.exp(-(max(ref - n["event_time"], 0.0) / 3600.0) / p.tau_hours)
                terms = [rel * p.alpha, rec * p.beta, imp * p.gamma]
            else:
                rec = p.decay ** max(current - cycles[n["id"]], 0.0)
                terms = [rec * p.beta, imp * p.gamma, rel * p.alpha]
            if f is not None:
                terms = [t * f for t in terms]
            scores[n["id"]] = terms[0] + terms[1] + terms[2]
    elif p.preset == "hybrid":
        in_cands = {n["id"] for n in cands}
        order = {n["id"]: i for i, n in enumerate(nodes)}
        hits = sorted((h for h in (fts or []) if h[0] in in_cands), key=lambda h: (h[1], order[h[0]]))
        fts_rank = {mid: r for r, (mid, _) in enumerate(hits, start=1)}
        vec_rank = {}
        if q is not None:
            rels = [(n["id"], _relevance(n, q)) for n in cands if n["embedding"] is not None]
            for r, (mid, _) in enumerate(sorted(rels, key=lambda x: x[1], reverse=True), start=1):
                vec_rank[mid] = r
        for n in cands:
            a = 1.0 / (p.rrf_k + fts_rank[n["id"]]) if n["id"] in fts_rank else 0.0
            b = 1.0 / (p.rrf_k + vec_rank[n["id"]]) if n["id"] in vec_rank else 0.0
            if p.confidence_decay:
                f = _decay(n, ref, p.as_of)
                a, b = a * f, b * f
            scores[n["id"]] = a + b
    elif p.preset == "working-memory":
        for n in cands:
            age_in_hours = max(ref - n["created_at"], 0.0) / 3600.0
            s = n["importance"] * (1.0 / (1 + age_in_hours))
            scores[n["id"]] = s * _decay(n, ref, p.as_of) if p.confidence_decay else s
    else:
        raise ValueError(f"unknown preset {p.preset!r}")
    return sorted(scores.items(), key=lambda kv: kv[1], reverse=True)[:p.k]


def _generative_agents(cands, q, p, ga_weights, ref):
    """new_retrieve, line by line, for each persona in the candidates (merged by score)."""
    def is_candidate(n):
        gt = n["attributes"].get("ga_type")
        if gt is None:
            return n["kind"] != "dialogue" and "dialogue" not in n["tags"]
        return gt in ("event", "thought") and "idle" not in str(n["attributes"].get("embedding_key") or "")

    def newest_first(n):
        c = n["attributes"].get("node_count")
        return -float(c) if isinstance(c, (int, float)) else math.inf

    cands = [n for n in cands if is_candidate(n)]
    seq_event = sorted([n for n in cands if n["attributes"].get("ga_type") == "event"], key=newest_first)
    seq_thought = sorted([n for n in cands if n["attributes"].get("ga_type") == "thought"], key=newest_first)
    others = [n for n in cands if n["attributes"].get("ga_type") is None]
    nodes = [[_last_accessed(i, p.as_of), i] for i in seq_event + seq_thought + others]
    nodes = sorted(nodes, key=lambda x: x[0])
    nodes = [i for created, i in nodes]
    if not nodes:
        return {}

    def w(n, key, default):
        return ga_weights.get(n["agent"], {}).get(key, default) if p.agent_weights else default

    # each persona retrieves from its own memory: its own recency order and normalisation
    personas: dict[str, list] = {}
    for n in nodes:
        personas.setdefault(n["agent"], []).append(n)
    recency_out, importance_out, relevance_out = {}, {}, {}
    for own in personas.values():
        recency = {n["id"]: w(n, "recency_decay", p.decay) ** i for i, n in enumerate(own, start=1)}
        recency_out.update(normalize_dict_floats(recency, 0, 1))
        importance_out.update(normalize_dict_floats({n["id"]: n["importance"] for n in own}, 0, 1))
        relevance_out.update(normalize_dict_floats({n["id"]: _relevance(n, q) for n in own}, 0, 1))
    gw = [p.beta, p.alpha, p.gamma]
    master_out = {}
    for n in nodes:
        key = n["id"]
        terms = [w(n, "recency_w", 1.0) * recency_out[key] * gw[0],
                 w(n, "relevance_w", 1.0) * relevance_out[key] * gw[1],
                 w(n, "importance_w", 1.0) * importance_out[key] * gw[2]]
        if p.confidence_decay:
            f = _decay(n, ref, p.as_of)
            terms = [t * f for t in terms]
        master_out[key] = terms[0] + terms[1] + terms[2]
    return master_out


def _ada_cycles(nodes) -> dict:
    """attributes.cycle; without any: each distinct event time is a cycle (dense rank from 1);
    rows lacking one in a store that has some: the latest known cycle at or before their time."""
    known = {}
    for n in nodes:
        c = n["attributes"].get("cycle")
        if isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c):
            known[n["id"]] = float(c)
    if not known:
        times = sorted({n["event_time"] for n in nodes})
        dense = {t: i for i, t in enumerate(times, start=1)}
        return {n["id"]: float(dense[n["event_time"]]) for n in nodes}
    out = {}
    for n in nodes:
        if n["id"] in known:
            out[n["id"]] = known[n["id"]]
        else:
            before = [known[m["id"]] for m in nodes if m["id"] in known and m["event_time"] <= n["event_time"]]
            out[n["id"]] = max(before) if before else 0.0
    return out
