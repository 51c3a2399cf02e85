"""Completing the HNSW indexes of a PostgreSQL store (after `memviz copy`, or one it left
unbuilt). No Qt here.

Each index is built by one statement with the settings of `schema.build_settings`: present
when it ends, absent (or left invalid, dropped by the next build) when cancelled or cut off,
so this step can always be run again. A cancel asks the server to stop the build at once
(psycopg's cancel), rather than waiting for the statement to end. While it runs, a second
connection reads the server's own progress of it (pg_stat_progress_create_index) every
PROGRESS_S: pgvector counts the rows put into the graph.
"""
from __future__ import annotations

from ...background import in_thread
from ...tasks import Cancelled, Task
from . import schema
from .connect import _psycopg, connect, translate
from .dsn import redact

PROGRESS_S = 0.5


def build_missing_indexes(dsn: str, task: Task | None = None, *, concurrently: bool = False) -> list[int]:
    """Build the HNSW index of each dimension that lacks one; returns those dimensions.
    `concurrently`: without blocking other sessions' writes (a store in use: the window
    completes an interrupted build this way when it opens a writable store; a copy's new
    target is built plainly, see store/copy.py)."""
    psycopg = _psycopg()
    task = task or Task("index")
    conn = connect(dsn)
    watch = None
    try:
        task.on_cancel(lambda: conn.closed or conn.cancel_safe())
        dims = schema.missing_vector_indexes(conn)
        for i, dim in enumerate(dims):
            step = task.part(i / len(dims), (i + 1) / len(dims))
            text = f"building the HNSW index of the {dim}-dimension vectors in {redact(dsn)}"
            step.progress(0.0, text)
            task.check()
            rows = schema.vector_rows(conn, dim)
            pid = conn.info.backend_pid
            build = in_thread(lambda d=dim, n=rows: schema.build_vector_index(conn, d, concurrently=concurrently,
                                                                               rows=n), "memviz-pg-index")
            while True:
                try:
                    build.result(timeout=PROGRESS_S)
                    break
                except TimeoutError:
                    watch = watch if watch is not None and not watch.closed else connect(dsn, need_vector=False)
                    _report(watch, pid, rows, step, text)
                except psycopg.errors.QueryCanceled:
                    if task.cancelled:
                        raise Cancelled() from None
                    raise
        task.progress(1.0, f"{len(dims)} vector index{'es' if len(dims) != 1 else ''} built")
        return dims
    except psycopg.Error as e:
        raise translate(e, dsn) from None
    finally:
        if watch is not None:
            watch.close()
        conn.close()


def _report(watch, pid: int, rows: int, step: Task, text: str) -> None:
    """The build's progress as the server reports it: the rows pgvector has put into the graph."""
    row = watch.execute("SELECT phase, tuples_done FROM pg_stat_progress_create_index WHERE pid = %s",
                        (pid,)).fetchone()
    if row is None:
        return
    phase, done = row
    if rows and done:
        step.progress(min(0.99, done / rows), f"{text}: {done:,} of {rows:,} vectors ({phase})")
    else:
        step.progress(0.0, f"{text} ({phase})")
