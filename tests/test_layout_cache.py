import numpy as np
import pytest

import memviz.store as ms
from memviz.layout import LayoutCache, pca_2d

MODEL = "test-model"


def clustered(n, dim=16, clusters=6, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    label = rng.integers(0, clusters, n)
    v = centres[label] + 0.15 * rng.normal(size=(n, dim))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32), label


def insert(store, vecs, start=0, model=MODEL):
    return store.insert_memories([dict(id=f"m{start + i}", kind="episode", content=f"memory {start + i}",
                                       embedding=v, embedding_model=model) for i, v in enumerate(vecs)], audit=False)


def test_round_trip_survives_reopening(store, store_path):
    insert(store, clustered(120)[0])
    store.insert_memories([dict(id="plain", kind="fact", content="no vector")])
    a = store.arrays()
    coords = pca_2d(a.embedding)
    cache = LayoutCache(store)
    assert cache.get("umap", a, {"n_neighbors": 15}) is None
    cache.put("umap", a, {"n_neighbors": 15}, coords)
    store.close()

    with ms.open(str(store_path)) as s2:
        a2 = s2.arrays()
        hit = LayoutCache(s2).lookup("umap", a2, {"n_neighbors": 15})
        assert hit is not None and (hit.placed, hit.dropped, hit.reused) == (0, 0, 120)
        assert np.array_equal(hit.coords, coords, equal_nan=True)
        assert np.isnan(hit.coords[a2.index_of("plain")]).all()
        assert s2.conn.execute("SELECT count(*) FROM memviz_layouts").fetchone()[0] == 1


def test_the_note_of_how_a_layout_was_made_survives_reopening_and_new_memories(store, store_path):
    """A reopened store says how its map was made (the window shows it), also after new memories
    were placed into it; a later layout stored without a note is not given the old one."""
    vecs = clustered(140)[0]
    insert(store, vecs[:120])
    a = store.arrays()
    note = "UMAP of a random 50 of 120 memories; the other 70 placed by neighbours"
    LayoutCache(store).put("umap", a, {}, pca_2d(a.embedding), note=note)
    store.close()
    with ms.open(str(store_path)) as s2:
        assert LayoutCache(s2).lookup("umap", s2.arrays(), {}).note == note
        insert(s2, vecs[120:], start=120)
        hit = LayoutCache(s2).lookup("umap", s2.arrays(), {})
        assert hit.placed == 20 and hit.note == note          # placed, written back with its note
        assert LayoutCache(s2).lookup("umap", s2.arrays(), {}).note == note
        a2 = s2.arrays()
        LayoutCache(s2).put("umap", a2, {}, pca_2d(a2.embedding))
        assert LayoutCache(s2).lookup("umap", a2, {}).note is None


def test_other_params_or_model_are_not_served_from_the_cache(store):
    insert(store, clustered(50)[0])
    a = store.arrays()
    cache = LayoutCache(store)
    cache.put("umap", a, {"n_neighbors": 15, "min_dist": 0.1}, pca_2d(a.embedding))
    assert cache.get("umap", a, {"n_neighbors": 30, "min_dist": 0.1}) is None
    assert cache.get("pca", a, {"n_neighbors": 15, "min_dist": 0.1}) is None
    assert cache.get("umap", a, {"min_dist": 0.1, "n_neighbors": 15}) is not None  # key order does not matter
    insert(store, clustered(5, seed=9)[0], start=1000, model="another-model")
    other = store.arrays(model="another-model")
    assert LayoutCache(store).get("umap", other, {"n_neighbors": 15, "min_dist": 0.1}) is None


def test_new_memories_are_placed_near_their_true_neighbours_and_removed_ones_dropped(store):
    vecs, labels = clustered(400, seed=4)
    insert(store, vecs[:380])
    a = store.arrays()
    coords = pca_2d(a.embedding)
    cache = LayoutCache(store)
    cache.put("umap", a, {}, coords)

    insert(store, vecs[380:], start=380)
    store.conn.execute("DELETE FROM memories WHERE id IN ('m0', 'm1')")  # the agent deleted two
    b = store.arrays()
    hit = cache.lookup("umap", b, {})
    assert (hit.reused, hit.placed, hit.dropped) == (378, 20, 2)
    for i in range(380, 400):  # each new point lands among the layout positions of its own cluster
        row = b.index_of(f"m{i}")
        same = [b.index_of(f"m{j}") for j in range(2, 380) if labels[j] == labels[i]]
        other = [b.index_of(f"m{j}") for j in range(2, 380) if labels[j] != labels[i]]
        d_same = np.linalg.norm(hit.coords[same] - hit.coords[row], axis=1)
        d_other = np.linalg.norm(hit.coords[other] - hit.coords[row], axis=1)
        assert np.median(d_same) < np.median(d_other)
        nn = np.argsort(-(b.embedding[same + other] @ b.embedding[row]))[:10]
        true_nn = np.array(same + other)[nn]
        lo, hi = hit.coords[true_nn].min(axis=0), hit.coords[true_nn].max(axis=0)
        assert np.all(hit.coords[row] >= lo - 1e-5) and np.all(hit.coords[row] <= hi + 1e-5)
    # the old coords were kept, not recomputed
    assert np.array_equal(hit.coords[b.index_of("m5")], coords[a.index_of("m5")])
    # and the refreshed layout was written back, so the next open is exact
    again = LayoutCache(store).lookup("umap", b, {})
    assert (again.placed, again.dropped) == (0, 0)
    assert np.array_equal(again.coords, hit.coords, equal_nan=True)


def test_placement_with_real_embeddings_lands_in_the_right_topic(store):
    from memviz.embed import default_embedder

    emb = default_embedder()
    animals = ["The cat sleeps on the sofa", "A dog barks at the mailman", "Horses graze in the field",
               "The puppy chews a bone", "Kittens play with yarn", "A parrot repeats words"]
    money = ["The invoice is due on Friday", "Interest rates rose again", "She paid the rent by bank transfer",
             "The budget spreadsheet is overdue", "Stock prices fell sharply", "He saved money for taxes"]
    texts = animals + money
    store.insert_memories([dict(id=f"t{i}", kind="episode", content=t, embedding=v, embedding_model=emb.model)
                           for i, (t, v) in enumerate(zip(texts, emb.embed(texts)))])
    a = store.arrays()
    coords = np.zeros((len(a), 2), np.float32)
    coords[:6, 0] = -10 + np.arange(6) * 0.1   # a hand-made map: animals on the left, money on the right
    coords[6:, 0] = 10 + np.arange(6) * 0.1
    cache = LayoutCache(store)
    cache.put("umap", a, {}, coords)
    store.insert_memories([dict(id="new-pet", kind="episode", content="My dog and my cat sleep together",
                                embedding=emb.embed_one("My dog and my cat sleep together"), embedding_model=emb.model),
                           dict(id="new-bill", kind="episode", content="The bank charged a fee on my account",
                                embedding=emb.embed_one("The bank charged a fee on my account"),
                                embedding_model=emb.model)])
    b = store.arrays()
    hit = cache.lookup("umap", b, {})
    assert hit.placed == 2
    assert hit.coords[b.index_of("new-pet"), 0] < 0 < hit.coords[b.index_of("new-bill"), 0]


def test_read_only_store_keeps_layouts_in_memory(store, store_path):
    insert(store, clustered(30)[0])
    store.close()
    with ms.open(str(store_path), read_only=True) as ro:
        a = ro.arrays()
        cache = LayoutCache(ro)
        coords = pca_2d(a.embedding)
        cache.put("umap", a, {}, coords)
        assert "read-only" in cache.last_write_error
        assert np.array_equal(cache.get("umap", a, {}), coords)
        assert LayoutCache(ro).get("umap", a, {}) is None  # nothing reached the file
    with ms.open(str(store_path)) as rw:
        assert rw.conn.execute("SELECT count(*) FROM memviz_layouts").fetchone()[0] == 0


def test_damaged_cache_row_is_ignored_not_trusted(store):
    insert(store, clustered(10)[0])
    a = store.arrays()
    cache = LayoutCache(store)
    cache.put("umap", a, {}, pca_2d(a.embedding))
    with store.transaction() as c:
        c.execute("UPDATE memviz_layouts SET coords = x'0000'")
    assert LayoutCache(store).get("umap", a, {}) is None


def test_put_checks_alignment(store):
    insert(store, clustered(10)[0])
    a = store.arrays()
    with pytest.raises(ValueError, match="shape"):
        LayoutCache(store).put("umap", a, {}, np.zeros((3, 2)))


def test_a_new_copy_of_a_laid_out_vector_sits_exactly_on_it():
    from memviz.layout import place_by_neighbours

    rng = np.random.default_rng(4)
    known = rng.normal(size=(50, 8)).astype(np.float32)
    known /= np.linalg.norm(known, axis=1, keepdims=True)
    xy = rng.normal(size=(50, 2)).astype(np.float32)
    near = known[7] + 0.01 * rng.normal(size=8).astype(np.float32)
    new = np.vstack([known[7], known[31], near / np.linalg.norm(near)])
    out = place_by_neighbours(known, xy, new)
    assert np.array_equal(out[0], xy[7]) and np.array_equal(out[1], xy[31])  # "… is idle" again: same spot
    assert not np.array_equal(out[2], xy[7]) and np.linalg.norm(out[2] - xy[7]) < 1.0  # near, not on
