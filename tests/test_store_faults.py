"""SQLite's fault-injection loop, run on memviz's edits (issue 19 case 8).

A VFS fails the Nth xWrite (as a full disk) or xSync (as an I/O error), once or for good, for
N = 1, 2, 3 ... until the edit completes without meeting the fault. After every run the store is
closed and reopened without faults, and then: SQLite's integrity_check and memviz's own check
(`edits.verify.problems`) find nothing; the edit is wholly there or wholly absent; and when the
edit raised, it raised a StoreError whose `written` (and message) agrees with what is in the file.
"""
from __future__ import annotations

import time

import apsw
import numpy as np
import pytest

import memviz.store as ms
from memviz.edits import Confirm, Correct, History, Restore, SetImportance, SetTags, SoftDelete
from memviz.edits.verify import problems

MODEL, DIM = "fault-test", 8
BASE_VFS = apsw.vfs_names()[0]  # the system's default (unix), which the faulty one wraps
MAX_POINTS = 400  # far above what any edit needs (about 10-30): the loop must end on its own


class Faults:
    """What to fail: the `at`th call of `kind` ("write" | "sync"), then every later one if `persist`."""

    def __init__(self):
        self.armed = False
        self.kind, self.at, self.persist = "write", 0, False
        self.calls = 0
        self.hit = False

    def arm(self, kind: str, at: int, persist: bool) -> None:
        self.kind, self.at, self.persist = kind, at, persist
        self.calls, self.hit, self.armed = 0, False, True

    def disarm(self) -> None:
        self.armed = False

    def check(self, kind: str) -> None:
        if not self.armed or kind != self.kind:
            return
        self.calls += 1
        if self.calls == self.at or (self.persist and self.calls > self.at):
            self.hit = True
            raise (apsw.FullError if kind == "write" else apsw.IOError)(f"injected {kind} fault")


class FaultyFile(apsw.VFSFile):
    def __init__(self, faults, name, flags):
        super().__init__(BASE_VFS, name, flags)
        self.faults = faults
        self.read_only = bool(flags[0] & apsw.SQLITE_OPEN_READONLY)

    def xLock(self, level):
        try:
            return super().xLock(level)
        except apsw.IOError:
            # A read-only handle cannot take the write lock a closing WAL reader tries for; SQLite
            # ignores that failure, but through Python apsw would raise it at close: say "busy".
            if self.read_only and level == apsw.SQLITE_LOCK_EXCLUSIVE:
                raise apsw.BusyError("read-only handle") from None
            raise

    def xWrite(self, data, offset):
        self.faults.check("write")
        return super().xWrite(data, offset)

    def xSync(self, flags):
        self.faults.check("sync")
        return super().xSync(flags)


class FaultyVFS(apsw.VFS):
    def __init__(self, faults):
        self.faults = faults
        super().__init__("memviz-faults", BASE_VFS, makedefault=True)

    def xOpen(self, name, flags):
        return FaultyFile(self.faults, name, flags)


@pytest.fixture(scope="module", params=["wal", "delete"])
def template(request, tmp_path_factory):
    """A small store (WAL, as memviz makes them, or rollback-journal, as agents' often are): 12
    memories with 8-d vectors, one of them retired, whole in its file."""
    path = tmp_path_factory.mktemp("faults") / "template.db"
    s = ms.create(str(path))
    vecs = np.random.default_rng(1).normal(size=(12, DIM)).astype(np.float32)
    s.insert_memories([{"id": f"m{i}", "kind": "fact", "agent": "helper", "content": f"fact number {i} about tea",
                        "importance": 5, "embedding": v, "embedding_model": MODEL, "tags": ["seed"]}
                       for i, v in enumerate(vecs)])
    s.set_valid_until("m5", 1_700_000_000)
    s.close()
    if request.param == "delete":
        c = apsw.Connection(str(path))
        c.execute("PRAGMA journal_mode=DELETE")
        c.close()
    return path.read_bytes()


class FixedEmbedder:
    model, dim = MODEL, DIM

    def embed_one(self, text):
        return np.full(DIM, 1 / np.sqrt(DIM), np.float32)


EDITS = {
    "correct": lambda: Correct("m1", "fact number 1, corrected", embedder=FixedEmbedder()),
    "confirm": lambda: Confirm(["m2", "m3"]),
    "delete": lambda: SoftDelete(["m4", "m6"]),
    "restore": lambda: Restore("m5"),
    "importance": lambda: SetImportance(["m7", "m8"], 9),
    "tags": lambda: SetTags(["m9", "m10"], add=["checked"]),
}
MODES = [("write", False), ("write", True), ("sync", False), ("sync", True)]


def summary(path) -> tuple:
    """The store as the edits see it, without ids and times an edit makes anew."""
    c = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = c.execute("SELECT content, importance, valid_until IS NULL, protected, decay_rate, tags "
                         "FROM memories ORDER BY 1, 2, 3, 4, 5, 6").fetchall()
        audits = c.execute("SELECT count(*) FROM memviz_audit").fetchone()[0]
        return tuple(rows), audits
    finally:
        c.close()


def run_once(path, template_bytes, edit, faults, kind=None, at=0, persist=False):
    """One run: a fresh store, the edit under the fault, then a fault-free reopen. Returns
    (raised StoreError or None, whether the fault was met, summary after)."""
    for suffix in ("", "-wal", "-shm"):
        p = path.with_name(path.name + suffix)
        if p.exists():
            p.unlink()
    path.write_bytes(template_bytes)
    store = ms.open(str(path))
    error = None
    try:
        if kind:
            faults.arm(kind, at, persist)
        try:
            History(store, attempts=1).perform(edit())
        except ms.StoreError as e:
            error = e
        assert not store.conn.in_transaction, "a failed edit left its transaction open"
    finally:
        faults.disarm()
        try:
            store.close()
        except ms.StoreError:
            pass  # closing checkpoints; a failure there leaves the WAL, which the reopen reads
    hit = faults.hit
    with ms.open(str(path)) as again:
        found = problems(again)
    assert found == [], found
    return error, hit, summary(path)


def test_every_edit_is_whole_or_absent_under_every_write_and_sync_fault(tmp_path, template):
    faults = Faults()
    vfs = FaultyVFS(faults)
    path = tmp_path / "m.db"
    points, started = 0, time.perf_counter()
    report, outcomes = {}, {}
    try:
        for name, edit in EDITS.items():
            path.write_bytes(template)
            before = summary(path)
            error, _, after = run_once(path, template, edit, faults)
            assert error is None and after != before, f"{name} does not change the store"
            for kind, persist in MODES:
                for at in range(1, MAX_POINTS):
                    error, hit, now = run_once(path, template, edit, faults, kind, at, persist)
                    if not hit:
                        assert error is None and now == after, f"{name}: completed without the fault but differs"
                        break
                    points += 1
                    label = f"{name} {kind} #{at}{' onwards' if persist else ''}"
                    key = "no error" if error is None else {False: "not written", True: "written"}.get(
                        error.written, "unknown")
                    outcomes[key] = outcomes.get(key, 0) + 1
                    assert now in (before, after), f"{label}: half an edit is in the store"
                    if error is None:
                        assert now == after, f"{label}: no error reported, yet the edit is not there"
                        continue
                    assert error.written is not True or now == after, f"{label}: said written, but it is not"
                    assert error.written is not False or now == before, f"{label}: said nothing was written, but it was"
                    text = str(error)
                    if error.written is False:
                        assert "Nothing was written" in text, text
                    elif error.written is True:
                        assert "was written" in text, text
                    else:
                        assert "not known whether" in text, text
                else:
                    pytest.fail(f"{name} {kind}: still failing after {MAX_POINTS} fault points")
                report[(name, kind, persist)] = at - 1
    finally:
        vfs.unregister()
    elapsed = time.perf_counter() - started
    print(f"\nfault-injection loop: {points} fault points over {len(EDITS)} edits in {elapsed:.1f} s; "
          f"outcomes {outcomes}; points per (edit, kind, persistent): {report}")
    assert points >= len(EDITS) * len(MODES)  # every edit met at least one fault of each kind
