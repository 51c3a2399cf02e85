"""The memory table's sorting and searching at a million rows, Qt-free (the table model uses it,
from a worker thread on large stores: every class here may be used from two threads).

Sorting: each column's stable ascending order of *all* rows is made once and kept while the rows
stay the same; a filtered table is then that order with the hidden rows dropped, `perm[shown[perm]]`
- the same rows in the same order as a stable argsort of the shown rows' keys, in one pass. After
a live refresh a few rows whose key changed are taken out of an order and put back where a stable
sort puts them (`insert_sorted`: a binary search each), rows appended are merged in. Texts
are put in the order Python's `<` gives (code point by code point, a text before the longer ones
it begins) without comparing them in Python: their UTF-8 bytes, whose order is the code points'
order, are read 8 at a time into integers numpy sorts, and only rows still tied are read further.

Searching: a substring test over the lower-cased texts and the ids (as they are). Both are kept as
one UTF-8 buffer each, a NUL byte after every row, searched with numpy: positions holding the
text's rarest byte, narrowed by its other bytes (or, when all its bytes are common, a comparison
of the whole buffer), each hit's row found from the row starts. A UTF-8 needle can match only at
a character boundary, so a byte match is a text match. Rows a live refresh added or changed
since the buffers were made are tested one by one (the buffers are made again once they are
many); when the new text contains the last one (typing on) and few rows matched, only those are
tested again.
"""
from __future__ import annotations

import bisect
import threading

import numpy as np

from memviz.tasks import Task

MOVED_MAX = 2_000       # rows whose key changed that an order takes in one by one (more: sorted again)
CHUNK = 65_536          # rows joined and encoded at once: the GIL is held a few ms at a time; cancel between
DIGIT = 8               # bytes of a text compared per numpy sort (one uint64)
SAME_CHECK_AT = 3 * DIGIT  # still tied after this many bytes: check which tied texts are simply equal
SPARSE = 1 / 16         # a byte at most this common in the buffer: start from its positions
NARROW = 1 / 8          # typing on: up to this share of rows matched last, those are tested again one by one


# --------------------------------------------------------------------------- texts as bytes
def utf8_rows(texts, task: Task | None = None, lower: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(buffer, starts): the texts' (`lower`: lower-cased) UTF-8 bytes, each followed by a NUL,
    as one uint8 array, and where each row begins (n + 1 entries, the last one the buffer's
    length; row i's text ends at starts[i + 1] - 1). TypeError if a value is not a str.
    A chunk of texts is joined, lower-cased and encoded at once: a NUL between two texts ends
    a word for str.lower as a text's end does (a final sigma stays final)."""
    parts, lengths = [], []
    for s in range(0, len(texts), CHUNK):
        if task is not None:
            task.check()
        chunk = texts[s:s + CHUNK]
        chunk = chunk.tolist() if isinstance(chunk, np.ndarray) else list(chunk)
        joined = "\x00".join(chunk) + "\x00"
        raw = (joined.lower() if lower else joined).encode("utf-8", "surrogatepass")
        ends = np.flatnonzero(np.frombuffer(raw, np.uint8) == 0)
        if len(ends) == len(chunk):   # no NUL inside a text: the separators mark the rows
            lengths.append(np.diff(ends, prepend=-1))
        else:
            enc = [(t.lower() if lower else t).encode("utf-8", "surrogatepass") for t in chunk]
            raw = b"\x00".join(enc) + b"\x00"
            lengths.append(np.fromiter((len(e) + 1 for e in enc), np.int64, count=len(enc)))
        parts.append(raw)
    buf = np.frombuffer(b"".join(parts), np.uint8)
    starts = np.zeros(len(texts) + 1, np.int64)
    if lengths:
        np.cumsum(np.concatenate(lengths), out=starts[1:])
    return buf, starts


# the first v bytes of a big-endian uint64 kept, v = 0..8
_KEEP = np.array([0] + [((1 << (8 * v)) - 1) << (8 * (8 - v)) for v in range(1, 9)], dtype=np.uint64)


class _Digits:
    """Reads a few bytes of chosen rows' texts as one integer each (a sort key)."""

    def __init__(self, buf: np.ndarray, starts: np.ndarray) -> None:
        self._padded = np.concatenate([buf, np.zeros(DIGIT, np.uint8)])
        # the 8 bytes from every position as one big-endian integer: a view, words overlapping
        self.words = np.ndarray((max(len(buf), 1),), ">u8", self._padded, strides=(1,))
        self.starts, self.size = starts, len(buf)

    def __call__(self, rows: np.ndarray, at: int, width: int = DIGIT) -> np.ndarray:
        """Bytes at..at+width-1 of each row's text, big-endian, 0 past the text's end."""
        p = self.starts[rows] + at
        left = np.clip(self.starts[rows + 1] - 1 - p, 0, DIGIT)
        word = self.words[np.minimum(p, self.size - 1)].astype(np.uint64) & _KEEP[left]
        return word >> np.uint64(8 * (DIGIT - width))


def _tied(first: np.ndarray) -> np.ndarray:
    """Positions in a group of two or more (`first`: a group starts here)."""
    group = np.cumsum(first) - 1
    return np.bincount(group)[group] > 1


def text_order(texts, task: Task | None = None) -> np.ndarray:
    """The stable ascending order of the texts under Python's `<` (sorted(range(n), key=texts.__getitem__)).

    Equal leading bytes under a zero padding mean equal code points up to the shorter text's end
    and only NULs after it, where Python puts the shorter text first: so rows are sorted by
    their bytes (0 past the end), then, when only padding is left, by length. Each round sorts
    the rows still tied by one uint64: the rank of their tie group above the next few bytes."""
    texts = texts.tolist() if isinstance(texts, np.ndarray) else texts
    buf, starts = utf8_rows(texts, task)
    n = len(starts) - 1
    if n == 0:
        return np.zeros(0, np.int64)
    lengths = np.diff(starts) - 1
    digits = _Digits(buf, starts)
    key = digits(np.arange(n), 0)
    order = np.argsort(key, kind="stable")
    key = key[order]
    first = np.ones(n, bool)  # a group of rows equal so far starts here
    first[1:] = key[1:] != key[:-1]
    at = DIGIT
    while True:
        if task is not None:
            task.check()
        pos = np.flatnonzero(_tied(first))
        if not len(pos):
            break
        rows = order[pos]
        if at >= SAME_CHECK_AT:   # long shared beginnings are mostly the same text: those groups are done
            group = np.cumsum(first[pos]) - 1
            lead = rows[np.flatnonzero(first[pos])][group]
            same = lengths[rows] == lengths[lead]
            same &= (np.bincount(group, weights=~same)[group] == 0)  # texts compared only in groups of one length
            at_same = np.flatnonzero(same)
            same[at_same] = np.fromiter((texts[a] == texts[b] for a, b in zip(rows[at_same].tolist(),
                                                                             lead[at_same].tolist())),
                                        bool, count=len(at_same))
            whole = np.bincount(group, weights=~same)[group] == 0
            first[pos[whole]] = True    # each its own group: their order (by row) stays
            pos, rows = pos[~whole], rows[~whole]
            if not len(pos):
                break
        group = (np.cumsum(first[pos]) - 1).astype(np.uint64)   # ranks 0..G-1, in order
        width = (64 - int(group[-1]).bit_length()) // 8          # bytes that fit beside the rank
        last = bool((lengths[rows] <= at).all())   # only padding left: the shorter text first
        if last:
            d = lengths[rows].astype(np.uint64)
        elif len(rows) > n // 8:   # read in row order (the texts in memory order), then picked: fewer cache misses
            d = digits(np.arange(n), at, width)[rows]
        else:
            d = digits(rows, at, width)
        key = (group << np.uint64(8 * width)) | d
        by = np.argsort(key, kind="stable")
        order[pos] = rows[by]
        key = key[by]
        first[pos[1:]] |= key[1:] != key[:-1]
        if last:
            break
        at += width
    return order


def stable_order(key: np.ndarray, task: Task | None = None) -> np.ndarray:
    """np.argsort(key, kind="stable"), texts included (ordered with `<` as numpy's object sort
    does, by their UTF-8 bytes in numpy instead of one comparison at a time)."""
    if key.dtype == object:
        try:
            return text_order(key, task)
        except TypeError:   # not all texts: compare them as numpy would
            values = key.tolist()
            return np.fromiter(sorted(range(len(values)), key=values.__getitem__), np.int64, count=len(values))
    return np.argsort(key, kind="stable")


def _rank(value, row: int) -> tuple:
    """A row's place in a stable ascending sort, as Python compares it: by key (NaN after every
    number, as numpy sorts), then by row."""
    if isinstance(value, (float, np.floating)) and value != value:
        return (1, 0.0, row)
    return (0, value, row)


def insert_sorted(order: np.ndarray, rows: np.ndarray, key: np.ndarray) -> np.ndarray:
    """`order` (rows in the stable ascending order of `key`: equal keys by row) with `rows` (not
    in it) put where a stable sort of all of them puts them: a binary search per row over the
    keys of the rows it visits (texts compared as Python compares them, as text_order sorts)."""
    rows = np.asarray(rows, np.int64)
    if not len(rows):
        return order
    ranks = sorted(_rank(key[r], r) for r in rows.tolist())
    at = [bisect.bisect_left(order, rank, key=lambda r: _rank(key[r], int(r))) for rank in ranks]
    return np.insert(order, at, [rank[2] for rank in ranks])


def moved_in(order: np.ndarray, rows: np.ndarray, key: np.ndarray) -> np.ndarray:
    """`order` (stable ascending by `key`, but `rows`' keys changed since it was made) with `rows`
    taken out and put where a stable sort puts them now (rows it does not hold stay out)."""
    rows = np.asarray(rows, np.int64)
    held = np.isin(order, rows)
    return insert_sorted(order[~held], order[held], key)


class ColumnOrders:
    """Stable orders of all rows per column, for one set of values (`source`: the objects the
    keys are read from; another source, or `clear()`, starts afresh). An order made while
    `clear()` or `rows_changed()` ran is used once and not kept. After a live refresh the orders
    are kept: on next use, rows appended since are merged in and the few rows whose value changed
    are moved to their place (a binary search each, not a sort of every row)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._source: tuple = ()
        self._perm: dict = {}
        self._moved: dict = {}   # column -> rows whose key changed since its order was made
        self._generation = 0
        self._making = threading.Lock()  # one order made at a time: a second asker waits and reuses it

    def clear(self) -> None:
        with self._lock:
            self._perm, self._moved = {}, {}
            self._generation += 1

    def _cached(self, column, source: tuple):
        if len(source) != len(self._source) or any(a is not b for a, b in zip(source, self._source)):
            self._source, self._perm, self._moved = source, {}, {}
            self._generation += 1
        return self._perm.get(column), self._moved.get(column), self._generation

    def rows_changed(self, source: tuple, keep, changed: np.ndarray | None = None) -> None:
        """Rows were appended (rows past an order's length are new) and `changed` rows changed
        (None: unknown): the orders stay for the new `source`; those of columns not in `keep`
        (their values changed) move the changed rows on next use, or are dropped when they are
        too many."""
        with self._lock:
            self._source = source
            for c in [c for c in self._perm if c not in keep]:
                moved = self._moved.get(c, frozenset())
                if changed is not None:
                    moved = moved | frozenset(changed[changed < len(self._perm[c])].tolist())
                if changed is None or len(moved) > MOVED_MAX:
                    del self._perm[c]
                    self._moved.pop(c, None)
                else:
                    self._moved[c] = moved
            self._generation += 1

    def ready(self, column, source: tuple, n: int) -> bool:
        """The column's order of these `n` rows is made."""
        with self._lock:
            perm, moved, _ = self._cached(column, source)
        return perm is not None and len(perm) == n and not moved

    def order(self, column, key_of, source: tuple, n: int, task: Task | None = None) -> np.ndarray:
        """The stable ascending order of all rows by `key_of()` (made on first use)."""
        with self._lock:
            perm, moved, _ = self._cached(column, source)
        if perm is not None and len(perm) == n and not moved:
            return perm
        with self._making:
            with self._lock:
                perm, moved, generation = self._cached(column, source)
            if perm is None or len(perm) < n or moved:   # (longer: the asker is behind, shown_in_order says so)
                key = np.asarray(key_of())
                if perm is None or len(perm) > len(key):
                    perm = stable_order(key, task)
                else:
                    if moved:
                        perm = moved_in(perm, np.fromiter(moved, np.int64, count=len(moved)), key)
                    perm = _merged(perm, key, task)
                with self._lock:
                    if self._generation == generation:
                        self._perm[column] = perm
                        self._moved.pop(column, None)
        return perm

    def shown_in_order(self, column, key_of, source: tuple, shown: np.ndarray,
                       task: Task | None = None) -> np.ndarray | None:
        """Rows where `shown` is True, sorted stably by `key_of()` ascending; None when the keys
        are no longer as many as `shown` (rows came meanwhile: a newer request follows)."""
        perm = self.order(column, key_of, source, len(shown), task)
        return perm[shown[perm]] if len(perm) == len(shown) else None


def _merged(perm: np.ndarray, key: np.ndarray, task: Task | None) -> np.ndarray:
    """`perm`, the stable order of the first rows, with the rows after them put where a stable
    sort of all `key` would: after every equal old key, among themselves by key then row."""
    if len(perm) == len(key):
        return perm
    new = np.arange(len(perm), len(key))
    new = new[stable_order(key[new], task)]
    at = np.searchsorted(key[perm], key[new], side="right")
    return np.insert(perm, at, new)


# --------------------------------------------------------------------------- search
class _Bytes:
    """Texts as one UTF-8 buffer (utf8_rows) with how often each byte occurs in it."""

    def __init__(self, texts, task: Task | None = None, lower: bool = False) -> None:
        self.buf, self.starts = utf8_rows(texts, task, lower)
        self.n = len(self.starts) - 1
        step = max(1, len(self.buf) >> 20)   # a sample of ~1M bytes tells which are rare
        self.freq = np.bincount(self.buf[::step], minlength=256) * step

    def rows_with(self, needle: bytes) -> np.ndarray:
        """Per row: its text contains `needle` (a non-empty UTF-8 text)."""
        buf, starts, size = self.buf, self.starts, len(needle)
        out = np.zeros(self.n, bool)
        if size > len(buf):
            return out
        nb = np.frombuffer(needle, np.uint8)
        rarest = np.argsort(self.freq[nb], kind="stable")
        if self.freq[nb[rarest[0]]] > SPARSE * len(buf) and 0 not in needle:
            # every byte common: compare the whole buffer; a hit cannot run into the next row (it
            # would hold the NUL after this one), so a row holds a hit if any position of it does
            hit = np.zeros(len(buf), bool)
            m = hit[:len(buf) - size + 1]
            np.equal(buf[:len(m)], nb[0], out=m)
            for i in range(1, size):
                m &= buf[i:i + len(m)] == nb[i]
            return np.logical_or.reduceat(hit, starts[:-1]) if self.n else out
        j = int(rarest[0])
        at = np.flatnonzero(buf == nb[j]) - j
        at = at[(at >= 0) & (at <= len(buf) - size)]
        for i in rarest[1:].tolist():
            at = at[buf[at + i] == nb[i]]
        if 0 not in needle and len(at) > self.n // 4:   # many hits: per row, as above
            hit = np.zeros(len(buf), bool)
            hit[at] = True
            return np.logical_or.reduceat(hit, starts[:-1])
        row = np.searchsorted(starts, at, side="right") - 1
        out[row[at + size <= starts[row + 1] - 1]] = True   # within the row (a NUL in the needle may cross)
        return out


class TextSearch:
    """Which rows' lower-cased text or id contains a text.

    `reset(previews, ids)` for another set of rows (nothing is computed then); `prepare()` makes
    the search buffers (a worker, right after a store opens: else the first search does);
    `rows_changed()` after a live refresh; `mask(text)` the answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()      # the fields below, changed by both threads
        self._building = threading.Lock()  # one prepare() at a time
        self._generation = 0   # counts every change of the rows: a search's answer is kept for its generation
        self._epoch = 0        # counts reset()s: buffers made for an earlier set of rows are dropped
        self.reset(np.zeros(0, object), np.zeros(0, object))

    def reset(self, previews, ids) -> None:
        with self._lock:
            self._previews, self._ids = previews, ids
            self._index: tuple[_Bytes, _Bytes] | None = None   # texts and ids of the first rows
            self._dirty: frozenset = frozenset()  # rows whose text changed since the index was made
            self._log: set | None = None          # rows changed while prepare() runs
            self._generation += 1
            self._epoch += 1
            self._last: tuple | None = None       # (generation, text, mask) of the last search

    def rows_changed(self, previews, ids, added: np.ndarray, changed: np.ndarray) -> None:
        """A live refresh: `added` rows (appended in order) and `changed` ones (their text may differ)."""
        with self._lock:
            self._previews, self._ids = previews, ids
            changed = changed.tolist()
            if changed:
                self._dirty = self._dirty.union(changed)
            if self._log is not None:
                self._log.update(changed)
            self._generation += 1

    def _stale(self) -> bool:
        """No index, or so many rows outside it that testing them one by one costs more than making it again."""
        if self._index is None:
            return True
        outside = len(self._dirty) + len(self._ids) - self._index[0].n
        return outside > max(20_000, len(self._ids) // 50)

    def prepare(self, task: Task | None = None) -> None:
        """Make the search buffers of the current rows (if not made, or when many rows are outside them)."""
        with self._building:
            with self._lock:
                if not self._stale():
                    return
                epoch, previews, ids = self._epoch, self._previews, self._ids
                n = len(ids)
                self._log = set()
            try:   # rows changed from here on may be read either way: they stay tested one by one
                index = (_Bytes(previews[:n], task, lower=True), _Bytes(ids[:n], task))
            finally:
                with self._lock:
                    log, self._log = self._log, None
            with self._lock:
                if self._epoch == epoch:   # else another set of rows came meanwhile: of no use
                    self._index, self._dirty = index, frozenset(log)

    def contains(self, text: str, rows: np.ndarray) -> np.ndarray:
        """Per row of `rows`: its lower-cased text or its id contains `text` (already stripped, lower-cased)."""
        with self._lock:
            previews, ids = self._previews, self._ids
        r = rows.tolist()
        return np.fromiter(((text in previews[i].lower()) or (text in ids[i]) for i in r), bool, count=len(r))

    def mask(self, text: str, task: Task | None = None) -> np.ndarray | None:
        """Per row: its lower-cased preview or its id contains `text` (stripped, lower-cased).
        None when the rows changed while it ran (a newer search follows)."""
        text = text.strip().lower()
        with self._lock:
            n, generation, last = len(self._ids), self._generation, self._last
        if not text:
            return np.ones(n, bool)
        if last is not None and last[0] == generation and last[1] in text and len(last[2]) == n \
                and np.count_nonzero(last[2]) <= NARROW * n:   # typing on: only the last matches can match
            rows = np.flatnonzero(last[2])
            out = np.zeros(n, bool)
            out[rows[self.contains(text, rows)]] = True
        else:
            self.prepare(task)
            with self._lock:
                index, dirty, ids = self._index, self._dirty, self._ids
            if index is None or len(ids) != n:
                return None
            needle = text.encode("utf-8", "surrogatepass")
            out = np.zeros(n, bool)
            out[:index[0].n] = index[0].rows_with(needle) | index[1].rows_with(needle)
            if task is not None:
                task.check()
            rows = np.concatenate([np.fromiter(dirty, np.int64, count=len(dirty)), np.arange(index[0].n, n)])
            out[rows] = self.contains(text, rows)
        with self._lock:
            if self._generation != generation:
                return None
            self._last = (generation, text, out)
        return out
