"""open_and_read(check_later=True): SQLite's quick check of a large store runs after the read
(the window is up meanwhile); until it has passed, edits are refused with the reason, and
damage it finds stays as the read-only reason, as when checking first."""
import threading

import apsw
import pytest

import memviz.store as ms
from memviz.store import store as store_mod
from tests.test_store_bad_input import filled


@pytest.fixture
def later(monkeypatch):
    """Every file counts as large (the tests' stores are small); the real check can be held back."""
    monkeypatch.setattr(store_mod, "CHECK_LATER_BYTES", 0)
    gate = threading.Event()
    gate.set()
    real = store_mod._quick_check

    def held(conn, path):
        gate.wait(30)
        return real(conn, path)
    monkeypatch.setattr(store_mod, "_quick_check", held)
    return gate


def damaged(tmp_path, index="idx_memories_event_time"):
    """A store whose `index` page is broken: the table reads, quick_check reports damage."""
    p = filled(tmp_path / "i.db")
    conn = apsw.Connection(str(p))
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name=?", (index,)).fetchone()[0]
    conn.close()
    data = bytearray(p.read_bytes())
    for i in range((root - 1) * 4096, (root - 1) * 4096 + 12):
        data[i] ^= 0xFF
    p.write_bytes(bytes(data))
    return str(p)


def test_edits_wait_for_the_check_then_the_store_is_writable(tmp_path, later):
    later.clear()
    store, arrays = ms.open_and_read(str(filled(tmp_path / "ok.db")), lambda s: s.arrays(), check_later=True)
    with store:
        assert len(arrays) == 60 and store.checking and store.read_only
        assert store.read_only_reason == store_mod.CHECKING
        with pytest.raises(ms.ReadOnlyError, match="quick check of the file is still running"):
            store.set_valid_until(arrays.ids[0], 1.0)
        other = store.reopen()   # a second connection (the check dialog's) waits too
        assert other.read_only
        later.set()
        assert store.checked() == [] and not store.checking and not store.read_only
        store.set_valid_until(arrays.ids[0], 1.0)
        assert not other.read_only
        other.set_valid_until(arrays.ids[1], 1.0)
        other.close()
    assert [r[0] for r in apsw.Connection(str(tmp_path / "ok.db")).execute(
        "SELECT count(*) FROM memories WHERE valid_until IS NOT NULL")] == [2]


def test_damage_found_after_the_read_makes_the_store_read_only(tmp_path, later):
    store, arrays = ms.open_and_read(damaged(tmp_path), lambda s: s.arrays(), check_later=True)
    with store:
        assert len(arrays) == 60
        damage = store.checked()
        assert damage and not store.checking
        assert store.read_only and "quick_check found damage" in store.read_only_reason
        assert "still running" not in store.read_only_reason
        with pytest.raises(ms.ReadOnlyError, match="quick_check found damage"):
            store.set_valid_until(arrays.ids[0], 1.0)


def test_a_read_that_fails_waits_for_the_check_that_explains_it(tmp_path, later):
    def read(_store):
        raise apsw.CorruptError("database disk image is malformed")
    with pytest.raises(ms.CorruptStoreError, match="is damaged and cannot be read"):
        ms.open_and_read(damaged(tmp_path), read, check_later=True)


def test_read_only_opens_keep_their_reason_once_checked(tmp_path, later):
    store, _ = ms.open_and_read(str(filled(tmp_path / "ok.db")), lambda s: None, read_only=True, check_later=True)
    with store:
        assert store.checked() == []
        assert store.read_only_reason == "opened with --read-only"


def test_small_files_are_checked_beside_the_read_as_before(tmp_path):
    store, _ = ms.open_and_read(damaged(tmp_path), lambda s: s.arrays(), check_later=True)
    with store:
        assert not store.checking and "quick_check found damage" in store.read_only_reason
