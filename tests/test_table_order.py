"""memviz.session.table_order against the plain ways it replaces: the text order is Python's
stable sort of the texts (numpy's object argsort), the search a substring test of each
lower-cased text and id - on texts made to trip a byte-wise sort and search (case, accents,
characters that lower-case to two, NULs, lone surrogates, emoji, long equal beginnings,
duplicates, empty texts), through live changes and typing on."""
from __future__ import annotations

import numpy as np
import pytest

from memviz.session.table_order import MOVED_MAX, ColumnOrders, TextSearch, insert_sorted, moved_in, stable_order, text_order, utf8_rows
from memviz.tasks import Cancelled, Task

ALPHABET = ["a", "A", "b", "z", " ", "\x00", "\x01", "é", "É", "ß", "ẞ", "İ", "Σ", "σ", "ς", "ﬁ", "😀", "\ud800",
            "\udfff", "\uffff", "\u07ff", "\u0800", "\x7f", "\x80"]


def python_order(values) -> np.ndarray:
    """What the table did before: Python's stable sort of the texts."""
    values = list(values)
    return np.fromiter(sorted(range(len(values)), key=values.__getitem__), np.int64, count=len(values))


def plain_mask(texts, ids, text) -> np.ndarray:
    text = text.strip().lower()
    return np.array([(text in p.lower()) or (text in i) for p, i in zip(texts, ids)], bool)


def adversarial(rng, n: int, nul: bool = True) -> np.ndarray:
    """Texts sharing long beginnings (past several 8-byte words), some equal, some empty; `nul`:
    some hold NUL characters (texts are then encoded one by one, not joined)."""
    stems = ["", "a", "Isabella Rodriguez is ", "Isabella Rodriguez is\x00", "\x00\x00", "😀" * 5, "ab" * 20,
             "ΑΣ", "Σ'", "'Σ", "aΣ."]
    alphabet = ALPHABET + ["'", ".", "Σ"]
    if not nul:
        stems, alphabet = [t for t in stems if "\x00" not in t], [c for c in alphabet if c != "\x00"]
    out = []
    for _ in range(n):
        stem = stems[int(rng.integers(0, len(stems)))]
        tail = "".join(rng.choice(alphabet[:int(rng.integers(1, len(alphabet) + 1))], int(rng.integers(0, 12))))
        out.append(out[int(rng.integers(0, len(out)))] if out and rng.random() < 0.15 else stem + tail)
    a = np.empty(n, object)
    a[:] = out
    return a


def test_utf8_rows_marks_each_text():
    texts = ["", "a\x00b", "é😀", "", "\ud800x"]
    buf, starts = utf8_rows(texts)
    raw = buf.tobytes()
    for i, t in enumerate(texts):
        assert raw[starts[i]:starts[i + 1] - 1].decode("utf-8", "surrogatepass") == t
        assert raw[starts[i + 1] - 1] == 0
    assert starts[-1] == len(buf)


def test_texts_lower_cased_together_as_one_by_one():
    rng = np.random.default_rng(11)
    texts = list(adversarial(rng, 3000, nul=False)) + ["ΑΣ", "Σ", "aΣ", "aΣ'", "'Σa", "İ", "ß"]
    buf, starts = utf8_rows(texts, lower=True)
    raw = buf.tobytes()
    assert [raw[starts[i]:starts[i + 1] - 1].decode("utf-8", "surrogatepass") for i in range(len(texts))] == \
        [t.lower() for t in texts]


@pytest.mark.parametrize("seed", range(6))
def test_text_order_is_pythons_stable_sort(seed):
    rng = np.random.default_rng(seed)
    texts = adversarial(rng, 3000, nul=seed % 2 == 0)
    want = python_order(texts)
    assert np.array_equal(text_order(texts), want)
    assert np.array_equal(stable_order(texts), want)
    assert np.array_equal(np.argsort(texts, kind="stable"), want)   # what numpy's object sort says too


def test_text_order_edge_cases():
    for texts in ([], [""], ["", ""], ["b", "a"], ["a\x00", "a", "a\x00\x00", "a"], ["x" * 300 + "b", "x" * 300 + "a",
                  "x" * 300, "x" * 300 + "a"], ["k"] * 5000 + ["j"], [str(i) for i in range(5000, 0, -1)]):
        a = np.empty(len(texts), object)
        a[:] = texts
        assert np.array_equal(stable_order(a), python_order(texts)), texts[:3]


def test_stable_order_is_numpys_for_other_keys():
    rng = np.random.default_rng(3)
    mixed = np.empty(6, object)
    mixed[:] = [3, 1.5, 2, 1, 0, 2]   # not texts: compared as numpy's object sort does
    for key in (mixed, rng.integers(0, 5, 2000), np.where(rng.random(2000) < 0.1, np.nan, rng.random(2000)).round(1),
                rng.random(2000) < 0.5):
        assert np.array_equal(stable_order(key), np.argsort(key, kind="stable"))


def test_text_order_stops_when_cancelled():
    task = Task("sort")
    task.cancel()
    with pytest.raises(Cancelled):
        text_order(["b", "a"] * 10, task)


@pytest.mark.parametrize("seed", range(4))
def test_search_is_the_plain_substring_test(seed):
    rng = np.random.default_rng(seed)
    texts = adversarial(rng, 2000, nul=seed % 2 == 0)
    ids = np.empty(len(texts), object)
    ids[:] = [f"m{i:05d}" + ("É" if i % 7 == 0 else "") for i in range(len(texts))]
    search = TextSearch()
    search.reset(texts, ids)
    needles = ["a", "A", " ", "is", "isabella rodriguez is ", "\x00", "a\x00", "s\x00\x00", "😀", "é", "i̇", "σ",
               "ς", "ss", "fi", "ﬁ", "m0", "m0001", "É", "é", "\ud800", "zz", "  a  ", "", "ab" * 5, "ας", "σ'", "aσ."]
    for text in needles + [t for t in texts[:40]]:
        got = search.mask(text)
        want = np.ones(len(texts), bool) if not text.strip() else plain_mask(texts, ids, text)
        assert np.array_equal(got, want), repr(text)


def test_search_through_typing_live_changes_and_rebuilds():
    rng = np.random.default_rng(7)
    words = np.array("coffee Coffee café river bridge the a of rain train Alice".split(), object)
    n = 30_000
    texts = np.empty(n, object)
    texts[:] = [" ".join(rng.choice(words, int(rng.integers(0, 6)))) for _ in range(n)]
    ids = np.empty(n, object)
    ids[:] = [f"id{i}" for i in range(n)]
    search = TextSearch()
    search.reset(texts, ids)
    for text in ("c", "co", "cof", "coffee", "coff", "CAF", "café", "id1", "zzz", "e", "rain tr"):  # on, back, anew
        assert np.array_equal(search.mask(text), plain_mask(texts, ids, text)), text
    search.prepare()
    for step in range(4):   # rows change and come: tested one by one, then (many) the buffers are made again
        k = 30 if step < 3 else 25_000
        changed = rng.choice(n, k, replace=False)
        texts[changed] = [f"River café {step}" for _ in changed]
        added = np.empty(50, object)
        added[:] = [f"new rain {step}"] * 50
        texts = np.concatenate([texts, added])
        ids = np.concatenate([ids, np.array([f"id{n + i}" for i in range(50)], object)])
        search.rows_changed(texts, ids, np.arange(n, n + 50), np.sort(changed))
        n += 50
        for text in ("café", "river c", "rain", f"{step}", "id3", "coffee"):
            assert np.array_equal(search.mask(text), plain_mask(texts, ids, text)), (step, text)
        assert np.array_equal(search.contains("rain", np.arange(n - 60, n)), plain_mask(texts[-60:], ids[-60:], "rain"))


def test_column_orders_drop_an_order_made_across_a_clear():
    orders = ColumnOrders()
    key = np.array([3, 1, 2])
    shown = np.array([True, False, True])

    def key_of():
        orders.clear()   # rows changed while the order was being made (a live refresh)
        return key
    source = (object(),)
    assert orders.shown_in_order("c", key_of, source, shown).tolist() == [2, 0]
    assert not orders.ready("c", source, 3)   # not kept: made from values that may be stale
    assert orders.shown_in_order("c", lambda: key, source, shown).tolist() == [2, 0]
    assert orders.ready("c", source, 3)
    orders.clear()
    assert orders.shown_in_order("c", lambda: np.array([3, 1, 2, 0]), source, shown) is None   # rows came meanwhile


def test_orders_kept_through_a_refresh_take_the_new_rows_in():
    rng = np.random.default_rng(2)
    texts = adversarial(rng, 3000, nul=False)
    nums = np.where(rng.random(3000) < 0.1, np.nan, rng.integers(0, 20, 3000).astype(float))
    keys = {"text": texts, "num": nums}
    orders = ColumnOrders()
    n = 2000
    source = (object(),)
    for col in keys:
        orders.order(col, lambda col=col: keys[col][:n], source, n)
    for step, m in enumerate((2001, 2300, 3000)):   # rows appended; "num" values of old rows changed once
        if step == 1:
            nums[:50] = 7.0
        source = (object(),)   # a refresh gives new arrays
        orders.rows_changed(source, {"text"} if step == 1 else {"text", "num"})
        assert orders.ready("text", source, n) and orders.ready("num", source, n) == (step != 1)
        for col in keys:
            got = orders.order(col, lambda col=col: keys[col][:m], source, m)
            assert np.array_equal(got, np.argsort(keys[col][:m], kind="stable")), (step, col)
        n = m


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rows_moved_and_inserted_one_by_one_are_where_a_full_sort_puts_them(seed):
    """A rewrite's text, a recall's count, a retirement: the rows whose key changed are taken out
    of the order and put back by a binary search, and the order is a from-scratch stable sort."""
    rng = np.random.default_rng(seed)
    n = 3000
    texts = adversarial(rng, n, nul=False)
    nums = np.where(rng.random(n) < 0.1, np.nan, rng.integers(0, 20, n).astype(float))
    flags = rng.random(n) < 0.5
    for key in (texts, nums, flags):
        order = stable_order(key)
        moved = rng.choice(n, 60, replace=False)
        key = key.copy()
        key[moved] = key[rng.choice(n, 60)]   # new values: some equal to others', some the same as before
        np.testing.assert_array_equal(moved_in(order, moved, key), stable_order(key))
        shown = rng.random(n) < 0.4                       # a filtered order, and rows that now pass
        full = stable_order(key)
        part = full[shown[full]]
        enter = np.flatnonzero(~shown)[:50]
        want = np.flatnonzero(shown | np.isin(np.arange(n), enter))
        np.testing.assert_array_equal(insert_sorted(part, enter, key), want[stable_order(key[want])])


def test_orders_kept_through_a_refresh_move_the_changed_rows():
    rng = np.random.default_rng(3)
    texts = adversarial(rng, 2500, nul=False)
    nums = rng.integers(0, 9, 2500).astype(float)
    keys = {"text": texts, "num": nums}
    orders = ColumnOrders()
    source = (object(),)
    for col in keys:
        orders.order(col, lambda col=col: keys[col][:2000], source, 2000)
    changed = rng.choice(2000, 30, replace=False)
    texts[changed], nums[changed] = texts[rng.choice(2000, 30)], 4.0
    source = (object(),)
    orders.rows_changed(source, set(), changed)            # both columns' values changed in those rows
    assert not orders.ready("text", source, 2000)          # rows to move first
    for m in (2000, 2500):                                  # rows appended too
        for col in keys:
            got = orders.order(col, lambda col=col: keys[col][:m], source, m)
            np.testing.assert_array_equal(got, stable_order(keys[col][:m]))
    assert orders.ready("num", source, 2500)
    # too many changed rows at once: the order is made again whole
    source = (object(),)
    orders.rows_changed(source, set(), np.arange(MOVED_MAX + 1))
    assert not orders.ready("num", source, 2500) and orders._perm == {}
