"""A malformed-file corpus, the other technique of SQLite's own tests (issue 19): hypothesis picks
truncations, bit flips, header bytes, whole pages and schema rows of a small store to damage.
Opening each must refuse with a StoreError or open (read-only when the damage is seen), never
write to the file (its hash is unchanged), and never raise anything but a StoreError; the reads a
damaged store can still answer are answered."""
from __future__ import annotations

import hashlib
import os
import tempfile

import apsw
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memviz.store as ms

EXAMPLES = 120  # per kind of damage; derandomized, so CI sees the same corpus every run


def _build() -> bytes:
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "small.db")
        s = ms.create(p)
        vecs = np.random.default_rng(3).normal(size=(30, 8)).astype(np.float32)
        s.insert_memories([{"id": f"m{i:02d}", "kind": ("fact", "episode")[i % 2], "agent": "helper",
                            "content": f"memory {i}: " + "tea and biscuits " * (i % 7), "importance": 1 + i % 9,
                            "embedding": v, "embedding_model": "corpus", "tags": ["t"], "source_ids":
                            [f"m{i - 1:02d}"] if i else []} for i, v in enumerate(vecs)])
        s.set_valid_until("m03", 1_700_000_000)
        s.close()
        with open(p, "rb") as f:  # the store is closed
            return f.read()


SMALL = _build()
SIZE = len(SMALL)
PAGE = int.from_bytes(SMALL[16:18], "big")
PAGES = SIZE // PAGE
SCHEMA_EDITS = ("garbage", "rename", "drop", "rootpage", "type")


def _schema_edit(path: str, pick: int, how: str) -> None:
    c = apsw.Connection(path)
    try:
        rows = c.execute("SELECT rowid, type, name, rootpage FROM sqlite_master ORDER BY rowid").fetchall()
        rowid, _, _, root = rows[pick % len(rows)]
        c.execute("PRAGMA writable_schema=ON")
        sql = {"garbage": "UPDATE sqlite_master SET sql = 'CREATE TABLE broken(' WHERE rowid = ?",
               "rename": "UPDATE sqlite_master SET sql = replace(sql, 'content', 'kontent') WHERE rowid = ?",
               "drop": "DELETE FROM sqlite_master WHERE rowid = ?",
               "rootpage": f"UPDATE sqlite_master SET rootpage = {(root or 0) + 1} WHERE rowid = ?",
               "type": "UPDATE sqlite_master SET type = 'view' WHERE rowid = ?"}[how]
        c.execute(sql, (rowid,))
        c.execute("PRAGMA writable_schema=OFF")
    except apsw.Error:
        pass  # SQLite refused this edit: the file stays as it was, still a valid case
    finally:
        c.close()


def _check(data: bytes | None, schema: tuple[int, str] | None = None) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "bad.db")
        with open(p, "wb") as f:  # no store is open yet
            f.write(SMALL if data is None else data)
        if schema is not None:
            _schema_edit(p, *schema)
        with open(p, "rb") as f:
            before = hashlib.sha256(f.read()).hexdigest()
        try:
            store = ms.open(p)
        except ms.StoreError:
            pass
        else:
            with store:
                answered = 0
                for read in (lambda s: s.counts(), lambda s: s.arrays(), lambda s: s.time_span(),
                             lambda s: s.get_many(["m00", "m10", "m29"]), lambda s: s.fts_search("tea"),
                             lambda s: s.provenance(), lambda s: s.entities(), lambda s: s.history("m03")):
                    try:
                        read(store)
                        answered += 1
                    except ms.StoreError:
                        pass
                if not store.read_only:
                    assert answered == 8, "a store that opened writable (no damage seen) answers every read"
        for extra in ("-wal", "-shm", "-journal"):
            assert not os.path.exists(p + extra) or os.path.getsize(p + extra) == 0 or extra == "-shm"
        with open(p, "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == before, "opening a damaged store wrote to it"


corpus = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow])


@corpus
@given(st.one_of(st.tuples(st.just("truncate"), st.integers(0, SIZE - 1), st.just(0)),
                 st.tuples(st.just("header"), st.integers(0, 99), st.integers(0, 255))))
def test_truncated_or_header_byte_changed(damage):
    how, at, value = damage
    if how == "truncate":
        _check(SMALL[:at])
    else:
        data = bytearray(SMALL)
        data[at] = value
        _check(bytes(data))


@corpus
@given(st.lists(st.tuples(st.integers(0, SIZE - 1), st.integers(0, 7)), min_size=1, max_size=40))
def test_bit_flips(flips):
    data = bytearray(SMALL)
    for at, bit in flips:
        data[at] ^= 1 << bit
    _check(bytes(data))


@corpus
@given(st.integers(1, PAGES), st.sampled_from(["zero", "noise", "copy"]), st.integers(0, 2 ** 32 - 1))
def test_page_overwritten(page, how, seed):
    data = bytearray(SMALL)
    start = (page - 1) * PAGE + (100 if page == 1 else 0)
    end = page * PAGE
    if how == "zero":
        data[start:end] = bytes(end - start)
    elif how == "noise":
        data[start:end] = np.random.default_rng(seed).integers(0, 256, end - start, dtype=np.uint8).tobytes()
    else:  # another page's bytes in its place
        other = seed % PAGES
        data[start:end] = SMALL[other * PAGE + (start - (page - 1) * PAGE):(other + 1) * PAGE]
    _check(bytes(data))


@corpus
@given(st.integers(0, 40), st.sampled_from(SCHEMA_EDITS))
def test_schema_edited(pick, how):
    _check(None, (pick, how))


def test_damage_a_read_meets_makes_the_store_read_only():
    """A bit flip quick_check does not see (hypothesis found this one): the store opens writable,
    the first read that meets the damage says so, and from then on the store refuses edits."""
    data = bytearray(SMALL)
    data[20447] ^= 1
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "bad.db")
        with open(p, "wb") as f:
            f.write(bytes(data))
        with ms.open(p) as store:
            if store.read_only:
                pytest.fail("quick_check now sees this damage: pick another example for this test")
            with pytest.raises(ms.CorruptStoreError, match="damaged"):
                store.counts()
            assert store.read_only and "damage was found while reading" in store.read_only_reason
            with pytest.raises(ms.ReadOnlyError):
                store.set_valid_until("m05", 1_700_000_000)
