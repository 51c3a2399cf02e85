"""Editing memories safely while the agent may be writing. No Qt here.

    history = History(store)
    history.perform(Correct(mid, "new text", shown_rows=row_as_shown))
    history.undo(); history.redo()

Actions (commands.py) are command objects over the Store's audited, one-transaction writes;
History (history.py) is the undo/redo stack every panel shares; Pending (pending.py) keeps
edits the agent's lock held up;
retired() (retired.py) lists superseded and deleted memories with when and why;
applicable.py says which edit applies to which memories, and why not.
"""
from .commands import (
    Action,
    Confirm,
    Correct,
    FieldAction,
    Outcome,
    ProtectedError,
    Restore,
    SetImportance,
    SetTags,
    SoftDelete,
    Unprotect,
    embed_for_store,
    embed_text,
    shown,
    shown_id,
    shown_in_arrays,
    without_embedding,
)
from .history import History
from .pending import EditKept, Pending, PendingStep
from .retired import RetiredMemory, retired
from .verify import problems as consistency_problems

__all__ = [
    "Action", "FieldAction", "Outcome", "Correct", "Confirm", "Unprotect", "SoftDelete", "ProtectedError", "Restore", "SetImportance",
    "SetTags", "shown", "shown_id", "shown_in_arrays", "embed_for_store", "embed_text", "without_embedding", "History",
    "EditKept", "Pending", "PendingStep", "retired", "RetiredMemory", "consistency_problems",
]
