"""The Task a command hands its long job (import, reflect, consolidate): progress on stderr,
and Ctrl-C cancels the task instead of killing the process mid-write, so the job stops at its
next check and reports that nothing was written. A second Ctrl-C interrupts at once."""
from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ..tasks import Task


class _Printer:
    """Progress texts: rewritten in place on a terminal (`one_line`), else one line per text."""

    def __init__(self, one_line: bool) -> None:
        self.one_line, self.last, self.open = one_line, None, False

    def __call__(self, fraction: float, text: str) -> None:
        if not text or text == self.last:
            return
        self.last = text
        if self.one_line:
            self.open = fraction < 1
            print(f"\r{text}\033[K", end="" if self.open else "\n", file=sys.stderr, flush=True)
        else:
            print(text, file=sys.stderr, flush=True)

    def close(self) -> None:
        """End a line left open, so what the command prints next starts on its own line."""
        if self.open:
            print(file=sys.stderr, flush=True)
            self.open = False


@contextmanager
def command_task(name: str, *, show: str = "tty") -> Iterator[Task]:
    """`show`: "tty" = progress only when stderr is a terminal (one line, rewritten),
    "lines" = always, one line per step, "none" = never."""
    one_line = sys.stderr.isatty()
    shown = show == "lines" or (show == "tty" and one_line)
    printer = _Printer(one_line and show == "tty") if shown else None
    task = Task(name, on_progress=printer)

    def on_sigint(signum, frame):
        if task.cancelled:
            raise KeyboardInterrupt
        print("\nmemviz: cancelling (Ctrl-C again to stop at once)…", file=sys.stderr, flush=True)
        task.cancel()

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, on_sigint) if main else None
    try:
        yield task
    finally:
        if printer is not None:
            printer.close()
        if main:
            signal.signal(signal.SIGINT, previous)
