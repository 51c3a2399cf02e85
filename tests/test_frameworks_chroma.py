"""Chroma persistent folders opened in place, read-only (memviz/frameworks/chroma.py): folders
written by chromadb's own PersistentClient (explicit embeddings or a deterministic embedding
function: no model download), documents, metadata and vectors read without unpickling, live
additions as deltas, every edit refused with the reason, hostile and broken folders refused
with a StoreError."""
from __future__ import annotations

import hashlib
import json
import os
import pickle

import chromadb
import numpy as np
import pytest
from chromadb.api.types import EmbeddingFunction

import memviz.frameworks as fw
import memviz.store as ms
from memviz.edits.commands import Correct, SetImportance
from memviz.frameworks.chroma import ChromaFolder, read_plain_pickle
from memviz.store import ReadOnlyError, StoreError
from memviz.store.changes import changes_since, token_now

N = 1200  # past Chroma's sync threshold (1000): most vectors are in the HNSW files, the rest in the queue


class HashEmbedding(EmbeddingFunction):
    """A deterministic 16-d embedding function (no model)."""

    def __init__(self):
        pass

    def __call__(self, input):
        return [np.frombuffer(hashlib.sha256(t.encode()).digest()[:16], np.uint8).astype(np.float32) - 128 for t in input]

    @staticmethod
    def name():
        return "hash16"

    def get_config(self):
        return {}

    @staticmethod
    def build_from_config(config):
        return HashEmbedding()


def _vectors(n, dim=16, seed=0):
    return np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMVIZ_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "chroma"
    client = chromadb.PersistentClient(path=str(path))
    notes = client.get_or_create_collection("notes", embedding_function=HashEmbedding(), metadata={"hnsw:space": "cosine"})
    notes.add(ids=[f"n{i}" for i in range(N)], documents=[f"note number {i}" for i in range(N)],
              metadatas=[{"agent_id": "planner" if i % 2 else "coder", "step": i} for i in range(N)],
              embeddings=_vectors(N))
    notes.delete(ids=["n3"])
    episodes = client.get_or_create_collection("episodes", embedding_function=HashEmbedding())
    episodes.add(ids=["e1", "e2"], documents=["The user asked for a summary", "Tests passed after the fix"],
                 metadatas=[{"user_id": "ana", "tags": "chat,summary"}, {"user_id": "ana", "importance": 7}])
    return path


def _vec(row):
    return np.frombuffer(row["embedding"], "<f4")


def _cos(a, b):
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_recognised_described_and_read_only(folder):
    assert isinstance(fw.recognise(str(folder)), ChromaFolder)
    assert isinstance(fw.recognise(str(folder / "chroma.sqlite3")), ChromaFolder)
    assert fw.describe(str(folder)) == f"Chroma folder at {folder}: {N + 1:,} records in 2 collections (episodes, notes), read-only"
    s = fw.open_source(str(folder))
    try:
        assert s.read_only and "does not write" in s.read_only_reason
        with pytest.raises(ReadOnlyError, match="memviz reads Chroma stores but does not write"):
            SetImportance(["e1@episodes"], 9).apply(s)
        with pytest.raises(ReadOnlyError):
            Correct("e1@episodes", "The user asked for a long summary").apply(s)
    finally:
        s.close()


def test_no_false_match(tmp_path, folder):
    native = tmp_path / "native.db"
    ms.create(str(native)).close()
    assert fw.recognise(str(native)) is None
    doc = tmp_path / "notes.json"
    doc.write_text(json.dumps({"ids": ["a"], "documents": ["x"]}))
    assert fw.recognise(str(doc)) is None
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "chroma.sqlite3").write_bytes(b"")
    assert fw.recognise(str(empty)) is None
    with pytest.raises(ms.NotAStoreError, match="empty is a folder, not a memory store"):
        fw.open_source(str(empty))


def test_documents_metadata_and_vectors(folder):
    s = fw.open_source(str(folder))
    try:
        assert s.counts()["total"] == N + 1
        assert s.get("n3@notes") is None  # deleted before memviz first read the folder
        e1, e2 = s.get("e1@episodes"), s.get("e2@episodes")
        assert (e1["kind"], e1["agent"], e1["content"], e1["tags"]) == ("episodes", "ana", "The user asked for a summary",
                                                                         ["chat", "summary"])
        assert e2["attributes"]["chroma"]["metadata"] == {"user_id": "ana", "importance": 7}
        assert e1["embedding_model"] == "unknown/chroma-hash16-16d"
        np.testing.assert_allclose(_vec(e1), HashEmbedding()(["The user asked for a summary"])[0])  # from the queue
        vecs = _vectors(N)
        for i in (0, 1, 999, 1000, N - 1):  # HNSW files (normalised: cosine space) and the queue's tail
            row = s.get(f"n{i}@notes")
            assert row["agent"] == ("planner" if i % 2 else "coder") and row["content"] == f"note number {i}"
            assert _cos(_vec(row), vecs[i]) > 0.9999
        assert abs(s.get("n0@notes")["created_at"] - s.get("e1@episodes")["created_at"]) < 120
        assert s.history("n0@notes") == [] or all(h["actor"] != "memviz" for h in s.history("n0@notes"))
    finally:
        s.close()


def test_client_writes_arrive_live(folder):
    s = fw.open_source(str(folder))
    try:
        tok = token_now(s)
        client = chromadb.PersistentClient(path=str(folder))
        ep = client.get_collection("episodes", embedding_function=HashEmbedding())
        ep.add(ids=["e3"], documents=["A new episode"], metadatas=[{"user_id": "ben"}])
        ep.update(ids=["e1"], documents=["The user asked for a short summary"])
        ep.delete(ids=["e2"])
        ch = changes_since(s, tok)
        assert len(ch.added) == 1 and len(ch.changed) == 2
        assert s.get("e3@episodes")["agent"] == "ben"
        e1 = s.get("e1@episodes")
        assert e1["content"] == "The user asked for a short summary"
        np.testing.assert_allclose(_vec(e1), HashEmbedding()(["The user asked for a short summary"])[0])
        assert s.get("e2@episodes")["valid_until"] is not None  # deleted by Chroma, kept retired here
    finally:
        s.close()


def _same_records(a, b):
    """Records as a Source makes them, vectors compared as arrays."""
    assert {r["id"] for r in a} == {r["id"] for r in b}
    by_id = {r["id"]: r for r in b}
    for r in a:
        other = by_id[r["id"]]
        assert {k: v for k, v in r.items() if k != "embedding"} == {k: v for k, v in other.items() if k != "embedding"}
        np.testing.assert_array_equal(r.get("embedding"), other.get("embedding"))


def test_changes_are_read_without_reading_the_folder_again(folder):
    """changed_since brings what the client wrote (an add, an update of the text, an update of
    the metadata only of a record whose vector is in the HNSW files, a delete), as a whole read
    would make those records, and every id only because one was deleted."""
    src = ChromaFolder(str(folder))
    try:
        before = list(src.records())
        tok, known = src.token(), {r["id"] for r in before}
        client = chromadb.PersistentClient(path=str(folder))
        client.get_collection("episodes", embedding_function=HashEmbedding()).add(
            ids=["e3"], documents=["A new episode"], metadatas=[{"user_id": "ben"}])
        notes = client.get_collection("notes", embedding_function=HashEmbedding())
        notes.update(ids=["n5"], metadatas=[{"agent_id": "reviewer", "step": 5}])
        notes.update(ids=["n7"], documents=["note seven, rewritten"])
        notes.delete(ids=["n9"])
        got, present = src.changed_since(tok, known)
        assert {r["id"] for r in got} == {"e3@episodes", "n5@notes", "n7@notes"}
        assert set(present) == known - {"n9@notes"} | {"e3@episodes"}
        _same_records(got, [r for r in ChromaFolder(str(folder)).records() if r["id"] in {r["id"] for r in got}])
        again, still = src.changed_since(src.token(), set(present))
        assert again == [] and set(still) == set(present)  # nothing since: nothing read
    finally:
        src.close()


class _Boom:
    def __reduce__(self):
        return (os.system, ("touch PWNED",))


def test_pickle_reader_refuses_code_and_reads_plain_data(tmp_path):
    plain = {"id_to_label": {"a": 1, "b": 2}, "label_to_id": {1: "a"}, "max_seq_id": None, "x": [1.5, True, ("t",)]}
    for proto in (2, 3, 4, 5):
        assert read_plain_pickle(pickle.dumps(plain, protocol=proto)) == plain
    with pytest.raises(ValueError, match="could run code"):
        read_plain_pickle(pickle.dumps({"x": _Boom()}))


def test_hostile_index_metadata_is_refused_not_run(folder, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (seg,) = [p for p in folder.iterdir() if (p / "index_metadata.pickle").exists()]
    (seg / "index_metadata.pickle").write_bytes(pickle.dumps({"id_to_label": _Boom()}))
    with pytest.raises(StoreError, match="Cannot read the vector index of the Chroma collection 'notes'.*could run code"):
        fw.open_source(str(folder))
    assert not (tmp_path / "PWNED").exists()


def test_broken_hnsw_header_is_a_store_error(folder):
    (seg,) = [p for p in folder.iterdir() if (p / "index_metadata.pickle").exists()]
    (seg / "header.bin").write_bytes(b"\x01\x00")
    with pytest.raises(StoreError, match="header.bin"):
        fw.open_source(str(folder))


def test_window_opens_a_chroma_folder(folder, make_window):
    win = make_window(folder)
    assert len(win.state.data.arrays) == N + 1
    assert win.state.data.store.read_only


def test_vectors_of_memviz_local_model_are_named_so(tmp_path):
    """A collection embedded with memviz's own model (explicit embeddings): identified by
    re-embedding a few documents, so text queries work on it; others stay unknown."""
    from memviz.embed import LOCAL_MODEL, LocalEmbedder
    path = tmp_path / "local"
    docs = ["The user prefers short answers", "Deploys happen on Fridays", "The parser leaks memory"]
    col = chromadb.PersistentClient(path=str(path)).get_or_create_collection("facts", embedding_function=None)
    col.add(ids=["a", "b", "c"], documents=docs, embeddings=LocalEmbedder().embed(docs))
    s = fw.open_source(str(path))
    try:
        assert {s.get(f"{i}@facts")["embedding_model"] for i in "abc"} == {LOCAL_MODEL}
    finally:
        s.close()


def test_after_a_reopen_changes_come_without_a_whole_read(folder):
    """A reopened mirror tells the source where it stands (in_step); the client's next add
    arrives through changed_since, its vectors named as the whole read named the collection's."""
    first = fw.open_source(str(folder))
    model = first.get("n0@notes")["embedding_model"]
    first.close()
    s = fw.open_source(str(folder))
    try:
        assert s.source._seq is not None  # noqa: SLF001 - what in_step noted
        tok = token_now(s)
        notes = chromadb.PersistentClient(path=str(folder)).get_collection("notes", embedding_function=HashEmbedding())
        notes.add(ids=["n-new"], documents=["a late note"], embeddings=_vectors(1, seed=5))
        ch = changes_since(s, tok)
        assert len(ch.added) == 1
        assert s.get("n-new@notes")["embedding_model"] == model
    finally:
        s.close()
