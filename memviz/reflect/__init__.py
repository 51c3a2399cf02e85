"""Reflection (GLOSSARY: reflection) and consolidation (GLOSSARY: recency / decay), previewed before anything is written.
No Qt here: a panel drives these plain objects and shows what they return.

How the window drives it, with no logic of its own:
- LLM settings dialog: `LLMSettings.from_public_dict(saved)` / `.public_dict()` (persist that;
  it never holds the key), `save_api_key(base_url, key)` (OS keyring), and the Test button
  runs `test_connection(settings)` on a worker -> ConnectionCheck(ok, message, models).
- Badge: `importance_status(store, agent)` -> accumulated vs threshold, `.crossed`.
- Reflect: `Reflector(store, LLMClient(settings), agent=..., retriever=engine_retriever(store,
  agent=..., params=current_params))`; on a worker `run = reflector.propose(task)` (a memviz.tasks.Task:
  progress per step); Cancel calls `task.cancel()` (memviz.tasks.Cancelled is raised, nothing
  written); LLMError/ReflectError messages are for the user. Show `run.proposals` (question,
  content as PLAIN text, `cited` evidence ids to select in other panels) and `run.problems`;
  the user's ticks call `p.accept()` / `p.reject()`; then
  `history.perform(actions.AcceptReflections(reflector, run))` writes them undoably.
- Consolidate: `plan = plan_consolidation(store, agent=..., arrays=window_arrays)`; list
  `plan.decay` (before -> after) and `plan.prune` with a checkbox bound to `item.selected`;
  `history.perform(actions.Consolidate(plan))`; Outcome.warning lists rows skipped because
  they changed since the preview.
"""
from .consolidation import (
    ConsolidationPlan,
    ConsolidationResult,
    DecayItem,
    PruneItem,
    apply_consolidation,
    ebbinghaus,
    plan_consolidation,
    undo_consolidation,
)
from .errors import BadOutput, LLMConnectionError, LLMError, LLMHTTPError, LLMRefusal, LLMTimeout, LLMTruncated, ReflectError, SettingsError
from .evidence import default_retriever, engine_retriever, fts_retriever, vector_retriever
from .llm import ConnectionCheck, LLMClient, test_connection
from .reflection import AcceptResult, Evidence, ImportanceStatus, Proposal, ReflectionConfig, ReflectionRun, Reflector, importance_status
from .settings import LLMSettings, delete_api_key, save_api_key

__all__ = [
    "ConsolidationPlan", "ConsolidationResult", "DecayItem", "PruneItem", "apply_consolidation",
    "ebbinghaus", "plan_consolidation", "undo_consolidation", "BadOutput", "LLMConnectionError",
    "LLMError", "LLMHTTPError", "LLMRefusal", "LLMTimeout", "LLMTruncated", "ReflectError", "SettingsError",
    "default_retriever", "engine_retriever", "fts_retriever", "vector_retriever", "ConnectionCheck", "LLMClient",
    "test_connection", "AcceptResult", "Evidence", "ImportanceStatus", "Proposal", "ReflectionConfig",
    "ReflectionRun", "Reflector", "importance_status", "LLMSettings", "delete_api_key", "save_api_key",
]
