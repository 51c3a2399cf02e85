"""One way to run a function in a plain thread and collect its result or exception later
(the store's integrity check beside the read; the launch's read before Qt is imported).
No Qt here: the window's jobs use memviz/app/workers.py."""
from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")


def in_thread(fn: Callable[[], T], name: str) -> Future:
    """Start `fn` in a daemon thread; the Future holds what it returned or raised."""
    fut: Future = Future()

    def work() -> None:
        try:
            fut.set_result(fn())
        except BaseException as e:  # noqa: BLE001 - handed to whoever asks the Future
            fut.set_exception(e)
    threading.Thread(target=work, name=name, daemon=True).start()
    return fut
