"""Names for the regions of the map: cluster the 2-D layout, then name each cluster by the
terms that set its memories apart from the rest (class-based TF-IDF, as BERTopic does).

k-means (numpy, k-means++ seeding, fixed seed) on the laid-out points finds the regions. A
term is a word of three letters or more that is not an English stop word (stopwords.py:
grammar, words said of anything, numbers, dates), or two such words that follow each other
("kitchen renovation"). A term's weight in a region is the share of the region's memories
that use it, times log(1 + memories per region / memories using it anywhere), times the
share of its uses that fall in the region: words every region uses ("Elena", "said") sink
and the words of one region rise. Each term names one region only (the one where it weighs
most), a phrase replaces its word where the word is mostly said in it ("project" →
"project alpha"), and a term much weaker than the region's best is left out. Names keep their
capital ("Kyoto"). A large store is named from a random sample of its memories.
No Qt: the map panel runs `map_labels` on a worker and caches the result in the store beside
the layout (memviz_meta "map_labels", keyed by a fingerprint of the coordinates, the texts
and this naming's version).
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import asdict, dataclass

import numpy as np

from .stopwords import STOPWORDS

META_KEY = "map_labels"
VERSION = b"region names 2"   # part of the cache key: labels named by an older rule are named again
SAMPLE = 12_000               # memories read for the names (and the k-means fit) at most
MIN_LETTERS = 3
PHRASE_SHARE = 0.6            # a phrase replaces its word when this share of the word's uses are in it
WEAK = 0.25                   # a term weighing less than this share of the region's best is left out
MAX_CHARS = 36                # a label stops growing past this many characters
_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")    # letters, with apostrophes inside ("don't")
_JOINS = re.compile(r"\s+")                            # what may stand between the two words of a phrase
VERB_SHARE = 0.25            # a word used as a verb more often than this names no region
MODIFIER_SHARE = 0.6         # a word followed by another this often ("reasonable quote") is shown in a phrase
SENTENCES = 0.2              # texts with this share of stop words are sentences, whose nouns can be told
NOUN_SHARE = 0.1             # nor one used as a noun less often than this (unless it is a name)
NOUN_BEFORE = frozenset("""the a an my your his her its our their this that these those some any no every each
another other much many more most few several all both enough of for in on at with from about into onto by
near under over after before during without between behind""".split())
VERB_BEFORE = frozenset("""to will would can could should must might may shall i you we they he she me us them
i'm you're we're they're he's she's it's i'll you'll we'll they'll i've you've we've they've i'd we'd they'd
don't doesn't didn't won't can't couldn't wouldn't shouldn't let's is are was were be been being am
anyone someone everyone nobody who""".split())
_STARTS = re.compile(r"(?:^|[.!?:;\"“(]\s*)$")           # text before a word that starts a sentence


@dataclass(frozen=True)
class RegionLabel:
    x: float
    y: float
    words: tuple[str, ...]   # terms as shown: a word or a two-word phrase, names capitalised
    size: int                # memories in the region

    @property
    def text(self) -> str:
        return " · ".join(self.words)

    @property
    def plain_words(self) -> list[str]:
        """The label's single words, lower case."""
        return [w.lower() for t in self.words for w in t.split()]


def fingerprint(coords: np.ndarray, texts) -> str:
    """What a set of labels depends on: the positions, the texts and how they are named."""
    h = hashlib.sha1(VERSION)
    h.update(np.ascontiguousarray(coords, dtype=np.float32).tobytes())
    for t in texts:
        h.update(str(t).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def _word(token: str) -> str | None:
    """A token as a term's word (lower case, "keeper's" → "keeper"), or None for a stop word or a
    word too short."""
    w = token.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    return w if len(w) >= MIN_LETTERS and w.isalpha() and w not in STOPWORDS else None


def words_of(text: str) -> list[str]:
    """The words of `text` that can name a region, lower case, in order."""
    return [w for w in (_word(m.group(0)) for m in _TOKEN.finditer(text or "")) if w]


class WordUse:
    """How the words of the texts read are written and used. A region is named by things: names
    (written with a capital where no sentence starts: "Kyoto", not "Today" opening a sentence)
    and nouns (found after an article, a possessive, a quantity or a preposition, one word
    between at most: "the kitchen", "my mother's", "in Lisbon"), never by verbs (found after a
    pronoun, a modal, "to" or a form of "be": "we ate", "to buy", "is delayed") or by words used
    only as they are ("handles", "walked", "honestly")."""

    def __init__(self) -> None:
        self.uses: Counter = Counter()
        self.capital: Counter = Counter()   # uses with a capital where no sentence starts
        self.lower: Counter = Counter()
        self.verb: Counter = Counter()
        self.noun: Counter = Counter()
        self.tokens = self.stop_tokens = 0  # words read, and how many were stop words
        self.modifier: Counter = Counter()  # uses followed by a word the same phrase ("reasonable quote")
        self.forms: dict[str, str] = {}     # a term as first written ("DataConf", "Lina's birthday")

    def names(self, word: str) -> bool:
        """Whether `word` can name a region: a name, or a noun seldom used as a verb."""
        if self.capital[word] > self.lower[word]:
            return True
        n = self.uses[word]
        return self.verb[word] <= VERB_SHARE * n and (self.noun[word] >= NOUN_SHARE * n or not self.sentences)

    @property
    def sentences(self) -> bool:
        """Whether the texts are written in sentences (not lists of keywords, where no word can be
        told a noun or a qualifier)."""
        return self.stop_tokens > SENTENCES * self.tokens

    def modifies(self, word: str) -> bool:
        """Whether `word` mostly qualifies the word after it: then it names a region in a phrase only."""
        return self.sentences and self.modifier[word] > MODIFIER_SHARE * self.uses[word]

    def shown(self, term: str) -> str:
        """`term` as written, its names capitalised and its other words in lower case."""
        form = self.forms.get(term, term).split()
        return " ".join(f if self.capital[w] > self.lower[w] else f.lower() for f, w in zip(form, term.split()))


def terms_of(text: str, use: WordUse | None = None) -> set[str]:
    """The terms of `text` (its words and the phrases of two words side by side), each once;
    `use` (if given) learns how they are written and used."""
    out: set[str] = set()
    prev = None                   # the previous token's word (None: a stop word), where it started, if in lower case
    back = (None, None)           # the two tokens before, lower case (None: across punctuation)
    prev_end = 0
    for m in _TOKEN.finditer(text or ""):
        token = m.group(0)
        w = _word(token) if text[m.end():m.end() + 1] != "-" and text[m.start() - 1:m.start()] != "-" else None
        if use is not None:
            use.tokens += 1
            use.stop_tokens += w is None
        if not _JOINS.fullmatch(text, prev_end, m.start()):
            back, prev = (None, None), None
        if w is not None:
            out.add(w)
            phrase = f"{prev[0]} {w}" if prev is not None else None
            if phrase:
                out.add(phrase)
            if use is not None:
                if phrase:
                    use.modifier[prev[0]] += 1
                use.uses[w] += 1
                if token.islower():
                    use.lower[w] += 1
                elif not _STARTS.search(text, max(0, m.start() - 3), m.start()):
                    use.capital[w] += 1
                use.verb[w] += back[1] in VERB_BEFORE
                # after an article, a possessive, a quantity or a preposition ("the kitchen", "of the old
                # lamp"), or after a word in lower case as the head of a compound ("espresso beans"; not
                # a past tense: "retry kicked")
                use.noun[w] += back[1] in NOUN_BEFORE or back[0] in NOUN_BEFORE or \
                    bool(prev and prev[2] and not w.endswith("ed"))
                for t, start in ((w, m.start()), (phrase, prev[1] if phrase else 0)):
                    if t and t not in use.forms:
                        use.forms[t] = " ".join(_TOKEN.findall(text, start, m.start() + len(w)))
        prev = (w, m.start(), token.islower()) if w is not None else None
        back, prev_end = (back[1], token.lower().replace("’", "'")), m.end()
    return out


def kmeans(points: np.ndarray, k: int, *, seed: int = 0, iters: int = 40) -> np.ndarray:
    """Cluster of each point (k-means++ seeding, Lloyd's iterations)."""
    return _kmeans(points, k, seed=seed, iters=iters)[0]


def _kmeans(points: np.ndarray, k: int, *, seed: int = 0, iters: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """(cluster of each point, centres)."""
    rng = np.random.default_rng(seed)
    n = len(points)
    k = max(1, min(k, n))
    centres = [points[rng.integers(n)]]
    d2 = ((points - centres[0]) ** 2).sum(axis=1)
    for _ in range(1, k):
        total = d2.sum()
        nxt = points[rng.choice(n, p=d2 / total)] if total > 0 else points[rng.integers(n)]
        centres.append(nxt)
        d2 = np.minimum(d2, ((points - nxt) ** 2).sum(axis=1))
    c = np.array(centres, dtype=np.float64)
    assign = np.zeros(n, np.int64)
    for _ in range(iters):
        new = _nearest(points, c)
        if _ and np.array_equal(new, assign):
            break
        assign = new
        for j in range(k):
            members = points[assign == j]
            if len(members):
                c[j] = members.mean(axis=0)
    return assign, c


def _nearest(points: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Index of each point's nearest centre (2-D: one pass per centre, no (n, k, 2) temporary)."""
    best = np.full(len(points), np.inf)
    out = np.zeros(len(points), np.int64)
    for j, c in enumerate(centres):
        d = (points[:, 0] - c[0]) ** 2 + (points[:, 1] - c[1]) ** 2
        closer = d < best
        best[closer], out[closer] = d[closer], j
    return out


def region_count(n: int) -> int:
    """About one region per 30 memories at first, growing slowly: 3 to 14 regions."""
    return int(np.clip(round(np.sqrt(n / 30)), 3, 14))


def map_labels(coords: np.ndarray, texts, *, k: int | None = None, words: int = 3,
               cancelled=None) -> list[RegionLabel]:
    """Labels for the regions of a 2-D layout. `coords` (n, 2), NaN rows are not on the map;
    `texts` the n memories' text. `cancelled()` is polled between the stages."""
    coords = np.asarray(coords, dtype=np.float64)
    on = np.isfinite(coords).all(axis=1)
    rows = np.flatnonzero(on)
    if len(rows) < 6:
        return []
    pts = coords[rows]
    lo = pts.min(axis=0)
    span = pts.max(axis=0) - lo
    span[span == 0] = 1.0
    unit = (pts - lo) / span
    read = np.sort(np.random.default_rng(0).choice(len(rows), SAMPLE, replace=False)) if len(rows) > SAMPLE \
        else np.arange(len(rows))
    sub, centres = _kmeans(unit[read], k or region_count(len(rows)))
    assign = _nearest(unit, centres) if len(read) < len(rows) else sub
    if cancelled is not None and cancelled():
        return []
    use = WordUse()
    docs = [terms_of(texts[r], use) for r in rows[read]]
    if cancelled is not None and cancelled():
        return []
    k = len(centres)
    sizes = np.bincount(assign, minlength=k)
    out = []
    for j, terms in enumerate(_choose(docs, sub, k, words, use)):
        if terms:
            cx, cy = np.median(pts[assign == j], axis=0)
            out.append(RegionLabel(float(cx), float(cy), tuple(use.shown(t) for t in terms), int(sizes[j])))
    return out


def _choose(docs: list[set[str]], assign: np.ndarray, k: int, most: int, use: WordUse) -> list[list[str]]:
    """Up to `most` terms naming each of the k regions (`docs[i]`, the terms of a memory in region
    `assign[i]`): the best-weighing words first, over all regions, each word in one label; a word
    mostly said in a phrase, or in a phrase with a word the label has, is shown in it."""
    df = [Counter() for _ in range(k)]
    for d, c in zip(docs, assign):
        df[c].update(d)
    total: Counter = Counter()
    for t in df:
        total.update(t)
    size = np.bincount(assign, minlength=k)
    per_region = len(docs) / k
    scored = []
    for j in range(k):
        least = max(2, 0.02 * size[j])  # said by a few memories of the region at least
        for t, c in df[j].items():
            if " " not in t and c >= least and total[t] <= len(docs) / 2 and use.names(t):
                scored.append(((c / size[j]) * np.log1p(per_region / total[t]) * (c / total[t]), j, t))
    scored.sort(key=lambda s: (-s[0], s[1], s[2]))
    phrases = [{} for _ in range(k)]   # word -> (uses, phrase): the region's most used phrase with it
    for j in range(k):
        for t, c in df[j].items():
            first, _, second = t.partition(" ")
            if second and use.names(second) and use.names(first):  # not "Costa quoted", "ate yudofu"
                for w, weight in ((first, c + 0.5 * use.modifies(first)), (second, c)):  # "software developer"
                    if weight > phrases[j].get(w, (0, ""))[0]:                           # before "young software"
                        phrases[j][w] = (weight, t)
    chosen: list[list[str]] = [[] for _ in range(k)]
    best = np.zeros(k)
    used: set[str] = set()
    for score, j, w in scored:
        if len(chosen[j]) >= most or w in used or score < WEAK * best[j]:
            continue
        terms = chosen[j]
        uses, phrase = phrases[j].get(w, (0, ""))
        term = phrase if uses >= PHRASE_SHARE * df[j][w] and not used & set(phrase.split()) else w
        for i, had in enumerate(terms):  # "alpha" then "project": "project alpha", if it is said
            pair = next((p for p in (f"{had} {w}", f"{w} {had}") if df[j][p] >= PHRASE_SHARE * df[j][w] / 2), None)
            if " " not in had and pair:
                terms, term = terms[:i] + terms[i + 1:], pair
                break
        if term == w and use.modifies(w):
            continue
        if terms and len(" · ".join(terms + [term])) > MAX_CHARS:
            continue
        chosen[j] = terms + [term]
        used.update(term.split())
        best[j] = best[j] or score
    return chosen


def cached_labels(store, key: str) -> list[RegionLabel] | None:
    return labels_from_meta(store.meta(META_KEY), key)


def labels_from_meta(value, key: str) -> list[RegionLabel] | None:
    """The labels in a memviz_meta "map_labels" value, if they were made for `key`."""
    if not isinstance(value, dict) or value.get("key") != key:
        return None
    try:
        return [RegionLabel(float(d["x"]), float(d["y"]), tuple(d["words"]), int(d["size"])) for d in value["labels"]]
    except (KeyError, TypeError, ValueError):
        return None  # a damaged entry is recomputed


def store_labels(store, key: str, labels: list[RegionLabel]) -> None:
    """Remember the labels of the map last shown (one entry; read-only stores keep none)."""
    if not store.read_only:
        store.set_meta(META_KEY, {"key": key, "labels": [asdict(lb) for lb in labels]})

