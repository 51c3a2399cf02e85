"""The Qt desktop app (the only package that imports PySide6 / pyqtgraph).

PySide6 is pinned below 6.12 in pyproject.toml: 6.12.0 on CPython 3.11 takes a reference
from None/True on every signal and aborts the interpreter within minutes of pyqtgraph use
(tests/test_app_scatter.py checks the installed binding)."""
