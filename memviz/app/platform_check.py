"""Before Qt starts: can it open a window here? Qt's own answer to a missing X11 library or
no display is an abort with a message about plugins that names neither the library nor the
package to install; this says both, and memviz exits with it instead."""
from __future__ import annotations

import ctypes.util
import os
import sys

#: the libraries Qt's xcb platform plugin loads that a minimal X11 install may lack, by the
#: Debian/Ubuntu package that brings each
XCB_LIBRARIES = {
    "xcb-cursor": "libxcb-cursor0", "xcb-icccm": "libxcb-icccm4", "xcb-keysyms": "libxcb-keysyms1",
    "xcb-image": "libxcb-image0", "xcb-render-util": "libxcb-render-util0", "xcb-shape": "libxcb-shape0",
    "xcb-randr": "libxcb-randr0", "xcb-xkb": "libxcb-xkb1", "xkbcommon-x11": "libxkbcommon-x11-0",
}
OFFSCREEN_HINT = "QT_QPA_PLATFORM=offscreen runs memviz with no window, for scripts and tests."


def platform_problem(environ=os.environ, platform: str = sys.platform, find=ctypes.util.find_library) -> str | None:
    """What stops Qt opening a window on this Linux desktop, in words with the fix; None when
    nothing does (or Qt will not use X11: another platform, Wayland, a QT_QPA_PLATFORM choice)."""
    if not platform.startswith("linux"):
        return None
    chosen = environ.get("QT_QPA_PLATFORM", "")
    if chosen and not chosen.startswith("xcb"):
        return None
    if not chosen and environ.get("WAYLAND_DISPLAY"):
        return None
    if not environ.get("DISPLAY"):
        return ("memviz cannot open its window: there is no display (DISPLAY is not set). Run it in a "
                f"desktop session, or over ssh with X forwarding (ssh -X). {OFFSCREEN_HINT}")
    missing = [pkg for lib, pkg in XCB_LIBRARIES.items() if find(lib) is None]
    if not missing:
        return None
    return ("memviz cannot open its window: Qt's X11 support needs system libraries this machine "
            f"lacks. Install them with:\n  sudo apt-get install {' '.join(missing)}\nThose are the "
            f"Debian/Ubuntu names; other systems name the libxcb and libxkbcommon parts alike. {OFFSCREEN_HINT}")
