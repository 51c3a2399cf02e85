import os

# Qt tests run headless everywhere (CI has no display).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path  # noqa: E402

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


def _find_real_persona() -> Path:
    """The real GA persona in ../shared/realdata/ (read in place, never copied into the project)."""
    tail = Path("shared", "realdata", "generative_agents", "Isabella_Rodriguez")
    if os.environ.get("MEMVIZ_REALDATA"):
        return Path(os.environ["MEMVIZ_REALDATA"], *tail.parts[2:])
    for parent in Path(__file__).resolve().parents:
        if (parent / tail).is_dir():
            return parent / tail
    if os.environ.get("CI"):  # CI has shared/ beside the clone: a missing persona is a failure, not a skip
        raise RuntimeError(f"the real GA persona ({tail}) is missing beside the checkout")
    return Path("/nonexistent") / tail


REAL_PERSONA = _find_real_persona()
needs_real = pytest.mark.skipif(not (REAL_PERSONA / "bootstrap_memory").is_dir(),
                                reason="the real GA persona is not on this machine")


def assert_same_arrays(a, b):
    """Two MemoryArrays hold the same values, dtypes and shapes in every field."""
    for name in a.__dataclass_fields__:
        if name.startswith("_"):
            continue
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape, name
            assert (np.array_equal(x, y, equal_nan=True) if x.dtype != object else list(x) == list(y)), name
        else:
            assert x == y, name
