"""Errors of reflection and consolidation; every message is meant for the user (nothing is
written before the user accepts). A cancel raises the one `memviz.tasks.Cancelled`, whose
message says that nothing was written."""
from __future__ import annotations


class ReflectError(Exception):
    """Base: the message is shown to the user as is."""


class SettingsError(ReflectError):
    """The LLM settings cannot work (no key, no keyring, bad URL)."""


class LLMError(ReflectError):
    """The LLM call failed or its reply cannot be used."""


class LLMConnectionError(LLMError):
    """The server could not be reached."""


class LLMTimeout(LLMError):
    """The server did not answer in time."""


class LLMHTTPError(LLMError):
    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class LLMTruncated(LLMError):
    """The reply was cut off by the token limit (finish_reason 'length')."""


class LLMRefusal(LLMError):
    """The model refused, or a content filter stopped the reply."""


class BadOutput(LLMError):
    """The reply is empty, not JSON, or not of the asked shape."""
