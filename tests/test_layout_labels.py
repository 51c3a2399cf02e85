"""Region labels of the map: k-means on the layout, named by each region's distinctive words."""
import re
from pathlib import Path

import numpy as np
import pytest

import memviz.store as ms
from memviz.layout.labels import cached_labels, fingerprint, kmeans, map_labels, store_labels, words_of

COFFEE = ["Elena said the espresso beans from the roaster taste burnt", "Elena bought espresso beans and a grinder",
          "The roaster sells single origin espresso beans", "Elena said the grinder makes the espresso bitter"]
TRAINS = ["Elena said the train to Porto left the station late", "Elena booked a train ticket at the station",
          "The station lost her train ticket reservation", "Elena said the night train to Porto was full"]


def two_topics(n=60, seed=0):
    rng = np.random.default_rng(seed)
    texts, coords = [], []
    for i in range(n):
        topic = i % 2
        texts.append((COFFEE if topic == 0 else TRAINS)[i // 2 % 4])
        coords.append(rng.normal(size=2) * 0.5 + (np.array([-10, 0]) if topic == 0 else np.array([10, 3])))
    return np.array(coords, np.float32), texts


def test_two_topics_each_region_is_named_by_its_topic():
    coords, texts = two_topics()
    coords = np.vstack([coords, [[np.nan, np.nan]]])  # a memory without a vector is not on the map
    texts.append("unplaced")
    labels = map_labels(coords, texts, k=2)
    assert len(labels) == 2
    left, right = sorted(labels, key=lambda lb: lb.x)
    lw, rw = left.plain_words, right.plain_words  # the words of the labels' terms ("espresso beans": two)
    assert set(lw) <= set(words_of(" ".join(COFFEE))) and "espresso" in lw
    assert set(rw) <= set(words_of(" ".join(TRAINS))) and ("train" in rw or "station" in rw)
    assert "elena" not in lw + rw and "said" not in lw + rw  # in every region
    assert left.size == right.size == 30 and left.x < -5 < 5 < right.x


def test_kmeans_finds_separated_groups_deterministically():
    rng = np.random.default_rng(1)
    pts = np.vstack([rng.normal(size=(50, 2)) + c for c in ((0, 0), (20, 0), (0, 20))])
    a = kmeans(pts, 3)
    assert len({tuple(np.unique(a[i:i + 50])) for i in (0, 50, 100)}) == 3
    assert all(len(np.unique(a[i:i + 50])) == 1 for i in (0, 50, 100))
    assert np.array_equal(a, kmeans(pts, 3))


def test_labels_are_cached_in_the_store_by_fingerprint(store, store_path):
    coords, texts = two_topics()
    key = fingerprint(coords, texts)
    labels = map_labels(coords, texts, k=2)
    store_labels(store, key, labels)
    store.close()
    with ms.open(str(store_path), read_only=True) as s:
        assert cached_labels(s, key) == labels
        assert cached_labels(s, fingerprint(coords + 1, texts)) is None  # another layout: recomputed
        store_labels(s, "x", labels)  # read-only: kept nowhere, no error
        assert cached_labels(s, "x") is None


def test_too_few_points_have_no_labels():
    assert map_labels(np.zeros((3, 2)), ["a b c"] * 3) == []


SAMPLES = Path(__file__).resolve().parent.parent / "sample_dbs"


@pytest.mark.parametrize("name", ["assistant", "simulation"])
def test_sample_regions_are_named_by_real_distinct_words(name):
    """The map a fresh install shows first (PCA of the bundled sample): every word of every region's
    name is a word of letters (3+) written in the memories, in no English stop list (scikit-learn's,
    made apart from memviz's, as well as memviz's own), and names one region only."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from memviz.layout import first_map
    from memviz.layout.labels import STOPWORDS
    from memviz.session.state import load_store_data

    with ms.open(str(SAMPLES / f"{name}.db"), read_only=True) as store:
        data = load_store_data(store)
        coords, method = first_map(store, data.arrays)
    assert method == "PCA"
    labels = map_labels(coords, data.previews)
    assert len(labels) >= 5
    written = set(re.findall(r"[^\W\d_]+", " ".join(data.previews).lower()))
    seen: list[str] = []
    for lb in labels:
        assert 1 <= len(lb.words) <= 3 and len(lb.text) <= 40, lb.text
        words = [w.lower() for term in lb.words for w in term.split()]
        for w in words:
            assert re.fullmatch(r"[^\W\d_]{3,}(?:'s)?", w), (w, lb.text)  # no fragment of "eight-year-old"
            assert w.removesuffix("'s") in written, (w, lb.text)
            assert w not in ENGLISH_STOP_WORDS and w not in STOPWORDS, (w, lb.text)
        seen += words
    shared = {w for w in seen if seen.count(w) > 1}
    assert not shared, shared  # each word tells its region from the others
