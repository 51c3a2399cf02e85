"""Names for the regions of the map: cluster the 2-D layout, then name each cluster by the
words that set its memories apart from the rest (class-based TF-IDF, as BERTopic does).

k-means (numpy, k-means++ seeding, fixed seed) on the laid-out points finds the regions; a
word's weight in a cluster is its frequency there times log(1 + mean words per cluster /
its frequency everywhere) times the share of its uses that fall in the cluster, so words
every region uses ("Elena", "said") sink and the words of one region rise. No Qt: the map panel runs `map_labels` on a worker and caches the
result in the store beside the layout (memviz_meta "map_labels", keyed by a fingerprint of
the coordinates and the texts).
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import asdict, dataclass

import numpy as np

META_KEY = "map_labels"
_WORD = re.compile(r"[^\W\d_][\w'’-]*[^\W_]", re.UNICODE)
STOPWORDS = frozenset("""
a about above after again against all also am an and any are aren't as at be because been before being below
between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few
for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him
himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself just let's like me more most
mustn't my myself no nor not now of off on once only or other ought our ours ourselves out over own same shan't
she she'd she'll she's should shouldn't so some such than that that's the their theirs them themselves then
there there's these they they'd they'll they're they've this those through to too under until up very was
wasn't we we'd we'll we're we've were weren't what what's when when's where where's which while who who's whom
why why's will with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves
get got one two three next last new want wants make made still yes okay ok let know think thinks said says say
""".split())


@dataclass(frozen=True)
class RegionLabel:
    x: float
    y: float
    words: tuple[str, ...]
    size: int            # memories in the region

    @property
    def text(self) -> str:
        return " · ".join(self.words)


def fingerprint(coords: np.ndarray, texts) -> str:
    """What a set of labels depends on: the positions and the texts."""
    h = hashlib.sha1(np.ascontiguousarray(coords, dtype=np.float32).tobytes())
    for t in texts:
        h.update(str(t).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def words_of(text: str) -> list[str]:
    return [w for w in (m.group(0).lower().strip("'’-") for m in _WORD.finditer(text or ""))
            if len(w) > 2 and w not in STOPWORDS]


def kmeans(points: np.ndarray, k: int, *, seed: int = 0, iters: int = 40) -> np.ndarray:
    """Cluster of each point (k-means++ seeding, Lloyd's iterations)."""
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
        dist = ((points[:, None, :] - c[None, :, :]) ** 2).sum(axis=2)
        new = dist.argmin(axis=1)
        if _ and np.array_equal(new, assign):
            break
        assign = new
        for j in range(k):
            members = points[assign == j]
            if len(members):
                c[j] = members.mean(axis=0)
    return assign


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
    span = pts.max(axis=0) - pts.min(axis=0)
    span[span == 0] = 1.0
    assign = kmeans((pts - pts.min(axis=0)) / span, k or region_count(len(rows)))
    if cancelled is not None and cancelled():
        return []
    docs = [words_of(texts[r]) for r in rows]
    if cancelled is not None and cancelled():
        return []
    k = int(assign.max()) + 1
    # words in more than half of all memories name no region
    df = Counter(w for d in docs for w in set(d))
    common = {w for w, c in df.items() if c > len(docs) / 2}
    tf = [Counter() for _ in range(k)]
    for d, c in zip(docs, assign):
        tf[c].update(w for w in d if w not in common)
    total = Counter()
    for t in tf:
        total.update(t)
    mean_words = max(1.0, sum(total.values()) / k)
    out = []
    for j in range(k):
        members = pts[assign == j]
        if not len(members) or not tf[j]:
            continue
        n_words = sum(tf[j].values())
        # c-TF-IDF, times the share of the word's uses that fall in this region: a name said
        # everywhere ("Elena", "Assistant") sinks even where it is frequent
        scored = sorted(((c / n_words) * np.log1p(mean_words / total[w]) * (c / total[w]), w)
                        for w, c in tf[j].items())
        best = tuple(w for _, w in reversed(scored[-words:]))
        cx, cy = np.median(members, axis=0)
        out.append(RegionLabel(float(cx), float(cy), best, int(len(members))))
    return out


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

