#!/usr/bin/env python
"""Render memviz's icon: `python scripts/make_icon.py`.

The drawing is memviz/icons/memviz.svg (edited by hand). This writes the 256 px PNG beside it
(the window's icon where Qt has no SVG reader, and the desktop entry's bitmap) and the copies
in assets/ that the README and the manual show.
"""
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication, QImage, QPainter  # noqa: E402
from PySide6.QtSvg import QSvgRenderer  # noqa: E402

from memviz.desktop import ICON_PNG, ICON_SVG  # noqa: E402

SIZE = 256


def render(svg, size: int) -> QImage:
    img = QImage(size, size, QImage.Format_ARGB32)
    img.fill(Qt.transparent)
    p = QPainter(img)
    p.setRenderHint(QPainter.Antialiasing)
    QSvgRenderer(str(svg)).render(p)
    p.end()
    return img


def main() -> int:
    app = QGuiApplication.instance() or QGuiApplication([])  # noqa: F841 - QPainter needs it
    if not render(ICON_SVG, SIZE).save(str(ICON_PNG)):
        print(f"could not write {ICON_PNG}", file=sys.stderr)
        return 1
    for src, name in ((ICON_SVG, "icon.svg"), (ICON_PNG, "icon.png")):
        shutil.copyfile(src, os.path.join(ROOT, "assets", name))
    print(f"wrote {ICON_PNG} and assets/icon.svg, assets/icon.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
