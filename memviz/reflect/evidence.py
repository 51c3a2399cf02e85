"""Evidence retrieval for reflection: a retriever is `callable(question_text, k) -> [memory id]`.

The default is the retrieval engine (`memviz.retrieval`, the dual-memory design's weighted score with the
current settings). Where that package is missing, `vector_retriever` ranks by the store's own
sqlite-vec index (cosine only), and by full-text search when the store's embedding model
cannot embed here. The Reflector drops retired or other agents' ids whatever the retriever.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..embed import EmbedderUnavailable, embedder_for

Retriever = Callable[[str, int], list]
_VEC_K_MAX = 4096  # sqlite-vec's limit for k


def default_retriever(store, *, agent: str | None = None, params=None, preset: str = "dual-memory") -> Retriever:
    """Evidence the way the user's retrieval ranks it: the engine."""
    return engine_retriever(store, agent=agent, params=params, preset=preset)


def engine_retriever(store, *, agent: str | None = None, params=None, preset: str = "dual-memory") -> Retriever:
    """Rank with the retrieval engine; `params` are the user's current settings (default:
    the preset's), restricted to `agent`."""
    from memviz.retrieval import Engine, preset_params

    engine = Engine(store)
    base = params if params is not None else preset_params(preset)
    if agent is not None:
        base = replace(base, agents=(agent,))
    fallback = None

    def retrieve(text: str, k: int) -> list[str]:
        nonlocal fallback
        try:
            engine.set_query(text)
        except EmbedderUnavailable:
            fallback = fallback or fts_retriever(store, agent=agent)
            return fallback(text, k)
        return list(engine.score(replace(base, k=int(k))).ids)

    return retrieve


def _keep(store, ids, agent, model=None) -> list[str]:
    """ids in order, limited to live memories of `agent` (and embedded with `model` if given)."""
    rows = {r["id"]: r for r in store.get_many(ids)}
    out = []
    for i in ids:
        r = rows.get(i)
        if r is None or r["valid_until"] is not None or (agent is not None and r["agent"] != agent):
            continue
        if model is not None and r["embedding_model"] != model:
            continue
        out.append(i)
    return out


def fts_retriever(store, *, agent: str | None = None) -> Retriever:
    def retrieve(text: str, k: int) -> list[str]:
        ids = [i for i, _ in store.fts_search(text, limit=max(50, 5 * k))]
        return _keep(store, ids, agent)[:k]

    return retrieve


def vector_retriever(store, *, agent: str | None = None, embedder=None) -> Retriever:
    """Cosine nearest neighbours through the store's vec0 index, live memories of `agent` only."""
    model, dim = store.main_model()
    if embedder is None and model:
        try:
            embedder = embedder_for(model, dim)
        except EmbedderUnavailable:
            embedder = None
    if embedder is None:
        return fts_retriever(store, agent=agent)

    def retrieve(text: str, k: int) -> list[str]:
        vec = embedder.embed_one(text)
        n = min(_VEC_K_MAX, 4 * k + 20)
        while True:
            hits = [i for i, _ in store.vec_search(vec, n)]
            kept = _keep(store, hits, agent, embedder.model)
            if len(kept) >= k or len(hits) < n or n >= _VEC_K_MAX:
                return kept[:k]
            n = min(_VEC_K_MAX, n * 4)

    return retrieve
