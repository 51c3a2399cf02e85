"""Embedders: the shipped local model for real, and an OpenAI-compatible endpoint over real HTTP."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from memviz.embed import (LOCAL_DIM, LOCAL_MODEL, EmbedderUnavailable, EmbeddingError, LocalEmbedder,
                          OpenAIEmbedder, default_embedder, embedder_for)


def test_local_model_loads_offline_and_embeds_meaningfully(monkeypatch):
    # Any attempt to reach the network would fail loudly.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    e = default_embedder()
    assert e.model == LOCAL_MODEL and e.dim == LOCAL_DIM == 256
    v = e.embed(["The cat sat on the mat.", "A kitten rested on the rug.", "Quarterly tax filing deadline"])
    assert v.shape == (3, 256) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2]
    assert np.allclose(e.embed_one("The cat sat on the mat."), v[0], atol=1e-6)
    assert e.embed([]).shape == (0, 256)


def test_embedder_for_store_models():
    assert isinstance(embedder_for(LOCAL_MODEL, 256), LocalEmbedder)
    with pytest.raises(EmbedderUnavailable, match="512-d"):
        embedder_for(LOCAL_MODEL, 512)
    with pytest.raises(EmbedderUnavailable, match="no embeddings"):
        embedder_for(None)


def test_remote_model_without_endpoint_is_reported(monkeypatch):
    for var in ("MEMVIZ_EMBED_BASE_URL", "MEMVIZ_EMBED_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(EmbedderUnavailable, match="MEMVIZ_EMBED_BASE_URL"):
        embedder_for("text-embedding-3-small", 1536)


class _Embeddings(BaseHTTPRequestHandler):
    replies: list = []
    seen: list = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append((self.path, body, self.headers.get("Authorization")))
        status, payload = self.replies.pop(0)(body) if self.replies else (200, None)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


@pytest.fixture
def endpoint():
    _Embeddings.replies, _Embeddings.seen = [], []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1", _Embeddings
    srv.shutdown()


def _vectors(body, dim=4):
    return 200, {"object": "list", "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1},
                 "data": [{"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0] + [0.0] * (dim - 2)}
                          for i, t in reversed(list(enumerate(body["input"])))]}


def test_openai_compatible_endpoint_over_http(endpoint, monkeypatch):
    url, h = endpoint
    monkeypatch.setenv("MEMVIZ_EMBED_API_KEY", "sk-test")
    h.replies.append(_vectors)
    e = embedder_for("my-embedder", 4, base_url=url, dimensions=4)
    v = e.embed(["a", "abc"])
    path, body, auth = h.seen[0]
    assert path == "/v1/embeddings" and body["model"] == "my-embedder" and body["dimensions"] == 4
    assert auth == "Bearer sk-test"
    # index order restored and rows unit-normalised
    assert np.allclose(v[0], np.array([1, 1, 0, 0]) / np.sqrt(2), atol=1e-6)
    assert np.allclose(v[1], np.array([3, 1, 0, 0]) / np.sqrt(10), atol=1e-6)


@pytest.mark.parametrize("reply, match", [
    (lambda b: _vectors(b, dim=3), "shape"),
    (lambda b: (200, {"object": "list", "model": "x", "data": [{"object": "embedding", "index": 0, "embedding": [1, "NaN", 0, 0]}],
                      "usage": {"prompt_tokens": 1, "total_tokens": 1}}), "NaN|float"),
    (lambda b: (400, {"error": {"message": "model not found", "type": "invalid_request_error"}}), "model not found"),
])
def test_bad_endpoint_replies_are_errors(endpoint, reply, match):
    url, h = endpoint
    h.replies.append(reply)
    e = OpenAIEmbedder("x", dim=4, base_url=url, api_key="k", max_retries=0)
    with pytest.raises((EmbeddingError, ValueError), match=match):
        e.embed(["one"])
