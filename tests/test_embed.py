"""Embedders: the shipped local model for real, and an OpenAI-compatible endpoint over real HTTP."""
import numpy as np
import pytest
from fake_openai import reply_error, reply_fn

from memviz.embed import (
    LOCAL_DIM,
    LOCAL_MODEL,
    EmbedderUnavailable,
    EmbeddingError,
    LocalEmbedder,
    OpenAIEmbedder,
    default_embedder,
    embedder_for,
)


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


def _vectors(body, dim=4):
    return {"object": "list", "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1},
                 "data": [{"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0] + [0.0] * (dim - 2)}
                          for i, t in reversed(list(enumerate(body["input"])))]}


def test_openai_compatible_endpoint_over_http(fake_openai, monkeypatch):
    monkeypatch.setenv("MEMVIZ_EMBED_API_KEY", "sk-test")
    fake_openai.embedding_queue.append(reply_fn(lambda body: _ok(_vectors(body))))
    e = embedder_for("my-embedder", 4, base_url=fake_openai.base_url, dimensions=4)
    v = e.embed(["a", "abc"])
    req = fake_openai.requests[0]
    assert req["path"] == "/v1/embeddings" and req["json"]["model"] == "my-embedder" and req["json"]["dimensions"] == 4
    assert req["authorization"] == "Bearer sk-test"
    # index order restored and rows unit-normalised
    assert np.allclose(v[0], np.array([1, 1, 0, 0]) / np.sqrt(2), atol=1e-6)
    assert np.allclose(v[1], np.array([3, 1, 0, 0]) / np.sqrt(10), atol=1e-6)


def test_served_local_vectors_match_the_local_model(fake_openai):
    e = OpenAIEmbedder("wordllama-over-http", dim=256, base_url=fake_openai.base_url, api_key="k")
    assert np.allclose(e.embed(["a red apple"]), default_embedder().embed(["a red apple"]), atol=1e-6)


def _ok(body):
    from fake_openai import Reply
    return Reply(body=body)


@pytest.mark.parametrize("reply, match", [
    (lambda b: _ok(_vectors(b, dim=3)), "shape"),
    (lambda b: _ok({"object": "list", "model": "x", "data": [{"object": "embedding", "index": 0, "embedding": [1, "NaN", 0, 0]}],
                      "usage": {"prompt_tokens": 1, "total_tokens": 1}}), "NaN|float"),
    (lambda b: reply_error(400, "model not found"), "model not found"),
])
def test_bad_endpoint_replies_are_errors(fake_openai, reply, match):
    fake_openai.embedding_queue.append(reply_fn(reply))
    e = OpenAIEmbedder("x", dim=4, base_url=fake_openai.base_url, api_key="k", max_retries=0)
    with pytest.raises((EmbeddingError, ValueError), match=match):
        e.embed(["one"])
