"""Embedding providers. No Qt here.

`embedder_for(model, dim)` gives the provider that can embed a query the way a store
was embedded, or raises EmbedderUnavailable saying why (the caller can still query
by example or by text).
"""
from __future__ import annotations

from .base import Embedder, EmbedderUnavailable, EmbeddingError
from .local import DIM as LOCAL_DIM
from .local import MODEL_NAME as LOCAL_MODEL
from .local import LocalEmbedder
from .openai_compat import OpenAIEmbedder

#: model names of vectors whose model their store does not record (another system's store):
#: memviz cannot embed text the same way, so it never mixes its own vectors in
UNKNOWN_PREFIX = "unknown/"


def unknown_model(system: str, dim: int) -> str:
    return f"{UNKNOWN_PREFIX}{system}-{dim}d"


def default_embedder() -> Embedder:
    return LocalEmbedder()


def embedder_for(model: str | None, dim: int | None = None, **openai_kwargs) -> Embedder:
    if not model:
        raise EmbedderUnavailable("this store has no embeddings, so text queries use full-text search only")
    if model.startswith(UNKNOWN_PREFIX):
        raise EmbedderUnavailable(f"this store does not record which model made its {dim or ''}-d vectors, "
                                  "so memviz cannot embed text the same way")
    if model == LOCAL_MODEL:
        if dim not in (None, LOCAL_DIM):
            raise EmbedderUnavailable(f"the store says {model} made {dim}-d vectors, but that model makes {LOCAL_DIM}-d ones")
        return LocalEmbedder()
    if model.startswith("wordllama/"):
        raise EmbedderUnavailable(f"{model} is not the WordLlama model shipped with memviz ({LOCAL_MODEL})")
    if dim is None:
        raise EmbedderUnavailable(f"the dimension of {model} vectors is unknown")
    return OpenAIEmbedder(model, dim=dim, **openai_kwargs)


__all__ = ["Embedder", "EmbedderUnavailable", "EmbeddingError", "LocalEmbedder", "OpenAIEmbedder",
           "LOCAL_MODEL", "LOCAL_DIM", "UNKNOWN_PREFIX", "default_embedder", "embedder_for", "unknown_model"]
