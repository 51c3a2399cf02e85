"""A small OpenAI-compatible server for tests: real HTTP on 127.0.0.1, scripted replies.

Any test gets a started server from the `fake_openai` fixture (tests/conftest.py); the
reply helpers are imported from here (pytest puts tests/ on sys.path):

    from fake_openai import reply_json, reply_error, slow

    def test_x(fake_openai):
        fake_openai.push(reply_error(429), reply_json({"questions": ["q?"]}))
        client = openai.OpenAI(base_url=fake_openai.base_url, api_key="test")

Each POST /v1/chat/completions takes the next scripted reply; an empty queue answers 500
"no scripted reply left", so a test that asks more than it scripted fails loudly.
GET /v1/models lists `models`. POST /v1/embeddings takes the next reply from
`embedding_queue` if any, else answers with REAL vectors from the local WordLlama model
(loaded only when asked). Every request is recorded in `.requests`.
"""
from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int = 200
    body: object = None            # dict -> JSON; bytes -> sent as is (malformed replies)
    headers: dict = field(default_factory=dict)
    delay: float = 0.0             # seconds before answering (timeouts, cancel)
    fn: object = None              # callable(request_json) -> Reply, for replies that depend on the prompt


def completion(content, *, finish_reason="stop", refusal=None, model="fake-chat") -> dict:
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "finish_reason": finish_reason,
                     "message": {"role": "assistant", "content": content, "refusal": refusal}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def reply_text(content, *, finish_reason="stop", delay=0.0) -> Reply:
    return Reply(body=completion(content, finish_reason=finish_reason), delay=delay)


def reply_json(obj, **kw) -> Reply:
    return reply_text(json.dumps(obj), **kw)


def reply_refusal(text="I'm sorry, I can't help with that.") -> Reply:
    return Reply(body=completion(None, refusal=text))


def reply_error(status, message=None, *, headers=None) -> Reply:
    body = {"error": {"message": message or f"fake error {status}", "type": "fake_error", "code": status}}
    return Reply(status=status, body=body, headers=headers or {})


def reply_raw(data: bytes, *, status=200, content_type="application/json") -> Reply:
    return Reply(status=status, body=bytes(data), headers={"Content-Type": content_type})


def reply_fn(fn) -> Reply:
    return Reply(fn=fn)


def slow(seconds: float, reply: Reply | None = None) -> Reply:
    reply = reply or reply_text("{}")
    reply.delay = seconds
    return reply


class FakeOpenAI:
    def __init__(self, *, models=("fake-chat",), reject_formats=(), api_key=None):
        self.models = list(models)
        #: response_format types answered with 400 (a server without structured output)
        self.reject_formats = set(reject_formats)
        self.api_key = api_key  # when set, other keys get 401
        self.queue: deque[Reply] = deque()
        #: scripted /v1/embeddings replies; when empty, real local vectors are served
        self.embedding_queue: deque[Reply] = deque()
        self.requests: list[dict] = []
        self._stop = threading.Event()
        self._server = None
        self._thread = None

    # ------------------------------------------------------------ control
    def push(self, *replies: Reply) -> FakeOpenAI:
        self.queue.extend(replies)
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def chat_requests(self) -> list[dict]:
        return [r["json"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def _refused(self) -> bool:
                if fake.api_key and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
                    self._send(reply_error(401, "Incorrect API key provided"))
                    return True
                return False

            def do_GET(self):
                fake._record(self, None)
                if self._refused():
                    return
                if self.path.rstrip("/").endswith("/models"):
                    data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in fake.models]
                    return self._send(Reply(body={"object": "list", "data": data}))
                self._send(reply_error(404, f"no route {self.path}"))

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    return self._send(reply_error(400, "request body is not JSON"))
                fake._record(self, body)
                if self._refused():
                    return
                if self.path.endswith("/chat/completions"):
                    fmt = (body.get("response_format") or {}).get("type")
                    if fmt in fake.reject_formats:
                        return self._send(reply_error(400, f"response_format type {fmt} is not supported"))
                    reply = fake.queue.popleft() if fake.queue else reply_error(500, "fake server: no scripted reply left")
                    if reply.fn is not None:
                        reply = reply.fn(body)
                    return self._send(reply)
                if self.path.endswith("/embeddings"):
                    reply = fake.embedding_queue.popleft() if fake.embedding_queue else _embeddings(body)
                    return self._send(reply.fn(body) if reply.fn is not None else reply)
                self._send(reply_error(404, f"no route {self.path}"))

            def _send(self, reply: Reply):
                if reply.delay and fake._stop.wait(reply.delay):
                    return  # server stopping: drop the connection
                data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    headers = {"Content-Type": "application/json", **reply.headers}
                    for k, v in headers.items():
                        self.send_header(k, str(v))
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout or cancel)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True, name="fake-openai")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(5)

    def _record(self, handler, body):
        self.requests.append({"method": handler.command, "path": handler.path, "json": body,
                              "authorization": handler.headers.get("Authorization")})

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def _embeddings(body) -> Reply:
    from memviz.embed import default_embedder

    texts = body.get("input")
    texts = [texts] if isinstance(texts, str) else list(texts or [])
    vecs = default_embedder().embed(texts) if texts else []
    data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]} for i, v in enumerate(vecs)]
    return Reply(body={"object": "list", "data": data, "model": body.get("model"),
                       "usage": {"prompt_tokens": 1, "total_tokens": 1}})
