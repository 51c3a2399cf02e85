"""The HNSW graphs memviz makes on PostgreSQL (a real server): every way an index comes to be
(a copy's build, one completed later by `memviz index` or the window, a store's first vector
of a new size) gives it schema.HNSW_OPTIONS, and its search answers like the exact one."""
from __future__ import annotations

import numpy as np
import psycopg
import pytest
from pg_server import pg, pg_db  # noqa: F401 - fixtures

import memviz.store as ms
from memviz.store.copy import copy_store
from memviz.store.postgres import schema
from memviz.store.postgres.index import build_missing_indexes
from memviz.tasks import Cancelled, Task

DIM = 16


def _graph_options(dsn: str) -> dict[int, dict[str, int]]:
    """{dimension: the reloptions of its valid HNSW index}."""
    with psycopg.connect(dsn) as c:
        rows = c.execute("SELECT c.relname, c.reloptions FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                         "JOIN pg_am am ON am.oid = c.relam WHERE am.amname = 'hnsw' AND i.indisvalid").fetchall()
    return {int(name.rsplit("_", 1)[1]): {k: int(v) for k, v in (o.split("=") for o in opts)} for name, opts in rows}


def _source(tmp_path, n: int = 400) -> tuple[str, np.ndarray]:
    rng = np.random.default_rng(5)
    vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    path = str(tmp_path / "src.db")
    with ms.create(path) as s:
        s.insert_memories([{"id": f"m{i:04d}", "kind": "fact", "content": f"memory {i}", "embedding": vecs[i],
                            "embedding_model": "t"} for i in range(n)], audit=False)
    return path, vecs


@pytest.mark.parametrize("later", [False, True], ids=["copy", "completed later"])
def test_every_vector_index_has_memvizs_graph_options(pg_db, tmp_path, later):  # noqa: F811
    src, vecs = _source(tmp_path)
    want = {k: int(v) for k, v in schema.HNSW_OPTIONS.items()}
    if later:  # the copy's build cancelled, then the window's way: CONCURRENTLY on a store in use
        task = Task("copy", lambda _f, t: task.cancel() if t.startswith("building the HNSW index") else None)
        with pytest.raises(Cancelled):
            copy_store(src, pg_db, task)
        assert _graph_options(pg_db) == {}
        assert build_missing_indexes(pg_db, concurrently=True) == [DIM]
    else:
        copy_store(src, pg_db)
    assert _graph_options(pg_db) == {DIM: want}
    with ms.open(pg_db) as store:
        store.insert_memories([{"id": "wide", "kind": "fact", "content": "a first 24-d vector",
                                "embedding": np.ones(24, np.float32) / np.sqrt(24), "embedding_model": "t24"}])
        assert _graph_options(pg_db) == {DIM: want, 24: want}
        # the graph's search at memviz's ef_search finds what the exact search finds on so few rows
        exact = np.argsort(-(vecs[:20] @ vecs.T), axis=1)[:, :10]
        for q, top in zip(vecs[:20], exact):
            assert [mid for mid, _ in store.vec_search(q, 10)] == [f"m{i:04d}" for i in top]
