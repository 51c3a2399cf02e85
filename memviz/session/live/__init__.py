"""Live refresh: the window follows its store while another process (the agent) writes.
Qt-free; the app's LiveController (memviz.app.controllers.live_controller) schedules and paces it.

1. poll (`Poll.changed`, off the GUI thread): has another connection committed? The store
   answers (memviz.store.changes.ChangeWatcher: `data_version()`).
2. read (`read_changes`, off the GUI thread): the store's `changes_since(token)` names the rows
   added and changed since the last look; only those rows are read (`store.arrays_of`). A change
   a delta cannot describe (VACUUM, schema change, physical delete, a large share) is a whole
   re-read instead.
3. apply (`apply_changes`, GUI thread): the rows are appended to or patched in the loaded arrays
   (memviz.session.buffers: no copy of the matrix per insert), the derived caches follow (codes,
   counts, the int8 query index through memviz.retrieval.quantized.carry), the state takes the
   new arrays (AppState.take_rows) and fires rows_changed(RowsDelta) for the panels.
   (`refresh(state)` does read and apply on the calling thread, for scripts and tests.)
4. a ranking on screen is brought up to date by scoring the touched rows alone when its preset
   allows it (`merged`, query.py), else run again whole.
"""
from .delta import FreshRows, RowsDelta, apply_changes, read_changes, refresh
from .poll import Poll
from .query import RERANK_S, merged

__all__ = ["FreshRows", "Poll", "RERANK_S", "RowsDelta", "apply_changes", "merged", "read_changes", "refresh"]
