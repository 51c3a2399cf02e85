import numpy as np

from memviz.embed import Embedder


class BadDim(Embedder):
    model = "broken/bad-dim"
    dim = "64"  # the wrong type: a size is an int

    def _embed(self, texts):
        return np.zeros((len(texts), 64), np.float32)
