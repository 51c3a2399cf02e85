"""2-D layouts of the memories (PCA, UMAP in a warm worker process, cache, placement) and the
layered reflection graph. No Qt here.

The graph module brings scipy (slow to import), so it is imported when first asked
for: opening a store and drawing its map does not pay for it."""
from .cache import CachedLayout, LayoutCache
from .first_map import first_map
from .pca import pca_2d
from .place import place_by_neighbours
from .umap_worker import DEFAULT_PARAMS, UmapJob, UmapWorker, shared_worker, umap_params, warm_up

__all__ = [
    "pca_2d", "first_map", "LayoutCache", "CachedLayout", "place_by_neighbours", "UmapJob", "UmapWorker", "shared_worker",
    "warm_up", "DEFAULT_PARAMS", "umap_params", "graph_layout", "GraphLayout",
]


def __getattr__(name: str):
    if name in ("graph_layout", "GraphLayout"):
        from . import graph
        return getattr(graph, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
