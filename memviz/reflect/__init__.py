"""Reflection (seed 000) and consolidation (seed 002), previewed before anything is written.
No Qt here: a panel drives these plain objects from a worker thread (progress callbacks,
CancelToken) and shows what they return."""
from .cancel import CancelToken
from .consolidation import (
    ConsolidationPlan, ConsolidationResult, DecayItem, PruneItem, apply_consolidation, ebbinghaus,
    plan_consolidation, undo_consolidation,
)
from .errors import (
    BadOutput, Cancelled, LLMConnectionError, LLMError, LLMHTTPError, LLMRefusal, LLMTimeout, LLMTruncated,
    ReflectError, SettingsError,
)
from .evidence import default_retriever, engine_retriever, fts_retriever, vector_retriever
from .llm import ConnectionCheck, LLMClient, test_connection
from .reflection import (
    AcceptResult, Evidence, ImportanceStatus, Proposal, ReflectionConfig, ReflectionRun, Reflector,
    importance_status,
)
from .settings import LLMSettings, delete_api_key, save_api_key

__all__ = [
    "CancelToken", "ConsolidationPlan", "ConsolidationResult", "DecayItem", "PruneItem", "apply_consolidation",
    "ebbinghaus", "plan_consolidation", "undo_consolidation", "BadOutput", "Cancelled", "LLMConnectionError",
    "LLMError", "LLMHTTPError", "LLMRefusal", "LLMTimeout", "LLMTruncated", "ReflectError", "SettingsError",
    "default_retriever", "engine_retriever", "fts_retriever", "vector_retriever", "ConnectionCheck", "LLMClient",
    "test_connection", "AcceptResult", "Evidence", "ImportanceStatus", "Proposal", "ReflectionConfig",
    "ReflectionRun", "Reflector", "importance_status", "LLMSettings", "delete_api_key", "save_api_key",
]
