"""Any OpenAI-compatible embeddings endpoint (OpenAI, Ollama, LM Studio, vLLM) via `openai`.

The key comes from the environment (or is passed in); it is never written to a store.
"""
from __future__ import annotations

import os

import numpy as np

from .base import Embedder, EmbedderUnavailable, EmbeddingError

ENV_BASE_URL = "MEMVIZ_EMBED_BASE_URL"
ENV_API_KEY = "MEMVIZ_EMBED_API_KEY"


class OpenAIEmbedder(Embedder):
    def __init__(self, model: str, *, dim: int, base_url: str | None = None, api_key: str | None = None,
                 dimensions: int | None = None, timeout: float = 30.0, max_retries: int = 2):
        try:
            import openai
        except ImportError as e:  # pragma: no cover
            raise EmbedderUnavailable(f"OpenAI-compatible embeddings need the `openai` package ({e})") from None
        base_url = base_url or os.environ.get(ENV_BASE_URL) or os.environ.get("OPENAI_BASE_URL")
        api_key = api_key or os.environ.get(ENV_API_KEY) or os.environ.get("OPENAI_API_KEY")
        if not api_key and not base_url:
            raise EmbedderUnavailable(
                f"the model {model} needs an OpenAI-compatible endpoint: set {ENV_BASE_URL} "
                f"(and {ENV_API_KEY} or OPENAI_API_KEY)")
        self.model, self.dim, self.dimensions = model, int(dim), dimensions
        # Local servers (Ollama, LM Studio) accept any key; the client insists on one.
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed",
                                     timeout=timeout, max_retries=max_retries)

    def _embed(self, texts: list[str]) -> np.ndarray:
        import openai

        kwargs = {"model": self.model, "input": texts}
        if self.dimensions:
            kwargs["dimensions"] = self.dimensions
        try:
            reply = self._client.embeddings.create(**kwargs)
        except openai.OpenAIError as e:
            raise EmbeddingError(f"the embedding endpoint failed for {self.model}: {e}") from None
        data = sorted(reply.data, key=lambda d: d.index)
        if len(data) != len(texts):
            raise EmbeddingError(f"the endpoint returned {len(data)} vectors for {len(texts)} texts")
        return np.array([d.embedding for d in data], dtype=np.float32)
