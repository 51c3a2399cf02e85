"""A chat client for any OpenAI-compatible server, built for untrusted replies.

- Retries are ours (the `openai` client's own are off) and bounded: timeouts, connection
  errors, 408/409/429 and 5xx are retried `max_retries` times with backoff (Retry-After
  honoured, capped); other HTTP errors fail at once with a message saying what to fix.
- Structured output: a JSON schema is asked for; a server that rejects it (400/422) is
  asked again in JSON mode, then with plain text, and the working mode is remembered.
- Replies cut off by the token limit, refusals, empty or non-JSON replies raise LLMError
  subclasses; an empty or non-JSON reply is asked for once more (`format_retries`).
- Cancel: the request runs on a helper thread and the caller stops waiting as soon as
  its Task is cancelled (the abandoned request ends at its own timeout).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..background import in_thread, wait_for
from ..tasks import Cancelled, Task
from .errors import BadOutput, LLMConnectionError, LLMError, LLMHTTPError, LLMRefusal, LLMTimeout, LLMTruncated, SettingsError
from .settings import ENV_API_KEY, LLMSettings
from .validate import extract_json, shorten

_RETRY_STATUS = {408, 409, 429}
_MAX_WAIT = 20.0
_FALLBACK = {"json_schema": "json_object", "json_object": "none"}


def _status_message(status: int, detail: str, settings: LLMSettings) -> str:
    where = settings.base_url
    if status == 401:
        return (f"{where} refused the API key (401). Check {ENV_API_KEY} or the key saved in the keyring. "
                f"Server said: {detail}")
    if status == 403:
        return f"{where} denied access (403): {detail}"
    if status == 404:
        return (f"{where} answered 404: the model {settings.chat_model!r} or the endpoint does not exist "
                f"(is the base URL right? it usually ends in /v1). Server said: {detail}")
    if status == 429:
        return f"{where} is rate-limiting requests (429): {detail}"
    if status >= 500:
        return f"{where} failed with a server error ({status}): {detail}"
    return f"{where} rejected the request ({status}): {detail}"


@dataclass
class ChatReply:
    content: str | None
    finish_reason: str | None
    refusal: str | None
    mode: str  # the structured-output mode that produced it


class LLMClient:
    def __init__(self, settings: LLMSettings, *, retry_backoff: float = 1.0, format_retries: int = 1):
        try:
            import openai
        except ImportError as e:  # pragma: no cover - a broken install
            raise SettingsError(f"LLM calls need the `openai` package ({e})") from None
        self.settings = settings
        self.retry_backoff = retry_backoff
        self.format_retries = format_retries
        key, self.key_source = settings.resolve_api_key()
        if not key and not settings.is_local:
            raise SettingsError(f"No API key for {settings.base_url}: set {ENV_API_KEY} (or OPENAI_API_KEY) "
                                "or save a key in the OS keyring from the LLM settings.")
        # Local servers (Ollama, LM Studio) accept any key; the client insists on one.
        self._client = openai.OpenAI(base_url=settings.base_url, api_key=key or "not-needed",
                                     timeout=settings.timeout, max_retries=0)
        self.mode = "json_schema" if settings.structured == "auto" else settings.structured
        self.calls = 0  # HTTP requests sent (tests and the status line read it)
        self._tokens_param = "max_tokens"  # most servers; newer OpenAI models want max_completion_tokens

    # ------------------------------------------------------------------ public
    def chat_json(self, messages: list[dict], schema: dict, name: str, *, task: Task | None = None):
        """The JSON value of the reply (shape not yet checked: see validate.py)."""
        last: LLMError | None = None
        for _ in range(self.format_retries + 1):
            try:
                return self._json_of(self._chat_structured(messages, schema, name, task))
            except BadOutput as e:
                last = e  # an empty or garbled reply may be a fluke: ask once more
        raise last

    def list_models(self, *, task: Task | None = None) -> list[str]:
        page = self._with_retries(lambda: self._client.models.list(), task)
        return sorted(str(getattr(m, "id", m)) for m in (getattr(page, "data", None) or []))

    def ping(self, *, task: Task | None = None) -> ChatReply:
        """A one-token chat request: proves the model answers."""
        return self._chat([{"role": "user", "content": "Reply with OK."}], "none", task, max_tokens=5)

    # ------------------------------------------------------------------ internals
    def _chat_structured(self, messages, schema, name, task) -> ChatReply:
        while True:
            try:
                return self._chat(messages, self.mode, task, schema=schema, name=name)
            except LLMHTTPError as e:
                # newer OpenAI models take max_completion_tokens instead of max_tokens
                if e.status == 400 and "max_completion_tokens" in str(e) and self._tokens_param == "max_tokens":
                    self._tokens_param = "max_completion_tokens"
                    continue
                # 400/422 on a structured request: most likely the format is unsupported here
                if e.status in (400, 422) and self.mode in _FALLBACK and self.settings.structured == "auto":
                    self.mode = _FALLBACK[self.mode]
                    continue
                raise

    def _chat(self, messages, mode, task, *, schema=None, name="reply", max_tokens=None) -> ChatReply:
        s = self.settings
        kwargs = {"model": s.chat_model, "messages": messages, self._tokens_param: max_tokens or s.max_tokens}
        if s.temperature is not None:
            kwargs["temperature"] = s.temperature
        if mode == "json_schema" and schema is not None:
            kwargs["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": name, "schema": schema, "strict": True}}
        elif mode == "json_object" and schema is not None:
            kwargs["response_format"] = {"type": "json_object"}
        resp = self._with_retries(lambda: self._client.chat.completions.create(**kwargs), task)
        try:
            choice = resp.choices[0]
            msg = choice.message
            content = getattr(msg, "content", None)
            return ChatReply(content if isinstance(content, str) else None, getattr(choice, "finish_reason", None),
                             getattr(msg, "refusal", None), mode)
        except (AttributeError, IndexError, TypeError, KeyError):
            raise BadOutput(f"{s.base_url} did not answer with an OpenAI-compatible chat completion "
                            f"({shorten(repr(resp), 160)}).") from None

    def _json_of(self, reply: ChatReply):
        if reply.refusal:
            raise LLMRefusal(f"The model refused: {shorten(reply.refusal, 300)}")
        if reply.finish_reason == "content_filter":
            raise LLMRefusal("The server's content filter stopped the reply.")
        if reply.finish_reason == "length":
            raise LLMTruncated(f"The model's reply was cut off by the token limit ({self.settings.max_tokens} tokens) "
                               "before it was complete. Raise the limit in the LLM settings, or ask for fewer items.")
        return extract_json(reply.content)

    def _with_retries(self, call, task):
        import openai

        attempts = self.settings.max_retries + 1
        last: LLMError | None = None
        for attempt in range(attempts):
            if task is not None:
                task.check()
            wait = self.retry_backoff * (2 ** attempt)
            try:
                self.calls += 1
                return _cancellable(call, task)
            except Cancelled:
                raise
            except openai.APITimeoutError:
                last = LLMTimeout(f"{self.settings.base_url} did not answer within {self.settings.timeout:g} s.")
            except openai.APIConnectionError as e:
                last = LLMConnectionError(f"Could not reach {self.settings.base_url}: {e.__cause__ or e}")
            except openai.APIStatusError as e:
                status = e.status_code
                detail = _error_detail(e)
                last = LLMHTTPError(_status_message(status, detail, self.settings), status)
                if status not in _RETRY_STATUS and status < 500:
                    raise last from None
                retry_after = _retry_after(e)
                if retry_after is not None:
                    wait = retry_after
            except (ValueError, TypeError) as e:  # a 200 whose body is not JSON / not the expected shape
                raise BadOutput(f"{self.settings.base_url} sent a reply that is not an OpenAI-compatible "
                                f"JSON response ({shorten(str(e), 120)}).") from None
            if attempt + 1 < attempts:
                wait = min(wait, _MAX_WAIT)
                (task or Task()).wait(wait)  # a cancel ends the wait
        msg = str(last)
        if attempts > 1:
            msg = msg.rstrip(".") + f" (tried {attempts} times)."
        raise type(last)(msg, last.status) if isinstance(last, LLMHTTPError) else type(last)(msg)


def _cancellable(call, task):
    """Run `call` on a helper thread; stop waiting (raise Cancelled) as soon as `task` is cancelled."""
    if task is None:
        return call()
    return wait_for(in_thread(call, "memviz-llm-request"), task)


def _error_detail(e) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return shorten(err["message"], 300)
        if isinstance(err, str):
            return shorten(err, 300)
    return shorten(getattr(e, "message", None) or str(e), 300)


def _retry_after(e) -> float | None:
    try:
        value = e.response.headers.get("retry-after")
        return max(0.0, float(value)) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


@dataclass
class ConnectionCheck:
    ok: bool
    message: str
    models: list[str]


def test_connection(settings: LLMSettings, *, task: Task | None = None) -> ConnectionCheck:
    """A clear answer to "does this server work with this model?" (for the Test button)."""
    key, source = settings.resolve_api_key()
    try:  # one attempt: the user is waiting for an answer, not for retries
        client = LLMClient(replace(settings, max_retries=0, api_key=key))
    except SettingsError as e:
        return ConnectionCheck(False, str(e), [])
    models: list[str] = []
    try:
        models = client.list_models(task=task)
    except LLMHTTPError as e:
        if e.status not in (404, 405, 501):  # servers without /models: fall through to a chat ping
            return ConnectionCheck(False, str(e), [])
    except LLMError as e:
        return ConnectionCheck(False, str(e), [])
    if models and settings.chat_model not in models:
        shown = ", ".join(models[:15]) + (" …" if len(models) > 15 else "")
        return ConnectionCheck(False, f"Connected to {settings.base_url}, but it does not list the model "
                                      f"{settings.chat_model!r}. It lists: {shown}.", models)
    try:
        client.ping(task=task)
    except LLMError as e:
        return ConnectionCheck(False, f"Connected to {settings.base_url}, but the model "
                                      f"{settings.chat_model!r} did not answer: {e}", models)
    how = f" (key from {source})" if key else ""
    return ConnectionCheck(True, f"Connected to {settings.base_url}{how}: the model {settings.chat_model!r} answers.",
                           models)


test_connection.__test__ = False  # not a pytest test despite its name
