import os

# Qt tests run headless everywhere (CI has no display).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import memviz.store as ms  # noqa: E402


@pytest.fixture
def store_path(tmp_path):
    return tmp_path / "mem.db"


@pytest.fixture
def store(store_path):
    s = ms.create(str(store_path))
    yield s
    s.close()


def unit_vectors(n, dim=8, seed=0):
    v = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)
