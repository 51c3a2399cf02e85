"""A guard against reference-counting bugs of PySide6 6.12.0 on CPython 3.11.

That binding takes references away from the singletons it returns or passes without
owning them: every `SignalInstance.emit()` from Python costs `True` one reference, and
every C++ signal delivered to a Python slot (timers, geometry changes, value changes —
pyqtgraph has hundreds per second) costs `None` one. CPython 3.11 starts these objects
with a few thousand references, so after a few thousand such calls the interpreter
aborts ("none_dealloc" / "bool_dealloc: deallocating None/True/False"); drawing scatter
symbols without pyqtgraph's symbol cache reaches that within one paint. CPython 3.12+
made the singletons immortal, which hides the bug (PySide6 6.11 does not have it).

`install()` probes both leaks and, only when one is present on a CPython older than
3.12, does what 3.12 does: gives None, True and False a reference count so large that
they can never reach zero. Imported first by memviz.app.
"""
from __future__ import annotations

import ctypes
import sys

IMMORTAL_EXTRA = 1 << 60  # far above anything the leaks can take away in the life of a process
_state = {"probed": False, "leaking": False, "immortalised": False}


def _probe(n: int = 64) -> dict[str, int]:
    """References lost by None, True and False over n emits and n C++-signal slot calls."""
    from PySide6.QtCore import QObject, Signal  # noqa: PLC0415

    class _Probe(QObject):
        ping = Signal()

    probe = _Probe()
    probe.ping.connect(lambda: None)
    probe.objectNameChanged.connect(lambda _name: None)
    singletons = {"None": None, "True": True, "False": False}
    before = {k: sys.getrefcount(v) for k, v in singletons.items()}
    for i in range(n):
        probe.ping.emit()
        probe.setObjectName(f"probe{i}")  # a C++ signal delivered to a Python slot
    return {k: before[k] - sys.getrefcount(v) for k, v in singletons.items()}


def _add_references(obj, count: int) -> None:
    # ob_refcnt is the first field of every CPython object (non-debug builds)
    ctypes.c_ssize_t.from_address(id(obj)).value += count


def install() -> bool:
    """Make None/True/False immortal if (and only if) the binding leaks them on CPython < 3.12."""
    if _state["immortalised"]:
        return True
    if sys.implementation.name != "cpython" or sys.version_info >= (3, 12):
        return False
    lost = _probe()
    _state["probed"] = True
    _state["leaking"] = any(v >= 32 for v in lost.values())
    for obj, name in ((None, "None"), (True, "True"), (False, "False")):
        _add_references(obj, max(lost[name], 0))  # give back what the probe itself took
    if not _state["leaking"]:
        return False
    for obj in (None, True, False):
        _add_references(obj, IMMORTAL_EXTRA)
    _state["immortalised"] = True
    return True


def status() -> dict:
    return dict(_state)
