"""The toy system's embedding model: words hashed into 64 dimensions. Registered with memviz, it
embeds a query or a corrected text the way the toy system embeds its records."""
from __future__ import annotations

import hashlib
import re

import numpy as np

from memviz.embed import Embedder

_WORD = re.compile(r"\w+")


def hash_vectors(texts: list[str], dim: int) -> np.ndarray:
    out = np.zeros((len(texts), dim), np.float32)
    for i, text in enumerate(texts):
        for word in _WORD.findall(text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little")
            out[i, h % dim] += 1.0 if h & 1 << 31 else -1.0
    return out


class HashEmbedder(Embedder):
    model = "toy/hash-64"  # the name the toy system's records carry
    dim = 64

    def _embed(self, texts: list[str]) -> np.ndarray:
        return hash_vectors(texts, self.dim)  # memviz normalises and checks what this returns
