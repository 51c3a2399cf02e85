"""2-D layouts of the memories (PCA, UMAP in a warm worker process, cache, placement) and the
layered reflection graph. No Qt here."""
from .cache import CachedLayout, LayoutCache
from .graph import GraphLayout, graph_layout
from .pca import pca_2d
from .place import place_by_neighbours
from .umap_worker import DEFAULT_PARAMS, UmapJob, UmapWorker, shared_worker, umap_params, warm_up

__all__ = [
    "pca_2d", "LayoutCache", "CachedLayout", "place_by_neighbours", "UmapJob", "UmapWorker", "shared_worker",
    "warm_up", "DEFAULT_PARAMS", "umap_params", "graph_layout", "GraphLayout",
]
