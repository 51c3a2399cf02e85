"""Completing the HNSW indexes of a PostgreSQL store (after `memviz copy`, or one it left
unbuilt). No Qt here.

Each index is built in its own transaction with the settings of `schema.INDEX_BUILD_SETTINGS`:
present when it commits, absent when cancelled or cut off, so this step can always be run
again. A cancel asks the server to stop the build at once (psycopg's cancel), rather than
waiting for the statement to end.
"""
from __future__ import annotations

from ...tasks import Cancelled, Task
from . import schema
from .connect import _psycopg, connect, translate
from .dsn import redact


def build_missing_indexes(dsn: str, task: Task | None = None, *, concurrently: bool = False) -> list[int]:
    """Build the HNSW index of each dimension that lacks one; returns those dimensions.
    `concurrently`: without blocking other sessions' writes (a store in use: the window
    completes an interrupted build this way when it opens a writable store)."""
    psycopg = _psycopg()
    task = task or Task("index")
    conn = connect(dsn)
    try:
        task.on_cancel(lambda: conn.closed or conn.cancel_safe())
        dims = schema.missing_vector_indexes(conn)
        for i, dim in enumerate(dims):
            task.progress(i / len(dims), f"building the HNSW index of the {dim}-dimension vectors in {redact(dsn)}")
            task.check()
            try:
                schema.build_vector_index(conn, dim, concurrently=concurrently)
            except psycopg.errors.QueryCanceled:
                if task.cancelled:
                    raise Cancelled() from None
                raise
        task.progress(1.0, f"{len(dims)} vector index{'es' if len(dims) != 1 else ''} built")
        return dims
    except psycopg.Error as e:
        raise translate(e, dsn) from None
    finally:
        conn.close()
