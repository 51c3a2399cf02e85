"""What the map shows the moment a store opens: the cached UMAP when there is one (new
memories placed from their neighbours), else a PCA. Runs with the store load, off the GUI
thread."""
from __future__ import annotations

import numpy as np

from .cache import LayoutCache
from .pca import pca_2d
from .umap_worker import umap_params


def first_map(store, arrays) -> tuple[np.ndarray, str]:
    """(coords (n, 2) float32 aligned to the arrays' rows, NaN where not embedded; method label:
    "PCA", or the cached UMAP's note followed by "(cached)")."""
    coords = np.full((len(arrays), 2), np.nan, np.float32)
    if not arrays.has_embedding.any():
        return coords, ""
    try:
        cached = LayoutCache(store).lookup("umap", arrays, umap_params())
    except Exception:  # noqa: BLE001 - a bad cache is recomputed, never fatal
        cached = None
    if cached is not None:  # said as it was made ("UMAP of a random 30,000 of ..."), when that was recorded
        return np.asarray(cached.coords, np.float32), f"{cached.note or 'UMAP'} (cached)"
    return pca_2d(arrays.embedding, arrays.has_embedding), "PCA"
