"""One BLAS thread for the numeric passes that run beside the GUI (cosine scan, PCA).

These passes are bound by memory bandwidth; a multi-threaded BLAS stalls badly when the
cores are busy (the window's other work, the UMAP worker, the agent) and is not
bit-reproducible. The controller is built once: inspecting the loaded libraries costs
milliseconds, which a slider move cannot afford.
"""
from __future__ import annotations

_controller = None


def one_blas_thread():
    """A context manager limiting BLAS to one thread for its block."""
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController
        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")
