"""Token counts for the prompt view: a real tokenizer that works offline, or a labelled estimate.

The tokenizer is Llama 2's 32,000-piece SentencePiece BPE, whose vocabulary ships inside the
installed `wordllama` package (the same file memviz's local embedder uses), read by the
`tokenizers` library: nothing is downloaded. It is exact for Llama-2-family agents; for other
models it is an approximation (see the README of this package for the measured gap to a
characters/4 estimate). When the file or the library is missing, counts fall back to
ceil(characters / 4), and `TokenCounter.exact` is False so every view can label them "≈".
"""
from __future__ import annotations

import importlib.util
import math
import os
import threading

import numpy as np

TOKENIZER_FILE = "l2_supercat_tokenizer_config.json"
TOKENIZER_NAME = "Llama 2 BPE (32k, from the wordllama package)"
ESTIMATE_NAME = "estimate: characters / 4"

_lock = threading.Lock()
_tokenizer = None  # loaded once per process; False when unavailable


def _load():
    global _tokenizer
    with _lock:
        if _tokenizer is None:
            _tokenizer = False
            try:
                from tokenizers import Tokenizer
                spec = importlib.util.find_spec("wordllama")  # located, not imported: its import configures logging
                folder = os.path.dirname(spec.origin) if spec and spec.origin else None
                path = os.path.join(folder, "tokenizers", TOKENIZER_FILE) if folder else None
                if path and os.path.exists(path):
                    tok = Tokenizer.from_file(path)
                    tok.no_truncation()
                    tok.no_padding()
                    _tokenizer = tok
            except Exception:  # noqa: BLE001 - any failure means: use the labelled estimate
                _tokenizer = False
        return _tokenizer or None


def estimate(text: str) -> int:
    return math.ceil(len(text) / 4)


class TokenCounter:
    """Counts tokens of memory texts. `exact` says whether a tokenizer or the estimate counted."""

    def __init__(self, use_tokenizer: bool = True):
        self._tok = _load() if use_tokenizer else None

    @property
    def exact(self) -> bool:
        return self._tok is not None

    @property
    def name(self) -> str:
        return TOKENIZER_NAME if self._tok is not None else ESTIMATE_NAME

    def count(self, text: str) -> int:
        if self._tok is None:
            return estimate(text)
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts) -> np.ndarray:
        """int64 token count of each text (no BOS/EOS: what the text adds to a prompt). Each
        distinct text is encoded once (agent stores repeat many texts verbatim)."""
        texts = ["" if t is None else str(t) for t in texts]
        if self._tok is None:
            return np.fromiter((estimate(t) for t in texts), np.int64, count=len(texts))
        index: dict[str, int] = {}
        codes = np.fromiter((index.setdefault(t, len(index)) for t in texts), np.int64, count=len(texts))
        distinct = list(index)
        counts = np.empty(len(distinct), np.int64)
        step = 20_000  # batches keep the peak memory of the encodings bounded
        for i in range(0, len(distinct), step):
            enc = self._tok.encode_batch(distinct[i:i + step], add_special_tokens=False)
            counts[i:i + len(enc)] = [len(e) for e in enc]
        return counts[codes]
