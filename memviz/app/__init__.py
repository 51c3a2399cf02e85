"""The Qt desktop app (the only package that imports PySide6 / pyqtgraph)."""
from .qtfix import install as _install_qtfix

_install_qtfix()
