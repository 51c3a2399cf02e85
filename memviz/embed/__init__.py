"""Embedding providers. No Qt here.

`embedder_for(model, dim)` gives the provider that can embed a query the way a store
was embedded, or raises EmbedderUnavailable saying why (the caller can still query
by example or by text).

An embedder of one model (an `Embedder` subclass whose `model` and `dim` are set on the class and
that is made with no arguments) is registered with `register_embedder`: the local one below, and
a plugin's (entry point group `memviz.embedders`, memviz/plugins.py), loaded the first time a
store names a model none registered makes. A model no registered embedder makes is asked of an
OpenAI-compatible server.
"""
from __future__ import annotations

import inspect

from .. import plugins
from .base import Embedder, EmbedderUnavailable, EmbeddingError
from .local import DIM as LOCAL_DIM
from .local import MODEL_NAME as LOCAL_MODEL
from .local import LocalEmbedder
from .openai_compat import OpenAIEmbedder

#: model names of vectors whose model their store does not record (another system's store):
#: memviz cannot embed text the same way, so it never mixes its own vectors in
UNKNOWN_PREFIX = "unknown/"

GROUP = "memviz.embedders"
_MODELS: dict[str, type[Embedder]] = {}   # model name -> the embedder that makes its vectors
_CLAIMS = plugins.Claims("an embedder of the model")


def check_embedder(cls) -> None:
    """Raise TypeError / ValueError saying what `cls` lacks to embed for memviz (what `Embedder`
    declares: `model`, `dim`, `_embed`, made with no arguments)."""
    if not (isinstance(cls, type) and issubclass(cls, Embedder)):
        raise TypeError(f"{cls!r} is not an embedder: make it a subclass of memviz.embed.Embedder")
    name = cls.__name__
    if inspect.isabstract(cls):
        raise TypeError(f"{name} does not implement {', '.join(sorted(m + '()' for m in cls.__abstractmethods__))}")
    model = inspect.getattr_static(cls, "model", None)
    if not isinstance(model, str) or not model.strip() or model.startswith(UNKNOWN_PREFIX):
        raise ValueError(f"{name}.model must name the model whose vectors it makes (the name a store records), "
                         f"not {model!r}")
    dim = inspect.getattr_static(cls, "dim", None)
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ValueError(f"{name}.dim must be the (positive int) size of its vectors, not {dim!r}")
    try:
        inspect.signature(cls).bind()
    except TypeError:
        raise TypeError(f"{name} must be made with no arguments (memviz makes one when a store needs it)") from None


def register_embedder(cls: type[Embedder], *, plugin: plugins.Plugin | None = None) -> str:
    """Make memviz embed text for stores whose vectors `cls.model` made; returns the model's
    name. Raises TypeError / ValueError saying what it lacks, or when another embedder makes
    that model (the one there first wins: memviz's own is)."""
    check_embedder(cls)
    if cls.model in _MODELS:
        raise _CLAIMS.taken(cls.model)
    _MODELS[cls.model] = cls
    _CLAIMS.add(cls.model, plugin)
    return cls.model


def _unregister(plugin: plugins.Plugin) -> None:
    _MODELS.pop(plugin.registered, None)
    _CLAIMS.drop(plugin.registered)


def load_plugins() -> None:
    """Register the installed plugins' embedders, once."""
    plugins.load(GROUP, lambda cls, plugin: register_embedder(cls, plugin=plugin), _unregister)


def embedders() -> dict[str, type[Embedder]]:
    """model name -> its registered embedder (the plugins' loaded first)."""
    load_plugins()
    return dict(_MODELS)


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
    if model not in _MODELS:
        load_plugins()
    cls = _MODELS.get(model)
    if cls is not None:
        if dim not in (None, cls.dim):
            raise EmbedderUnavailable(f"the store says {model} made {dim}-d vectors, but that model makes {cls.dim}-d ones")
        plugin = _CLAIMS.plugin(model)
        made = plugins.guarded(plugin, cls, doing="when it was made")
        if made is None:  # the plugin is skipped now (said once, by memviz/plugins.py)
            raise EmbedderUnavailable(f"the embedder of {model} ({plugin.who()}) could not be made: {plugin.error}")
        return made
    if model.startswith("wordllama/"):
        raise EmbedderUnavailable(f"{model} is not the WordLlama model shipped with memviz ({LOCAL_MODEL})")
    if dim is None:
        raise EmbedderUnavailable(f"the dimension of {model} vectors is unknown")
    return OpenAIEmbedder(model, dim=dim, **openai_kwargs)


register_embedder(LocalEmbedder)

__all__ = ["Embedder", "EmbedderUnavailable", "EmbeddingError", "LocalEmbedder", "OpenAIEmbedder",
           "LOCAL_MODEL", "LOCAL_DIM", "UNKNOWN_PREFIX", "check_embedder", "default_embedder", "embedder_for",
           "embedders", "load_plugins", "register_embedder", "unknown_model"]
