"""The offline default: WordLlama (256-d), weights and tokenizer shipped inside the package.

WordLlama's default loader looks for the tokenizer online; pointing `cache_dir` at the
installed package folder with downloads disabled makes it load from disk only.
"""
from __future__ import annotations

import logging
import os
import threading

import numpy as np

from .base import Embedder, EmbedderUnavailable

CONFIG = "l2_supercat"
DIM = 256
MODEL_NAME = f"wordllama/{CONFIG}-{DIM}"

_lock = threading.Lock()
_model = None


def _load():
    global _model
    with _lock:
        if _model is None:
            root = logging.getLogger()
            handlers, level = list(root.handlers), root.level
            try:
                import wordllama
                from wordllama import WordLlama
            except ImportError as e:  # pragma: no cover - a broken install
                raise EmbedderUnavailable(f"the local embedding model needs the `wordllama` package ({e})") from None
            finally:
                # wordllama calls logging.basicConfig(level=INFO) on import, which would print every
                # library's INFO lines (each HTTP request, ...) on stderr: put the root logger back
                for h in root.handlers[:]:
                    if h not in handlers:
                        root.removeHandler(h)
                root.setLevel(level)
            folder = os.path.dirname(wordllama.__file__)
            try:
                _model = WordLlama.load(config=CONFIG, dim=DIM, cache_dir=folder, disable_download=True)
            except Exception as e:
                raise EmbedderUnavailable(f"the local model {MODEL_NAME} could not be loaded from {folder}: {e}") from None
        return _model


class LocalEmbedder(Embedder):
    model = MODEL_NAME
    dim = DIM

    def _embed(self, texts: list[str]) -> np.ndarray:
        return _load().embed(texts, norm=True)
