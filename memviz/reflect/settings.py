"""LLM settings: which OpenAI-compatible server (OpenAI, Ollama, LM Studio, vLLM, ...) and models.

The API key comes from the environment or the OS keyring and lives only in memory:
`public_dict()` (what a settings dialog may persist, e.g. in QSettings) never holds it,
and nothing here writes it to a store or a file.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields
from urllib.parse import urlsplit

from .errors import SettingsError

ENV_BASE_URL = "MEMVIZ_LLM_BASE_URL"
ENV_MODEL = "MEMVIZ_LLM_MODEL"
ENV_EMBED_MODEL = "MEMVIZ_LLM_EMBED_MODEL"
ENV_API_KEY = "MEMVIZ_LLM_API_KEY"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
KEYRING_SERVICE = "memviz-llm"
STRUCTURED_MODES = ("auto", "json_schema", "json_object", "none")


@dataclass
class LLMSettings:
    base_url: str = DEFAULT_BASE_URL
    chat_model: str = DEFAULT_MODEL
    #: used to embed new text only when the store has no embeddings yet; otherwise the
    #: store's own model is used so new vectors are comparable with the old ones
    embedding_model: str | None = None
    timeout: float = 60.0          # seconds per request
    max_retries: int = 2           # extra attempts after a timeout, connection error, 429 or 5xx
    max_tokens: int = 1500
    temperature: float | None = None  # None: the server's default (some models accept no other)
    structured: str = "auto"       # auto: JSON schema, falling back to JSON mode, then plain text
    api_key: str | None = field(default=None, repr=False)  # in memory only

    def __post_init__(self):
        self.base_url = (self.base_url or DEFAULT_BASE_URL).strip().rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise SettingsError(f"The LLM base URL must start with http:// or https:// (got {self.base_url!r}).")
        if not (self.chat_model or "").strip():
            raise SettingsError("No chat model is set.")
        if self.structured not in STRUCTURED_MODES:
            raise SettingsError(f"structured output must be one of {', '.join(STRUCTURED_MODES)}")
        if self.timeout <= 0 or self.max_retries < 0 or self.max_tokens < 16:
            raise SettingsError("timeout must be > 0, retries >= 0 and max tokens >= 16")

    @classmethod
    def from_env(cls, env=None, **overrides) -> LLMSettings:
        """Settings from MEMVIZ_LLM_* (or OPENAI_BASE_URL); explicit overrides (not None) win."""
        env = os.environ if env is None else env
        values = {
            "base_url": env.get(ENV_BASE_URL) or env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL,
            "chat_model": env.get(ENV_MODEL) or DEFAULT_MODEL,
            "embedding_model": env.get(ENV_EMBED_MODEL) or None,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def public_dict(self) -> dict:
        """Everything but the key: safe to persist."""
        d = asdict(self)
        d.pop("api_key")
        return d

    @classmethod
    def from_public_dict(cls, d: dict) -> LLMSettings:
        names = {f.name for f in fields(cls)} - {"api_key"}
        return cls(**{k: v for k, v in d.items() if k in names})

    @property
    def is_local(self) -> bool:
        host = urlsplit(self.base_url).hostname or ""
        return host in ("localhost", "127.0.0.1", "::1") or host.endswith(".localhost")

    def resolve_api_key(self, env=None) -> tuple[str | None, str]:
        """(key, where it came from): explicit, the environment, or the OS keyring."""
        if self.api_key:
            return self.api_key, "given"
        env = os.environ if env is None else env
        for name in (ENV_API_KEY, "OPENAI_API_KEY"):
            if env.get(name):
                return env[name], f"the environment ({name})"
        key = keyring_key(self.base_url)
        if key:
            return key, "the OS keyring"
        return None, "nowhere"


def keyring_key(base_url: str) -> str | None:
    """The key saved for this base URL, or None (also when there is no usable keyring)."""
    try:
        import keyring
        from keyring.errors import KeyringError
    except ImportError:
        return None
    try:
        return keyring.get_password(KEYRING_SERVICE, base_url.rstrip("/"))
    except (KeyringError, RuntimeError, OSError):
        return None


def save_api_key(base_url: str, key: str) -> None:
    """Save a key in the OS keyring (never in a file memviz writes)."""
    import keyring
    from keyring.errors import KeyringError

    if not key:
        raise SettingsError("The API key is empty.")
    try:
        keyring.set_password(KEYRING_SERVICE, base_url.rstrip("/"), key)
    except (KeyringError, RuntimeError, OSError) as e:
        raise SettingsError(f"No OS keyring is available to save the key ({e}). "
                            f"Set {ENV_API_KEY} in the environment instead.") from None


def delete_api_key(base_url: str) -> bool:
    """Forget the saved key; False when there was none."""
    import keyring
    from keyring.errors import KeyringError, PasswordDeleteError

    try:
        keyring.delete_password(KEYRING_SERVICE, base_url.rstrip("/"))
        return True
    except PasswordDeleteError:
        return False
    except (KeyringError, RuntimeError, OSError) as e:
        raise SettingsError(f"The OS keyring could not be used ({e}).") from None
