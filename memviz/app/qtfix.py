"""A guard against a reference-counting bug of the installed Qt binding.

PySide6 6.12 on Python 3.11 returns the bool result of `SignalInstance.emit()` without
taking a reference to it, so every emit from Python (pyqtgraph emits on every paint and
mouse move) takes one reference away from `True`. CPython 3.11's `True` starts with a
few hundred: after that many emits the interpreter aborts ("bool_dealloc: deallocating
True or False"). Python 3.12+ makes True immortal, which hides the bug there.

`install()` measures the leak on a private signal and, only if it is there, wraps
`emit` to give back the missing reference. Imported first by memviz.app.
"""
from __future__ import annotations

import ctypes
import sys

_installed = False


def _measure(n: int = 200) -> tuple[int, int]:
    """(references lost from True, from False) over n emits of a private signal."""
    from PySide6.QtCore import QObject, Signal  # noqa: PLC0415

    class _Probe(QObject):
        ping = Signal()

    probe = _Probe()
    t0, f0 = sys.getrefcount(True), sys.getrefcount(False)
    for _ in range(n):
        probe.ping.emit()
    return t0 - sys.getrefcount(True), f0 - sys.getrefcount(False)


def _incref():
    incref = ctypes.pythonapi.Py_IncRef
    incref.argtypes = [ctypes.py_object]
    incref.restype = None
    return incref


def install() -> bool:
    """Patch SignalInstance.emit if (and only if) it leaks; returns whether it patched."""
    global _installed
    if _installed:
        return True
    n = 200
    lost_true, lost_false = _measure(n)
    if lost_true + lost_false < n // 2:
        return False
    incref = _incref()
    for obj, lost in ((True, lost_true), (False, lost_false)):
        for _ in range(max(lost, 0)):
            incref(obj)  # give back what the probe itself took
    from PySide6.QtCore import SignalInstance  # noqa: PLC0415

    original = SignalInstance.emit

    def emit(self, *args):
        result = original(self, *args)
        if result is True or result is False:
            incref(result)  # the reference the binding forgot to take
        return result

    SignalInstance.emit = emit
    _installed = True
    return True
