"""A copy of a large store's arrays on local disk, so reopening it unchanged skips the scan.

Reading a large store's memories out of SQLite is a scan of every row (arrays.py); the same
columns come back from one flat file in a fraction of that time (bench/store.py's "snapshot
load"), the embedding matrix memory-mapped
(copy-on-write) so its pages are read when first used. A snapshot is keyed by the store's
real path and the state of its files: inode, size and modification time (ns) of the database
and of its -wal file, and the header fields SQLite rewrites on every commit. Every committed
write changes some of those (a commit appends to the WAL or, in rollback mode, rewrites the file
and bumps its change counter), so a changed store never matches, even on a file system with a
coarse clock; an absent and an empty -wal are the same state (opening and closing without
writing leaves that). The state is taken before the scan and the snapshot is only written if
it still holds after it, so a write during the scan cannot be saved under the old key.

Snapshots live in the user cache folder, one per store path, written in a background thread to
a temporary name and renamed into place (the file is chosen when the write is requested, so a
write that runs late still lands where it was meant to go); the KEEP most recently used are kept. Anything odd
(missing, unreadable, another format, texts that do not split back) means "no snapshot" and a
normal read follows: a snapshot only ever saves time, it is never trusted over the store.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from concurrent.futures import Future

import apsw
import numpy as np

from ..background import in_thread
from .arrays import MemoryArrays, one_of_each
from .fileheader import read_head

FORMAT = 2  # bump when what a snapshot holds changes: older ones are then ignored
MIN_ROWS = 20_000   # smaller stores are read quickly: not worth the disk (bench/store.py's "snapshot load")
KEEP = 4
WRITE_DELAY = 3.0   # seconds: the write waits until the window has drawn the store it was read for
_NUMERIC = ("rowid", "importance", "event_time", "created_at", "last_accessed", "valid_until", "confidence",
            "decay_rate", "access_count", "protected", "embedding", "has_embedding", "bad_json", "bad_text",
            "bad_value")
_TEXTS = ("ids", "kind", "agent", "preview")


def folder():
    from memviz.userdirs import user_cache_dir
    return user_cache_dir() / "snapshots"


def file_state(path: str) -> dict:
    """What a commit to the store would change: identity, size and mtime of the file and its WAL,
    and the headers SQLite updates on commit (the file change counter of a rollback-journal
    store; the WAL's checkpoint sequence and salts, new at every WAL reset), so a coarse
    file-system clock cannot hide a write."""
    real = os.path.realpath(path)

    def stat(p, head: slice):
        try:
            st = os.stat(p)
            # the database's own bytes through SQLite's VFS: an open()/close() here would drop
            # this process's locks on it (fileheader.read_head)
            header = (read_head(p, head.stop) if p == real else _read(p, head.stop))[head]
        except (FileNotFoundError, apsw.CantOpenError):
            return None
        if p.endswith("-wal") and st.st_size == 0:
            return None
        return [st.st_ino, st.st_size, st.st_mtime_ns, header.hex()]
    return {"path": real, "db": stat(real, slice(24, 28)), "wal": stat(real + "-wal", slice(0, 32))}


def _read(p: str, n: int) -> bytes:
    with open(p, "rb") as fh:  # the -wal holds no lock of SQLite's, so a plain read is safe
        return fh.read(n)


MAGIC = b"MVZSNAP1"
_ALIGN = 64


def _file_for(state: dict):
    return folder() / (hashlib.sha1(state["path"].encode("utf-8", "surrogatepass")).hexdigest()[:20] + ".snap")


def load(path: str, preview: int) -> MemoryArrays | None:
    """The snapshot of this store in its current state, or None; with previews of `preview`
    characters (0: none), cut from a snapshot's longer ones (the window's), so that a read asking
    for fewer neither scans the store nor writes over the window's snapshot."""
    state = file_state(path)
    f = _file_for(state)
    try:
        with open(f, "rb") as fh:
            meta = _meta(fh)
            if meta is None or meta.get("state") != state or not meta.get("preview", -1) >= preview >= 0:
                return None
            n, cols = int(meta["n"]), {}
            for name, dtype, shape, offset in meta["fields"]:
                if name == "embedding":  # 100 MB at 100k x 256: mapped, not read
                    cols[name] = np.memmap(f, dtype=dtype, mode="c", offset=offset, shape=tuple(shape)).view(
                        np.ndarray) if np.prod(shape) else np.zeros(shape, dtype)
                    continue
                fh.seek(offset)
                cols[name] = np.fromfile(fh, dtype=dtype, count=int(np.prod(shape))).reshape(shape)
        os.utime(f)  # most recently used
        raw = {k: cols.pop(k) for k in _TEXTS if k in cols}
        if not preview:
            raw.pop("preview", None)
        texts = {k: _split(v, n, shared=k in ("kind", "agent")) for k, v in raw.items()}
        if any(t is None for t in texts.values()) or len(cols["rowid"]) != n:
            return None
        if preview and preview < meta["preview"]:
            texts["preview"] = _cut(texts["preview"], preview)
        return MemoryArrays(**cols, ids=texts["ids"], kind=texts["kind"], agent=texts["agent"],
                            embedding_model=meta["model"], preview=texts.get("preview"))
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


def _meta(fh) -> dict | None:
    """The header of a snapshot file of this format, else None."""
    if fh.read(8) != MAGIC:
        return None
    meta = json.loads(fh.read(int.from_bytes(fh.read(8), "little")).decode("utf-8"))
    return meta if isinstance(meta, dict) and meta.get("format") == FORMAT else None


def _store_of(snap) -> str:
    """The store a snapshot file was taken of ("" if unreadable)."""
    try:
        with open(snap, "rb") as fh:
            meta = _meta(fh)
        return meta["state"]["path"] if meta else ""
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def save_later(path: str, state: dict, arrays: MemoryArrays, preview: int) -> Future | None:
    """Write the snapshot in a background thread if the store is big enough and still in `state`."""
    if len(arrays) < MIN_ROWS or state["db"] is None:
        return None
    target = _file_for(state)
    return in_thread(lambda: _save(path, state, arrays, preview, target), "memviz-snapshot")


def _save(path: str, state: dict, arrays: MemoryArrays, preview: int, target=None) -> None:
    """Write the snapshot to `target` (default: this store's file in the cache folder as it is now)."""
    f = target or _file_for(state)
    time.sleep(WRITE_DELAY)
    if file_state(path) != state:
        return  # written to during the scan: the arrays may not match this state
    tmp = f.with_name(f"{f.stem}.{os.getpid()}.{threading.get_ident()}.part")
    try:
        f.parent.mkdir(parents=True, exist_ok=True)
        cols = {k: np.ascontiguousarray(getattr(arrays, k)) for k in _NUMERIC}
        cols.update({k: _joined(getattr(arrays, k)) for k in _TEXTS if getattr(arrays, k) is not None})
        fields, offset = [], 0
        for name, a in cols.items():
            fields.append([name, a.dtype.str, list(a.shape), offset])
            offset += -(-a.nbytes // _ALIGN) * _ALIGN
        meta = {"format": FORMAT, "state": state, "preview": preview, "n": len(arrays),
                "model": arrays.embedding_model, "written": time.time(), "fields": fields}
        # offsets are relative to the data start; make them absolute once the header size is known
        head = json.dumps(meta).encode("utf-8")
        start = -(-(16 + len(head) + 256) // _ALIGN) * _ALIGN
        for fld in fields:
            fld[3] += start
        head = json.dumps(meta).encode("utf-8")
        if 16 + len(head) > start:
            raise ValueError("snapshot header outgrew its room")
        with open(tmp, "wb") as out:
            out.write(MAGIC + len(head).to_bytes(8, "little") + head)
            for (_name, _d, _s, at), a in zip(fields, cols.values()):
                out.seek(at)
                out.write(a.data)
        os.replace(tmp, f)
        _prune(f)
    except (OSError, ValueError):
        pass  # a snapshot that cannot be written only costs the next open its scan
    finally:
        if tmp.exists():
            tmp.unlink(missing_ok=True)


def _prune(keep) -> None:
    """Keep the KEEP most recently used snapshots, none of a store that no longer exists (its
    texts should not outlive it); drop leftovers of interrupted writes."""
    files = sorted(keep.parent.glob("*.snap"), key=lambda p: p.stat().st_mtime, reverse=True)
    for k, snap in enumerate(files):
        if snap != keep and (k >= KEEP or not os.path.exists(_store_of(snap))):
            snap.unlink(missing_ok=True)
    for part in keep.parent.glob("*.part"):
        if time.time() - part.stat().st_mtime > 3600:
            part.unlink(missing_ok=True)


def _joined(texts: np.ndarray) -> np.ndarray:
    return np.frombuffer("\x00".join(texts.tolist()).encode("utf-8", "surrogatepass"), np.uint8)


def _cut(previews: np.ndarray, chars: int) -> np.ndarray:
    """Each preview's first `chars` characters: a content's first characters on one line (CR, LF and
    tab made spaces one for one), so the start of a longer preview is the shorter one."""
    out = np.empty(len(previews), dtype=object)
    out[:] = [t[:chars] for t in previews.tolist()]
    return out


def _split(raw: np.ndarray, n: int, shared: bool = False) -> np.ndarray | None:
    """The n texts joined by _joined; `shared`: a few distinct ones repeated (arrays.one_of_each)."""
    parts = raw.tobytes().decode("utf-8", "surrogatepass").split("\x00") if n else []
    if len(parts) != n:
        return None  # a text held NUL characters: the scan reads it properly instead
    if shared:
        parts = one_of_each(parts)
    out = np.empty(n, dtype=object)
    out[:] = parts
    return out
