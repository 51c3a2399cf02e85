"""A cancel flag shared by a long job and whoever may stop it (a Cancel button, Ctrl-C)."""
from __future__ import annotations

import threading

from .errors import Cancelled


class CancelToken:
    def __init__(self):
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """Raise Cancelled if cancel() was called."""
        if self._event.is_set():
            raise Cancelled()

    def sleep(self, seconds: float) -> None:
        """Wait `seconds` unless cancelled first (then raise Cancelled)."""
        if self._event.wait(max(0.0, seconds)):
            raise Cancelled()


def check(cancel: CancelToken | None) -> None:
    if cancel is not None:
        cancel.check()
