"""The store's one error boundary (issue 19 cases 1, 2, 3, 8, 9, 10, 11; issue 17 case 1): every
SQLite failure reaches the caller as a StoreError that says what happened and whether an edit was
written; busy stores say "in exclusive use by another process"; no lock of memviz's is dropped."""
from __future__ import annotations

import builtins
import hashlib
import os
import resource
import signal
import subprocess
import sys
import time

import apsw
import pytest
from bad_stores import (
    LockHolder,
    bit_flips,
    cli_env,
    foreign_wal,
    index_missing_rows,
    pristine_sample,
    rollback_journal,
    sample_copy,
    schema_twice_in_wal,
    some_id,
    with_pending_wal,
)

import memviz.store as ms
from memviz.cli import main
from memviz.edits import Correct, EditKept, History, SetImportance, SoftDelete
from memviz.edits.verify import problems
from memviz.frameworks import open_source
from memviz.store import connection, snapshot
from memviz.store.errors import IN_USE, translate
from memviz.store.fileheader import check_header


def _count(path) -> int:
    c = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return c.execute("SELECT count(*) FROM memories").fetchone()[0]
    finally:
        c.close()


SAMPLE_N = _count(pristine_sample())  # the bundled sample's rows (it is regenerated now and then)


@pytest.fixture(autouse=True)
def short_busy_wait(monkeypatch):
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 300)


def digest(path) -> str:
    with open(path, "rb") as f:  # no store is open on it here
        return hashlib.sha256(f.read()).hexdigest()


def cli(*args, preexec=None, env=None):
    return subprocess.run([sys.executable, "-m", "memviz", *map(str, args)], check=False, capture_output=True,
                          text=True, env=env or cli_env(), preexec_fn=preexec, timeout=120)


# ------------------------------------------------------------------ translate
@pytest.mark.parametrize("err, cls, words", [
    (apsw.CorruptError("database disk image is malformed"), ms.CorruptStoreError, "damaged"),
    (apsw.NotADBError("file is not a database"), ms.CorruptStoreError, "damaged"),
    (apsw.BusyError("database is locked"), ms.BusyError, IN_USE),
    (apsw.LockedError("database table is locked"), ms.BusyError, IN_USE),
    (apsw.ReadOnlyError("attempt to write a readonly database"), ms.ReadOnlyError, "cannot be written"),
    (apsw.CantOpenError("unable to open database file"), ms.ReadOnlyError, "cannot open"),
    (apsw.FullError("database or disk is full"), ms.DiskFullError, "disk is full"),
    (apsw.NoMemError("out of memory"), ms.OutOfMemoryError, "out of memory"),
    (apsw.IOError("disk I/O error"), ms.StoreIOError, "disk read or write error"),
    (apsw.SQLError("Error inserting id into rowids shadow table: disk I/O error"), ms.StoreIOError, "disk read"),
    (apsw.SQLError("vec0: database or disk is full"), ms.DiskFullError, "disk is full"),
])
def test_every_sqlite_failure_becomes_a_store_error_saying_what_to_do(err, cls, words):
    out = translate(err, "/data/m.db", doing="writing to it", written=False)
    assert type(out) is cls and isinstance(out, ms.StoreError)
    text = str(out)
    assert words in text and "/data/m.db" in text and "What to do:" in text and "Nothing was written" in text
    assert out.written is False


def test_program_errors_are_not_disguised_as_store_errors():
    err = apsw.ThreadingViolationError("in use in another thread")
    assert translate(err) is err  # the edit controller retries these itself
    assert str(translate(ValueError("x"))) == "x"


# ------------------------------------------------------------------ case 1: damage quick_check may miss
def test_bit_flipped_store_opens_read_only_and_its_failing_reads_are_store_errors(tmp_path):
    p = bit_flips(tmp_path)
    before = digest(p)
    with ms.open(str(p)) as s:
        assert s.read_only and "quick_check found damage" in s.read_only_reason
        with pytest.raises(ms.CorruptStoreError, match="damaged.*memviz check"):
            s.arrays(preview=40)   # the rows' texts are on the damaged pages (the rest is in the read index)
        assert s.entities(), "a read the damage does not touch is still answered"
        with pytest.raises(ms.ReadOnlyError):
            History(s).perform(SoftDelete(some_id(pristine_sample())))
    assert digest(p) == before


def test_stats_on_a_bit_flipped_store_prints_what_it_can_read_and_names_the_rest(tmp_path):
    p = bit_flips(tmp_path)
    r = subprocess.run([sys.executable, "-m", "memviz", "stats", str(p)], capture_output=True, text=True,
                       env=cli_env(), timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "read-only: " in r.stdout and "time span: " in r.stdout  # what the damage does not touch
    assert "--read-only" not in r.stdout, "stats' own read-only open is not a reason the user must act on"
    assert "unreadable: counts: " in r.stdout and "damaged" in r.stdout


def test_an_index_out_of_step_refuses_the_edit_whole_and_makes_the_store_read_only(tmp_path):
    p = index_missing_rows(tmp_path)
    mid = some_id(pristine_sample())  # the damaged index would answer the lookup wrongly
    with ms.open(str(p)) as s:
        assert not s.read_only  # quick_check does not compare an index with its table
        audit = s.conn.execute("SELECT count(*) FROM memviz_audit").fetchone()[0]
        with pytest.raises(ms.CorruptStoreError, match="Nothing was written") as e:
            History(s).perform(SoftDelete(mid))
        assert e.value.written is False and not s.conn.in_transaction
        assert s.get(mid)["valid_until"] is None
        assert s.conn.execute("SELECT count(*) FROM memviz_audit").fetchone()[0] == audit
        assert s.read_only and "damage was found while writing" in s.read_only_reason
        with pytest.raises(ms.ReadOnlyError):
            History(s).perform(SetImportance(mid, 7))


# ------------------------------------------------------------------ case 2: another store's -wal
def test_a_foreign_wal_is_named_and_never_deleted(tmp_path):
    p = foreign_wal(tmp_path)
    wal = digest(str(p) + "-wal")
    try:
        s = ms.open(str(p))
    except ms.CorruptStoreError as e:
        assert "-wal file lies beside it" in str(e)
    else:
        with s:
            assert s.read_only and "-wal file lies beside it" in s.read_only_reason
            try:
                s.counts()
            except ms.StoreError as e:
                assert "move that -wal aside" in str(e)
    assert os.path.exists(str(p) + "-wal") and digest(str(p) + "-wal") == wal


@pytest.mark.parametrize("make", [foreign_wal, schema_twice_in_wal])
def test_every_damage_message_names_the_wal_beside_the_file(tmp_path, make, capsys):
    """Whatever SQLite's words for the damage ("database disk image is malformed", "malformed
    database schema … already exists"), every message about it names a -wal with content beside
    the file, which may be another copy's; the -wal is never deleted."""
    p = make(tmp_path)
    wal = digest(str(p) + "-wal")
    said = []
    try:
        s = ms.open(str(p))
    except ms.CorruptStoreError as e:
        said.append(str(e))
    else:
        with s:
            said.append(s.read_only_reason)
            for read in (s.counts, s.arrays, s.provenance):
                try:
                    read()
                except ms.StoreError as e:
                    said.append(str(e))
    for argv in (["stats", str(p)], ["query", str(p), "coffee"]):
        assert main(argv) == 2 or argv[0] == "stats"
        said.append(capsys.readouterr().err)
    said = [m for m in said if m]
    assert said and all("-wal file lies beside it" in m and "move that -wal aside" in m for m in said), said
    assert digest(str(p) + "-wal") == wal


# ------------------------------------------------------------------ case 3: read-only media
def _read_only_folder(monkeypatch, folder):
    """The folder answers "not writable" as a mounted backup does (root writes anywhere, so the OS is
    asked the way test_unwritable_folder_opens_read_only asks it)."""
    real = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if (
        mode == os.W_OK and os.path.abspath(os.fspath(path)) == str(folder)) else real(path, mode, **kw))


def test_wal_store_on_read_only_media_is_read_through_a_copy_with_its_wal(tmp_path, monkeypatch):
    p = with_pending_wal(tmp_path / "media")
    listing = sorted(os.listdir(p.parent))
    _read_only_folder(monkeypatch, p.parent)
    s = ms.open(str(p))
    try:
        assert s.read_only and "temporary copy" in s.read_only_reason and "cannot be edited" in s.read_only_reason
        assert s.conn.execute("SELECT importance FROM memories WHERE rowid=1").fetchone()[0] == 9.5  # the -wal's commit
        copy = s.conn_path
        assert os.path.dirname(copy) != str(p.parent)
        with s.reopen() as other:
            assert other.counts()["total"] == s.counts()["total"]
        assert os.path.exists(copy)  # the first Store still reads it
    finally:
        s.close()
    assert not os.path.exists(copy)
    assert sorted(os.listdir(p.parent)) == listing  # no -shm, nothing written beside the store


def test_wal_store_on_read_only_media_without_wal_is_read_immutable(tmp_path, monkeypatch):
    p = sample_copy(tmp_path / "media")
    listing = sorted(os.listdir(p.parent))
    _read_only_folder(monkeypatch, p.parent)
    with ms.open(str(p)) as s:
        assert s.read_only and "immutable" in s.read_only_reason
        assert s.counts()["total"] == SAMPLE_N
        assert len(s.arrays()) == SAMPLE_N
    assert sorted(os.listdir(p.parent)) == listing


# ------------------------------------------------------------------ case 8: a full disk
def test_full_store_reports_disk_full_and_leaves_no_transaction(tmp_path):
    p = sample_copy(tmp_path)
    mid = some_id(p)
    with ms.open(str(p)) as s:
        pages = s.conn.execute("PRAGMA page_count").fetchone()[0]
        s.conn.execute(f"PRAGMA max_page_count={pages}")
        with pytest.raises(ms.DiskFullError, match="disk is full.*Nothing was written") as e:
            History(s).perform(Correct(mid, "a much longer text " * 400))
        assert e.value.written is False and not s.conn.in_transaction
        assert s.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == SAMPLE_N
        assert problems(s) == []


def _capped(limit):
    def pre():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return pre


@pytest.mark.parametrize("journal", [False, True])
def test_file_size_limit_during_correct_says_nothing_was_written(tmp_path, journal):
    p = rollback_journal(tmp_path) if journal else sample_copy(tmp_path)
    mid = some_id(p)
    limit = os.path.getsize(p) if journal else 60_000  # the journal / the WAL cannot grow past this
    r = cli("edit", p, "correct", mid, "a corrected text", preexec=_capped(limit))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "Nothing was written" in r.stderr and "cannot rollback" not in r.stderr
    with ms.open(str(p)) as s:
        assert s.get(mid)["valid_until"] is None and s.counts()["total"] == SAMPLE_N
        assert problems(s) == []


# ------------------------------------------------------------------ case 9: out of memory
def test_out_of_memory_is_a_message_and_the_store_is_untouched(tmp_path):
    p = sample_copy(tmp_path)
    before = digest(p)
    failures = []
    for limit in (16 << 20, 1 << 20, 512 << 10, 256 << 10):  # SQLite's heap, capped ever lower
        old = apsw.hard_heap_limit(limit)
        try:
            for read in (lambda s: s.counts(), lambda s: s.arrays(), lambda s: s.fts_search("coffee")):
                try:
                    with ms.open(str(p), read_only=True) as s:
                        read(s)
                except ms.StoreError as e:
                    failures.append(e)
        finally:
            apsw.hard_heap_limit(old)
    assert failures, "the cap really bites"
    assert all(isinstance(e, ms.OutOfMemoryError) and "out of memory" in str(e) for e in failures)
    assert digest(p) == before


# ------------------------------------------------------------------ busy: issue 17.1 and 19.10
@pytest.mark.parametrize("how, make", [("exclusive-mode", sample_copy), ("begin-exclusive", rollback_journal)])
def test_store_in_exclusive_use_is_named_by_every_cli_command(tmp_path, how, make):
    p = make(tmp_path)
    mid = some_id(p)
    with LockHolder(p, how):
        for args in (("stats", p), ("query", p, "coffee"), ("edit", p, "importance", "7", mid), ("edit", p, "retired")):
            r = cli(*args)
            assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
            assert "in exclusive use by another process" in r.stderr
    r = cli("edit", p, "importance", "7", mid)
    assert r.returncode == 0, r.stderr


def test_edit_during_begin_exclusive_is_kept_and_written_on_retry(tmp_path):
    p = rollback_journal(tmp_path)
    mid = some_id(p)
    with ms.open(str(p)) as s:
        h = History(s, attempts=2, pause=0.01)
        with LockHolder(p, "begin-exclusive"):
            with pytest.raises(EditKept, match="in exclusive use by another process") as e:
                h.perform(SetImportance(mid, 7))
            assert len(e.value.kept) == 1 and len(h.pending) == 1 and not s.conn.in_transaction
        h.retry()
        assert len(h.pending) == 0 and s.get(mid)["importance"] == 7


# ------------------------------------------------------------------ case 11: memviz keeps its own locks
def test_no_code_opens_the_database_file_outside_sqlite_while_a_store_is_open(tmp_path, monkeypatch):
    p = sample_copy(tmp_path)
    monkeypatch.setattr(snapshot, "MIN_ROWS", 10)  # make the snapshot path run on this small store
    monkeypatch.setattr(snapshot, "WRITE_DELAY", 0)
    monkeypatch.setattr(snapshot, "folder", lambda: tmp_path / "snaps")
    opened = []
    real_open, real_os_open = builtins.open, os.open

    def watch(path, *a, **kw):
        if isinstance(path, (str, bytes, os.PathLike)) and os.path.realpath(os.fsdecode(path)) == os.path.realpath(p):
            opened.append(path)
        return (real_os_open if watch.os else real_open)(path, *a, **kw)

    def watch_open(path, *a, **kw):
        watch.os = False
        return watch(path, *a, **kw)

    def watch_os_open(path, *a, **kw):
        watch.os = True
        return watch(path, *a, **kw)

    with ms.open(str(p)) as s:
        monkeypatch.setattr(builtins, "open", watch_open)
        monkeypatch.setattr(os, "open", watch_os_open)
        s.arrays(snapshot=True)
        snapshot.file_state(str(p))
        with ms.open(str(p), read_only=True) as again:  # a second open of the same store (the window's reload)
            again.counts()
        check_header(str(p))
        History(s).perform(SetImportance(some_id(p), 4))
        monkeypatch.undo()
    assert opened == []


def test_reading_the_header_keeps_the_read_lock_against_another_process(tmp_path):
    p = rollback_journal(tmp_path)
    with ms.open(str(p)) as s:
        s.conn.execute("BEGIN")
        s.conn.execute("SELECT count(*) FROM memories").fetchone()  # a read transaction: SHARED lock held
        check_header(str(p))
        snapshot.file_state(str(p))
        ms.open(str(p), read_only=True).close()
        writer = ("import apsw,sys; c=apsw.Connection(sys.argv[1]); c.set_busy_timeout(0)\n"
                  "try:\n c.execute('BEGIN EXCLUSIVE'); print('wrote')\nexcept apsw.BusyError: print('locked')")
        r = subprocess.run([sys.executable, "-c", writer, str(p)], check=False, capture_output=True, text=True,
                           timeout=60)
        s.conn.execute("COMMIT")
    assert r.stdout.strip() == "locked", r.stderr


# ------------------------------------------------------------------ a writer that stopped mid-write
_KILLED_WRITER = r"""
import os, sys, apsw
c = apsw.Connection(sys.argv[1])
c.execute("PRAGMA cache_size=2")  # the change spills into the file before COMMIT: the journal is hot
c.execute("BEGIN IMMEDIATE")
c.execute("UPDATE memories SET content = content || ' (half written)'")
os._exit(0)
"""


def test_store_left_mid_write_by_a_killed_process_is_recovered_by_sqlite_on_open(tmp_path):
    p = rollback_journal(tmp_path)
    subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(p)], check=True, timeout=60)
    assert os.path.exists(str(p) + "-journal")
    with pytest.raises(ms.ReadOnlyError, match="unfinished write.*without --read-only"):
        ms.open(str(p), read_only=True)  # recovery writes, so read-only asks first
    with ms.open(str(p)) as s:
        assert not s.read_only
        assert s.conn.execute("SELECT count(*) FROM memories WHERE content LIKE '%(half written)'").fetchone()[0] == 0
        assert problems(s) == []


def test_a_busy_open_waits_once_and_says_how_long(tmp_path, monkeypatch):
    """The CLI's open of a store in exclusive use waits SQLite's busy timeout once, as its message
    says (the framework probe's read waited first, then the native open again: 10.6 s for "5 s")."""
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 2000)
    p = sample_copy(tmp_path)
    with LockHolder(p, "exclusive-mode"):
        began = time.monotonic()
        with pytest.raises(ms.BusyError, match="memviz waited 2 s") as e:
            open_source(str(p), read_only=True)
        waited = time.monotonic() - began
    assert "in exclusive use by another process" in str(e.value)
    assert waited < 2 + 1.5, f"waited {waited:.1f} s where the message says 2 s"
