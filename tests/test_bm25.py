"""store/bm25.py: the numpy BM25 that fts_hits answers with equals FTS5's own bm25() bit for bit,
so the hybrid preset's full-text ranks (ties included) are unchanged; where it cannot be exact
it steps aside and SQLite answers."""
from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from conftest import unit_vectors

from memviz.retrieval import Engine, preset_params

WORDS = ("alice bob carol restaurant coffee park library meeting project deadline river café Café CAFE "
         "naïve résumé über straße the a of rain train").split()


def sqlite_bm25(store, query: str) -> np.ndarray:
    """FTS5's own answer: (rowid, bm25) by rowid."""
    words = re.findall(r"\w+", query)
    match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
    cur = store.conn.execute("SELECT rowid, bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH ? "
                             "ORDER BY rowid", (match,))
    return np.fromiter(itertools.chain.from_iterable(cur), np.float64).reshape(-1, 2)


def fill(store, n: int, seed: int = 0, start: int = 0) -> None:
    """Documents of 1 to 60 words (so row sizes vary, and some exceed one varint byte's 127 with
    repeats), many repeated words, mixed case and diacritics; some rows with no word at all."""
    rng = np.random.default_rng(seed)
    V = unit_vectors(n, 8, seed)
    recs = []
    for i in range(n):
        length = int(rng.integers(1, 60)) if i % 50 else 140
        text = " ".join(rng.choice(WORDS, length)) if i % 37 else "... !!"
        recs.append(dict(id=f"d{start + i}", kind="episode", content=text, embedding=V[i], embedding_model="test/8",
                         created_at=1000 + i))
    store.insert_memories(recs, audit=False)


QUERIES = ["alice restaurant", "the the river", "Café naïve", "CAFE", "straße über résumé", "a of the",
           "nothing matches this", "coffee", "Bob's project deadline?", "rain train rain"]


@pytest.mark.parametrize("query", QUERIES)
def test_values_equal_fts5_bm25(store, query):
    fill(store, 800)
    got = store.fts_hits(query)
    assert store._bm25.hits(re.findall(r"\w+", query)) is not None   # the numpy path answered
    want = sqlite_bm25(store, query)
    got = got[np.argsort(got[:, 0])]
    assert got.shape == want.shape
    assert np.array_equal(got, want)   # equal, not close: same ranks, same ties


def test_ranks_with_ties_unchanged(store):
    """Identical texts score identically: ties stay ties and fall back to store order."""
    store.insert_memories([dict(id=f"t{i}", kind="episode", content="alice met bob at the river",
                                created_at=1000 + i) for i in range(30)], audit=False)
    fill(store, 200, seed=3)
    from memviz.retrieval.hybrid import fts_rows
    a = store.arrays()
    rows, scores = fts_rows(store, a, "alice river")
    want = sqlite_bm25(store, "alice river")
    order = np.lexsort((want[:, 0], want[:, 1]))
    assert np.array_equal(a.rowid[rows], want[order, 0].astype(np.int64))
    assert np.array_equal(scores, want[order, 1])


def test_changes_are_seen(store):
    fill(store, 300)
    before = store.fts_hits("coffee")
    fill(store, 100, seed=9, start=300)           # this connection writes
    after = store.fts_hits("coffee")
    assert len(after) > len(before)
    assert np.array_equal(after[np.argsort(after[:, 0])], sqlite_bm25(store, "coffee"))
    other = store.reopen()                        # another connection writes
    try:
        fill(other, 100, seed=11, start=400)
    finally:
        other.close()
    again = store.fts_hits("coffee")
    assert len(again) > len(after)
    assert np.array_equal(again[np.argsort(again[:, 0])], sqlite_bm25(store, "coffee"))


def test_a_word_of_two_tokens_is_left_to_sqlite(store):
    """"foo_bar" is one \\w+ word but two unicode61 tokens: a phrase, which needs positions."""
    store.insert_memories([dict(id="p", kind="episode", content="foo bar", created_at=1),
                           dict(id="q", kind="episode", content="bar foo", created_at=2)], audit=False)
    assert store._bm25.hits(["foo_bar"]) is None
    got = store.fts_hits("foo_bar")
    assert np.array_equal(got, sqlite_bm25(store, "foo_bar"))
    assert len(got) == 1   # the phrase: only "foo bar"


def test_hybrid_top_k_same_as_sqlite_bm25(store, monkeypatch):
    """The hybrid preset's result with the numpy BM25 equals the one with FTS5's bm25()."""
    fill(store, 1500, seed=5)
    params = preset_params("hybrid", k=25)
    results = []
    for fast in (True, False):
        if not fast:
            monkeypatch.setattr(type(store._bm25), "hits", lambda self, words: None)
        e = Engine(store, now=10_000)
        e.set_query(like="d7")   # d7's text drives the full text, its vector the vector ranks
        r = e.score(params)
        results.append((r.ids, r.raw["fts_rank"].tolist(), r.raw["bm25"].tolist(), r.all_scores))
    assert results[0][:3] == results[1][:3]
    np.testing.assert_array_equal(results[0][3], results[1][3])


def test_non_native_table_is_left_to_sqlite(tmp_path):
    from memviz.store.bm25 import _native_tokenizer
    assert _native_tokenizer("CREATE VIRTUAL TABLE memories_fts USING fts5(content, content='memories', "
                             "content_rowid='rowid', tokenize='unicode61')") == ["unicode61"]
    assert _native_tokenizer("CREATE VIRTUAL TABLE memories_fts USING fts5(content, tokenize='porter unicode61')") \
        == ["porter", "unicode61"]
    assert _native_tokenizer("CREATE VIRTUAL TABLE memories_fts USING fts5(content, detail=none)") is None
    assert _native_tokenizer("CREATE VIRTUAL TABLE memories_fts USING fts5(title, content)") is None
    assert _native_tokenizer("CREATE VIRTUAL TABLE memories_fts USING fts5(content, columnsize=0)") is None


def test_varints():
    from memviz.store.bm25 import _varints
    assert _varints(bytes([0x86, 0x8D, 0x20, 0xB0, 0xEA, 0x00])).tolist() == [100000, 800000]
    assert _varints(bytes([5, 0x81, 0x00, 127])).tolist() == [5, 128, 127]
    assert _varints(bytes([0x81])) is None
    assert _varints(b"").tolist() == []


def test_descending_order_is_the_stable_argsort():
    from memviz.retrieval.hybrid import descending_order
    rng = np.random.default_rng(1)
    x = rng.normal(size=5000).astype(np.float32)
    x[::7] = x[3]                                   # many exact ties
    x[10], x[11], x[12] = 0.0, -0.0, 0.0            # signed zeros are one value
    for v in (x, x.astype(np.float64), -x):
        assert np.array_equal(descending_order(v), np.argsort(-v, kind="stable"))
    y = x.astype(np.float64) + 1e-12                # not float32 values: the plain sort
    assert np.array_equal(descending_order(y), np.argsort(-y, kind="stable"))
    z = x.copy()
    z[5] = np.nan
    assert np.array_equal(descending_order(z), np.argsort(-z, kind="stable"))


def test_hybrid_needs_no_int8_pass_and_later_presets_still_rank_exactly(store):
    """The first pass runs on first use: a hybrid query orders by float32 cosines only; a linear
    preset scored after it on the same query uses those (bound: the float32 one) and ranks like
    an engine that ran the first pass itself."""
    from memviz.retrieval import quantized
    fill(store, 1200, seed=2)
    arrays = store.arrays()
    assert quantized.index_for(arrays, wait=True, min_rows=0) is not None
    e = Engine(store, arrays, now=10_000)
    e.set_query(like="d11")
    assert e._rel_fast is None
    e.score(preset_params("hybrid", k=10))
    assert e._rel_fast is None and e._rel32 is not None      # no int8 pass for the hybrid preset
    fresh = Engine(store, arrays, now=10_000)
    fresh.set_query(like="d11")
    for name in ("dual-memory", "generative-agents", "ada"):
        p = preset_params(name, k=15)
        assert e.score(p).ids == fresh.score(p).ids, name
    assert e._rel_err == e._delta < fresh._rel_err              # float32 first pass vs the int8 one
