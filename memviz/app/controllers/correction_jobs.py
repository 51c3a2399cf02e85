"""A correction's new text, embedded on a worker before it is written (with a remote model that
is a network call), so the window never waits on an embedding model.

`CorrectionJobs(workers)` makes the embedder of a store's model once (`embedder`) and runs one
worker job per correction (`start`); it hands the vector to the caller, or, when the model
failed or the user cancelled the job (the status bar's Cancel), gives the user's text back to
the caller with why it was not written, so nothing typed is lost.
"""
from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject

from memviz.app.workers import Workers
from memviz.edits import embed_text, shown_id
from memviz.embed import LOCAL_DIM, LOCAL_MODEL, EmbedderUnavailable, default_embedder, embedder_for

EMBED_JOB = "embedding"  # one worker job per correction being embedded: see embed_job()


def embed_job(memory_id: str) -> str:
    """The worker job embedding a correction of `memory_id` (the status bar shows its name)."""
    return f"{EMBED_JOB} {shown_id(memory_id)}"


def model_embedder(model: str, dim: int):
    """The embedder of a store's model (EmbedderUnavailable when memviz cannot run it here)."""
    return default_embedder() if model == LOCAL_MODEL else embedder_for(model, dim)


class CorrectionJobs(QObject):
    """`embedder_for(model, dim)` makes the embedder of a store's model (tests pass a slow one)."""

    def __init__(self, workers: Workers, embedder_for=model_embedder, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.workers = workers
        self._make_embedder = embedder_for
        self._embedders: dict = {}  # (model, dim) -> Embedder or the EmbedderUnavailable message
        self._running: dict[str, tuple] = {}  # job name -> (task, memory id, text, given_back)
        workers.finished.connect(self._job_ended)

    def embedder(self, model: str | None, dim: int):
        """(Embedder, None) for a store's model, or (None, why it is unavailable). Cached per model;
        a store without embeddings is started with the local model."""
        key = (model, dim) if model is not None else (LOCAL_MODEL, LOCAL_DIM)
        if key not in self._embedders:
            try:
                self._embedders[key] = self._make_embedder(*key)
            except EmbedderUnavailable as e:
                self._embedders[key] = str(e)
        got = self._embedders[key]
        return (None, got) if isinstance(got, str) else (got, None)

    def start(self, memory_id: str, text: str, emb, embedded: Callable[[object], None],
              given_back: Callable[[str], None]) -> None:
        """Embed `text` on a worker; `embedded(vector)` on the GUI thread when done, else
        `given_back(why it was not written)`."""
        name = embed_job(memory_id)

        def job(task):
            task.check()
            out = embed_text(emb, text)
            task.check()  # cancelled while the model worked: the text is given back instead
            return out

        def done(out) -> None:
            self._running.pop(name, None)
            embedded(out)

        def failed(err: Exception) -> None:
            self._running.pop(name, None)
            given_back(f"Not written: the new text could not be embedded ({type(err).__name__}: {err}).")

        task = self.workers.submit(name, job, on_done=done, on_error=failed)
        self._running[name] = (task, memory_id, text, given_back)

    @property
    def embedding(self) -> list[str]:
        """Ids of the memories whose correction is being embedded (not written yet)."""
        return [entry[1] for entry in self._running.values()]

    def clear(self) -> None:
        """Forget the corrections still being embedded (the window closes)."""
        self._running.clear()

    def _job_ended(self, name: str) -> None:
        """A job ended; a correction's embedding that was cancelled gives the user their text back."""
        entry = self._running.get(name)
        if entry is not None and entry[0].cancelled:
            del self._running[name]
            entry[3]("Cancelled; nothing was written.")
