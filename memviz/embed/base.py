"""The embedding provider interface."""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ..tasks import Steps, Task

#: texts per provider call in embed_many (progress and cancel happen between batches)
BATCH = 256


class EmbedderUnavailable(Exception):
    """The model that embedded a store cannot be used here; the message says why and what to do."""


class EmbeddingError(Exception):
    """A provider failed while embedding (HTTP error, bad reply)."""


class Embedder(ABC):
    #: the name recorded in `memories.embedding_model`
    model: str
    dim: int

    @abstractmethod
    def _embed(self, texts: list[str]) -> np.ndarray:
        """Raw vectors, one row per text."""

    def embed(self, texts) -> np.ndarray:
        """float32 (n, dim), unit-normalised, finite; checked so a bad provider reply never reaches a store."""
        if isinstance(texts, str):
            texts = [texts]
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        vecs = np.asarray(self._embed(texts), dtype=np.float32)
        if vecs.shape != (len(texts), self.dim):
            raise EmbeddingError(f"{self.model} returned vectors of shape {vecs.shape}, expected {(len(texts), self.dim)}")
        if not np.all(np.isfinite(vecs)):
            raise EmbeddingError(f"{self.model} returned NaN or infinite values")
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return np.divide(vecs, norms, out=np.zeros_like(vecs), where=norms > 0)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def embed_many(self, texts, task: Task | Steps | None = None, *, batch: int = BATCH) -> np.ndarray:
        """embed() in batches of `batch` texts: progress after each batch, and a cancel stops
        between two batches (raises Cancelled). Pass a `Steps` to count the texts into a
        larger job's units (an import counts texts embedded and records written)."""
        texts = list(texts)
        steps = task if isinstance(task, Steps) else Steps(task or Task(), len(texts), "Embedding")
        out = np.zeros((len(texts), self.dim), np.float32)
        for i in range(0, len(texts), batch):
            chunk = texts[i:i + batch]
            out[i:i + len(chunk)] = self.embed(chunk)
            steps.advance(len(chunk))
        return out
