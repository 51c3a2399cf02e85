"""The LLM client and settings against the fake server over real HTTP: structured output and
its fallbacks, every kind of bad reply, bounded retries, timeouts, cancel, test connection."""
import socket
import threading
import time

import keyring
import pytest
from fake_openai import FakeOpenAI, reply_error, reply_json, reply_raw, reply_refusal, reply_text, slow
from keyring.backend import KeyringBackend

from memviz.reflect import (
    BadOutput,
    LLMClient,
    LLMConnectionError,
    LLMHTTPError,
    LLMRefusal,
    LLMSettings,
    LLMTimeout,
    LLMTruncated,
    SettingsError,
    save_api_key,
    test_connection,
)
from memviz.reflect.prompts import QUESTIONS_SCHEMA
from memviz.tasks import Cancelled, Task

MSG = [{"role": "user", "content": "questions?"}]


def client(server, **kw):
    backoff = kw.pop("retry_backoff", 0.01)
    kw.setdefault("api_key", "test-key")
    kw.setdefault("max_retries", 2)
    kw.setdefault("timeout", 5)
    return LLMClient(LLMSettings(base_url=server.base_url, chat_model="fake-chat", **kw), retry_backoff=backoff)


def ask(c, task=None):
    return c.chat_json(MSG, QUESTIONS_SCHEMA, "questions", task=task)


def test_structured_request_and_key(fake_openai):
    fake_openai.push(reply_json({"questions": ["a?"]}))
    assert ask(client(fake_openai, max_tokens=200)) == {"questions": ["a?"]}
    req = fake_openai.requests[-1]
    assert req["authorization"] == "Bearer test-key"
    body = req["json"]
    assert body["model"] == "fake-chat" and body["max_tokens"] == 200
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == QUESTIONS_SCHEMA


def test_falls_back_when_the_server_has_no_json_schema():
    with FakeOpenAI(reject_formats={"json_schema", "json_object"}) as server:
        server.push(reply_text('Here: {"questions": ["a?"]}'), reply_json({"questions": ["b?"]}))
        c = client(server)
        assert ask(c) == {"questions": ["a?"]}
        kinds = [(r.get("response_format") or {}).get("type") for r in server.chat_requests()]
        assert kinds == ["json_schema", "json_object", None]
        assert ask(c) == {"questions": ["b?"]}  # the working mode is remembered
        assert len(server.chat_requests()) == 4


def test_models_that_want_max_completion_tokens(fake_openai):
    fake_openai.push(reply_error(400, "Unsupported parameter: 'max_tokens' is not supported with this model. "
                                      "Use 'max_completion_tokens' instead."), reply_json({"questions": ["a?"]}))
    assert ask(client(fake_openai, max_tokens=300)) == {"questions": ["a?"]}
    first, second = fake_openai.chat_requests()
    assert first["max_tokens"] == 300 and "max_tokens" not in second and second["max_completion_tokens"] == 300
    assert second["response_format"]["type"] == "json_schema"  # the format was not given up for it


@pytest.mark.parametrize("reply, error, match", [
    (reply_text('{"questions": ["a', finish_reason="length"), LLMTruncated, "cut off by the token limit"),
    (reply_refusal("I can't help with that."), LLMRefusal, "refused: I can't help"),
    (reply_text("", finish_reason="content_filter"), LLMRefusal, "content filter"),
])
def test_unusable_replies_fail_at_once(fake_openai, reply, error, match):
    fake_openai.push(reply, reply_json({"questions": ["never asked"]}))
    with pytest.raises(error, match=match):
        ask(client(fake_openai))
    assert len(fake_openai.chat_requests()) == 1


@pytest.mark.parametrize("bad, match", [
    (reply_text(""), "empty"),
    (reply_text("I'm sorry, I cannot do that."), "declined"),
    (reply_text("The questions are: who, what, why."), "holds no JSON"),
    (reply_raw(b"<html>proxy error</html>"), "not an OpenAI-compatible"),
    (reply_raw(b'{"unexpected": true}'), "not answer with an OpenAI-compatible chat completion"),
])
def test_garbled_replies_are_asked_once_more_then_reported(fake_openai, bad, match):
    fake_openai.push(bad, bad)
    with pytest.raises(BadOutput, match=match):
        ask(client(fake_openai))
    assert len(fake_openai.chat_requests()) == 2
    fake_openai.push(bad, reply_json({"questions": ["ok?"]}))
    assert ask(client(fake_openai)) == {"questions": ["ok?"]}


def test_rate_limit_is_retried_with_retry_after(fake_openai):
    fake_openai.push(reply_error(429, "slow down", headers={"Retry-After": "0.2"}), reply_json({"questions": ["a?"]}))
    t = time.monotonic()
    assert ask(client(fake_openai)) == {"questions": ["a?"]}
    assert time.monotonic() - t >= 0.2
    assert len(fake_openai.chat_requests()) == 2


def test_retries_are_bounded(fake_openai):
    fake_openai.push(*[reply_error(503, "overloaded")] * 5)
    with pytest.raises(LLMHTTPError, match=r"server error \(503\): overloaded \(tried 3 times\)") as e:
        ask(client(fake_openai, max_retries=2))
    assert e.value.status == 503
    assert len(fake_openai.chat_requests()) == 3


@pytest.mark.parametrize("status, match", [(401, "refused the API key"), (404, "does not exist"),
                                           (400, "rejected the request")])
def test_client_errors_are_not_retried(fake_openai, status, match):
    fake_openai.push(*[reply_error(status, "nope")] * 4)
    with pytest.raises(LLMHTTPError, match=match):
        ask(client(fake_openai, structured="json_schema"))
    assert len(fake_openai.chat_requests()) == 1


def test_timeout_is_retried_then_reported(fake_openai):
    fake_openai.push(slow(30), slow(30))
    t = time.monotonic()
    with pytest.raises(LLMTimeout, match=r"did not answer within 0.3 s \(tried 2 times\)"):
        ask(client(fake_openai, timeout=0.3, max_retries=1))
    assert time.monotonic() - t < 10  # each try gave up after its 0.3 s: the 30 s replies were not waited for


def test_unreachable_server():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    c = LLMClient(LLMSettings(base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, timeout=2), retry_backoff=0.01)
    with pytest.raises(LLMConnectionError, match=f"Could not reach http://127.0.0.1:{port}/v1"):
        ask(c)


class WatchedTask(Task):
    """A Task that tells when its holder starts waiting on it (a retry's backoff)."""

    def __init__(self):
        super().__init__()
        self.waiting = threading.Event()

    def wait(self, seconds):
        self.waiting.set()
        super().wait(seconds)


def cancel_when(happened, task, within=30.0):
    """Cancel `task` from another thread as soon as `happened()` is true. The list returned gets
    the moment of that cancel; it stays empty if the event did not come within `within` s (the
    task is cancelled then all the same, so the test ends)."""
    at = []

    def run():
        deadline = time.monotonic() + within
        while not happened() and time.monotonic() < deadline:
            time.sleep(0.005)
        if happened():
            at.append(time.monotonic())
        task.cancel()
    threading.Thread(target=run, daemon=True).start()
    return at


def test_cancel_stops_waiting_at_once(fake_openai):
    fake_openai.push(slow(30))
    cancel = Task()
    at = cancel_when(lambda: len(fake_openai.chat_requests()) == 1, cancel)  # the request is in, its reply 30 s away
    with pytest.raises(Cancelled):
        ask(client(fake_openai, timeout=60), cancel)
    assert at, "the request never reached the server"
    assert time.monotonic() - at[0] < 10  # ended by the cancel, not by the 30 s reply


def test_cancel_during_backoff(fake_openai):
    fake_openai.push(reply_error(500), reply_json({"questions": ["never"]}))
    cancel = WatchedTask()
    at = cancel_when(cancel.waiting.is_set, cancel)  # in the 30 s backoff after the 500
    with pytest.raises(Cancelled):
        ask(client(fake_openai, retry_backoff=30), cancel)
    assert at, "the client never backed off"
    assert time.monotonic() - at[0] < 10  # ended by the cancel, not by the backoff
    assert len(fake_openai.chat_requests()) == 1


# ----------------------------------------------------------------------- settings
def test_settings_from_env_and_key_never_persisted():
    env = {"MEMVIZ_LLM_BASE_URL": "http://localhost:11434/v1/", "MEMVIZ_LLM_MODEL": "llama3.1",
           "MEMVIZ_LLM_API_KEY": "sk-secret"}
    s = LLMSettings.from_env(env, timeout=9)
    assert (s.base_url, s.chat_model, s.timeout, s.is_local) == ("http://localhost:11434/v1", "llama3.1", 9, True)
    assert s.resolve_api_key(env) == ("sk-secret", "the environment (MEMVIZ_LLM_API_KEY)")
    d = s.public_dict()
    assert "api_key" not in d and "sk-secret" not in repr(d) and "sk-secret" not in repr(s)
    assert LLMSettings.from_public_dict({**d, "junk": 1}) == s
    with pytest.raises(SettingsError, match="http"):
        LLMSettings(base_url="localhost:11434")
    with pytest.raises(SettingsError, match="one of"):
        LLMSettings(structured="xml")


def test_remote_server_without_key_is_refused(monkeypatch):
    for k in ("MEMVIZ_LLM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(SettingsError, match="No API key for https://api.openai.com/v1"):
        LLMClient(LLMSettings())
    chk = test_connection(LLMSettings())
    assert not chk.ok and "No API key" in chk.message


class MemoryKeyring(KeyringBackend):
    """A keyring backend in memory (the test machine has no OS keyring)."""
    priority = 1

    def __init__(self):
        self.saved = {}

    def get_password(self, service, username):
        return self.saved.get((service, username))

    def set_password(self, service, username, password):
        self.saved[(service, username)] = password

    def delete_password(self, service, username):
        self.saved.pop((service, username))


def test_key_from_the_keyring(monkeypatch):
    for k in ("MEMVIZ_LLM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(k, raising=False)
    previous = keyring.get_keyring()
    with FakeOpenAI(api_key="from-keyring") as server:
        try:
            keyring.set_keyring(MemoryKeyring())
            save_api_key(server.base_url + "/", "from-keyring")
            server.push(reply_text("OK"))
            chk = test_connection(LLMSettings(base_url=server.base_url, chat_model="fake-chat"))
            assert chk.ok, chk.message
            assert "key from the OS keyring" in chk.message
            assert server.requests[-1]["authorization"] == "Bearer from-keyring"
        finally:
            keyring.set_keyring(previous)


def test_no_keyring_gives_a_clear_message():
    from keyring.backends.fail import Keyring as Fail

    previous = keyring.get_keyring()
    try:
        keyring.set_keyring(Fail())
        with pytest.raises(SettingsError, match="No OS keyring .* MEMVIZ_LLM_API_KEY"):
            save_api_key("http://x/v1", "k")
        assert LLMSettings(base_url="http://x/v1").resolve_api_key({}) == (None, "nowhere")
    finally:
        keyring.set_keyring(previous)


def test_test_connection_answers(fake_openai):
    s = LLMSettings(base_url=fake_openai.base_url, chat_model="fake-chat", api_key="k")
    fake_openai.push(reply_text("OK"))
    chk = test_connection(s)
    assert chk.ok and "the model 'fake-chat' answers" in chk.message and chk.models == ["fake-chat"]
    chk = test_connection(LLMSettings(base_url=fake_openai.base_url, chat_model="gpt-9", api_key="k"))
    assert not chk.ok and "does not list the model 'gpt-9'. It lists: fake-chat" in chk.message
    fake_openai.push(reply_error(500, "model crashed"))
    chk = test_connection(s)
    assert not chk.ok and "did not answer" in chk.message and "model crashed" in chk.message
    with FakeOpenAI(api_key="right") as guarded:
        chk = test_connection(LLMSettings(base_url=guarded.base_url, chat_model="fake-chat", api_key="wrong"))
        assert not chk.ok and "refused the API key (401)" in chk.message
