"""The personal-assistant sample (the assistant memory's style, ADR 005; GLOSSARY): six months of one user's long-term memory.

Conversations are saved as episodes (user message and assistant reply). Each night at
01:00 the consolidation extracts facts and preferences from the day's episodes (citing
them in source_ids, merging repeats), supersedes contradicted facts, and on Mondays
reflects on the past week (level 1, citing episodes and facts); on the first Monday of a
month it reflects on the month's weekly reflections (level 2), and at the end on the
months (level 3). At the end, the assistant memory's Ebbinghaus decay is applied to every fact and
preference from its last access, and those that fell below 0.05 are pruned (soft-deleted
on the night they crossed). Some facts were confirmed by the user (protected), and some
episodes the user asked to forget (soft-deleted).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from datetime import UTC, datetime

from . import assistant_text as T
from .common import DAY, HOUR, Rand, ebbinghaus, epoch, fill, memory, weekday
from .variety import AGENT_FRAMES, REFLECTION_FRAMES, USER_FRAMES, Retelling

SEED = 2002
AGENT = "assistant"
START = epoch(2025, 1, 6)                     # a Monday
WEEKS = 26
SNAP = START + WEEKS * 7 * DAY + 1 * HOUR     # the last consolidation: Monday 2025-07-07 01:00
PRUNE_BELOW = 0.05
TRIP = (epoch(2025, 4, 12), epoch(2025, 4, 23))
CONF = (epoch(2025, 3, 18), epoch(2025, 3, 21))

# when a template may be used (by its first words): (from, until)
_WINDOWS = {
    "We're in Kyoto": TRIP, "Book the {train}": TRIP,
    "The talk went": (CONF[1] - DAY, epoch(2025, 4, 1)),
}
_BEFORE = {"kyoto": TRIP[0], "berlin": CONF[0]}  # other templates of these topics: only before the event
_WORK = {"alpha", "beacon", "hiring", "management", "berlin"}


def build(scale: float = 1.0) -> tuple[list[dict], list[dict], dict]:
    """(records, entities, meta) of the assistant store; `scale` shrinks the number of conversations."""
    return _Assistant(Rand(SEED), scale).run()


def _allowed(topic: str, template: str, t: int) -> bool:
    for prefix, (lo, hi) in _WINDOWS.items():
        if template.startswith(prefix):
            return lo <= t < hi
    return t < _BEFORE.get(topic, SNAP)


def _topic_weight(topic: str, t: int) -> float:
    month = datetime.fromtimestamp(t, tz=UTC).month - 1
    w = T.TOPICS[topic]["months"][min(month, 5)]
    if TRIP[0] <= t < TRIP[1]:
        return {"kyoto": 8, "family": 2, "running": 1}.get(topic, 0)
    if not any(_allowed(topic, u[0], t) for u in T.TOPICS[topic]["user"]):
        return 0
    return w


class _Assistant:
    def __init__(self, rng: Rand, scale: float):
        self.rng, self.scale = rng, scale
        self.records: list[dict] = []
        self.entities = {k: {"id": rng.new_id(), "key": k, "canonical_name": v[0], "type": v[1], "aliases": v[2],
                             "summary": v[3], "protected": v[4]} for k, v in T.ENTITIES.items()}
        self._entity_patterns = [
            (k, re.compile(r"\b(" + "|".join(re.escape(n) for n in [v[0]] + v[2]) + r")\b"))
            for k, v in T.ENTITIES.items()]
        self.facts: dict[str, dict] = {}            # text -> fact/preference record (created or pending)
        self.pending: list[dict] = []               # extracted, waiting for the night's consolidation
        self.slots: dict[str, dict] = {}            # episode id -> slot values used
        self.weekly: list[dict] = []
        self.monthly: list[dict] = []
        self.chain_last: dict[int, dict] = {}       # chain index -> its current fact
        self.retell = Retelling()                   # repeats are framed, not verbatim
        self.persona = {topic: {slot: rng.pick(T.TOPICS[topic]["slots"][slot]) for slot in slots}
                        for topic, slots in T.SINGLE_VALUED.items()}

    # ------------------------------------------------------------ helpers
    def add(self, **kw) -> dict:
        rec = memory(self.rng, agent=AGENT, **kw)
        self.records.append(rec)
        return rec

    def entity_ids(self, text: str, topic: str) -> list[str]:
        keys = [k for k, pat in self._entity_patterns if pat.search(text)]
        keys += [k for k in T.TOPICS[topic]["entities"] if k not in keys]
        return [self.entities[k]["id"] for k in keys]

    def episode(self, t: int, topic: str, role: str, text: str, importance: int, session: str) -> dict:
        spec = T.TOPICS[topic]
        prefix = f"{T.USER}: " if role == "user" else "Assistant: "
        said = self.retell.say(role, text, t, USER_FRAMES if role == "user" else AGENT_FRAMES)
        return self.add(kind="episode", content=prefix + said, t=t, importance=importance,
                        entity_ids=self.entity_ids(text, topic), tags=list(spec["tags"]),
                        attributes={"role": role, "session": session, "topic": topic,
                                    "channel": "mobile" if self.rng.chance(0.6) else "desktop",
                                    "source": "user.message" if role == "user" else "agent_response"})

    def queue_fact(self, kind: str, text: str, topic: str, source: dict, t: int, importance: int, chain=None):
        rec = self.facts.get(text)
        if rec is not None:
            if source["id"] not in rec["source_ids"]:
                rec["source_ids"].append(source["id"])
            rec["attributes"]["mentions"] = rec["attributes"].get("mentions", 1) + 1
            return rec
        rng = self.rng
        base = round(rng.uniform(0.85, 1.0) if kind == "fact" else rng.uniform(0.75, 0.95), 3)
        night = _next_night(t)
        rec = memory(rng, agent=AGENT, kind=kind, content=text, t=night,
                     importance=max(1, min(10, importance + rng.randint(-1, 1))), confidence=base, decay_rate=0.1,
                     source_ids=[source["id"]], entity_ids=self.entity_ids(text, topic),
                     tags=list(T.TOPICS[topic]["tags"]) + ["extracted"],
                     attributes={"topic": topic, "extracted_by": "consolidation", "base_confidence": base})
        rec["event_time"] = source["event_time"]   # what it is about happened in the episode
        rec["_chain"] = chain
        self.facts[text] = rec
        self.pending.append(rec)
        return rec

    @staticmethod
    def touch(rec: dict, t: int):
        rec["access_count"] = rec.get("access_count", 0) + 1
        rec["last_accessed"] = max(t, rec.get("last_accessed") or 0)

    # ------------------------------------------------------------ the six months
    def run(self):
        rng = self.rng
        events = []  # (time, order, kind, payload)
        for w in range(WEEKS):
            wk = START + w * 7 * DAY
            n = max(1, round(rng.gauss(11, 2) * self.scale))
            for _ in range(n):
                t, topic = self.session_slot(wk)
                if topic:
                    events.append((t, len(events), "session", topic))
        for ci, (topic, steps) in enumerate(T.CHAINS):
            for si, (date, msg, kind, fact) in enumerate(steps):
                events.append((self.home_time(date), len(events), "chain", (ci, si, topic, msg, kind, fact)))
        for date, topic, kind, fact, imp in T.PROTECTED:
            events.append((self.home_time(date), len(events), "protect", (topic, kind, fact, imp)))
        for date, topic, msg, date2, request in T.FORGET:
            events.append((self.home_time(date), len(events), "forget", (topic, msg, self.home_time(date2), request)))
        nights = [START + d * DAY + HOUR for d in range(1, WEEKS * 7 + 1)]
        events += [(n, len(events) + i, "night", None) for i, n in enumerate(nights)]
        events.sort()
        for t, _, what, payload in events:
            getattr(self, "on_" + what)(t, payload)
        self.on_end()
        records = []
        for r in self.records:
            r.pop("_chain", None)
            records.append(r)
        ents = list(self.entities.values())
        counts = Counter(e for r in records for e in r.get("entity_ids", []))
        for e in ents:
            e["mention_count"] = counts.get(e["id"], 0)
        meta = {"sample": {"name": "assistant", "user": T.USER, "seed": SEED, "scale": self.scale,
                           "generator": "scripts/make_samples.py", "as_of": SNAP},
                "consolidation": {"last_run": SNAP, "prune_below": PRUNE_BELOW, "decay": "confidence * exp(-decay_rate * days^0.8)"}}
        return records, ents, meta

    def session_slot(self, week_start: int):
        rng = self.rng
        day = rng.randrange(7)
        t0 = week_start + day * DAY
        weights = {k: _topic_weight(k, t0 + 12 * HOUR) for k in T.TOPICS}
        if day >= 5:  # weekends: little work
            weights = {k: w * (T.TOPICS[k]["weekend"] * 4) for k, w in weights.items()}
        weights = {k: w for k, w in weights.items() if w > 0}
        if not weights:
            return None, None
        topic = rng.weighted(weights)
        lo, hi = rng.pick(T.TOPICS[topic]["hours"])
        return t0 + lo * HOUR + rng.randrange((hi - lo) * HOUR), topic

    def home_time(self, date) -> int:
        return epoch(*date) + self.rng.choice([8, 19, 20, 21]) * HOUR + self.rng.randrange(50) * 60

    def retrieve(self, t: int, topic: str):
        """search_memory() before answering: live facts on the topic get accessed."""
        for rec in self.facts.values():
            if rec["created_at"] < t and rec.get("valid_until") is None and rec["attributes"].get("topic") == topic:
                if rec.get("_chain") is not None or self.rng.chance(0.35):
                    self.touch(rec, t)

    def exchange(self, t: int, topic: str, session: str, template=None, fixed=None, avoid=()):
        """One user message and the assistant's reply; returns (user episode, reply, slot values).
        `avoid`: templates already used in this session (nobody asks the same thing twice in a row)."""
        rng, spec = self.rng, T.TOPICS[topic]
        vocab = {**spec["slots"], "weekday": T.WEEKDAYS}
        if template is None:
            options = [u for u in spec["user"] if _allowed(topic, u[0], t)]
            template = rng.pick([u for u in options if u[0] not in avoid] or options)
            if isinstance(avoid, set):
                avoid.add(template[0])
        text, used = fill(template[0], rng, vocab, {**self.persona.get(topic, {}), **(fixed or {})})
        base = spec["importance"]
        user = self.episode(t, topic, "user", text, rng.importance(base, 1.3), session)
        said = set(_slots(template[0]))           # the reply must be about what was said
        self.slots[user["id"]] = {k: v for k, v in used.items() if k in said}
        replies = [r for r in spec["assistant"] if set(_slots(r)) <= said] or spec["assistant"]
        reply_text, _ = fill(rng.pick(replies), rng, vocab, used)
        reply = self.episode(t + rng.randint(3, 25), topic, "assistant", reply_text, rng.importance(base - 1, 1), session)
        if template[1] and rng.chance(0.8):
            kind, ftext, imp = template[1]
            self.queue_fact(kind, fill(ftext, rng, vocab, used)[0], topic, user, t, imp)
        if rng.chance(0.05):
            older = [r for r in self.records if r["kind"] == "episode" and r["attributes"].get("topic") == topic]
            self.touch(rng.pick(older), t)
        return user, reply, used

    def on_session(self, t: int, topic: str):
        rng = self.rng
        self.retrieve(t, topic)
        session = f"s{t:x}"
        asked: set = set()
        for _ in range(rng.choices([1, 2, 3, 4, 5], weights=[30, 30, 20, 12, 8])[0]):
            _, reply, _ = self.exchange(t, topic, session, avoid=asked)
            t = reply["event_time"] + rng.randint(40, 300)

    def on_chain(self, t: int, payload):
        ci, si, topic, msg, kind, fact = payload
        self.retrieve(t, topic)
        session = f"s{t:x}"
        user = self.episode(t, topic, "user", msg, self.rng.importance(6, 1), session)
        self.episode(t + self.rng.randint(3, 20), topic, "assistant", "Noted, I've updated what I know.", 3, session)
        rec = self.queue_fact(kind, fact, topic, user, t, 7, chain=(ci, si))
        rec["attributes"]["chain"] = ci

    def on_protect(self, t: int, payload):
        topic, kind, fact, imp = payload
        rng = self.rng
        session = f"s{t:x}"
        user = self.episode(t, topic, "user", rng.pick(T.CONFIRM_USER).format(fact=fact), rng.importance(7, 1), session)
        self.episode(t + rng.randint(3, 20), topic, "assistant", rng.pick(T.CONFIRM_REPLY).format(fact=fact), 5, session)
        rec = self.add(kind=kind, content=fact, t=t + 30, importance=imp, confidence=1.0, decay_rate=0.0, protected=1,
                       source_ids=[user["id"]], entity_ids=self.entity_ids(fact, topic),
                       tags=list(T.TOPICS[topic]["tags"]) + ["confirmed"],
                       attributes={"topic": topic, "confirmed_by": "user", "source": "confirm_fact"})
        self.facts[fact] = rec

    def on_forget(self, t: int, payload):
        topic, msg, t2, request = payload
        rng = self.rng
        session = f"s{t:x}"
        user = self.episode(t, topic, "user", msg, rng.importance(6, 1), session)
        reply = self.episode(t + rng.randint(3, 20), topic, "assistant", "I'm sorry, that sounds frustrating.", 3, session)
        self._forget = getattr(self, "_forget", [])
        self._forget.append((t2, topic, request, [user, reply]))
        # the request itself arrives later; handled when its time comes (see on_night)

    def on_night(self, night: int, _):
        rng = self.rng
        for t2, topic, request, victims in [f for f in getattr(self, "_forget", []) if f[0] < night]:
            session = f"s{t2:x}"
            req = self.episode(t2, topic, "user", request, 5, session)
            self.episode(t2 + rng.randint(3, 20), topic, "assistant", T.FORGET_REPLY, 3, session)
            for v in victims:
                v["valid_until"] = t2 + 25
                v["attributes"].update(deleted_by="user", deletion_request=req["id"])
        self._forget = [f for f in getattr(self, "_forget", []) if f[0] >= night]
        due = [r for r in self.pending if r["created_at"] <= night]
        self.pending = [r for r in self.pending if r["created_at"] > night]
        for i, rec in enumerate(due):
            rec["created_at"] = night + 60 + 7 * i
            chain = rec.get("_chain")
            if chain is not None:
                ci, si = chain
                prev = self.chain_last.get(ci)
                if prev is not None:
                    rec["attributes"]["supersedes"] = prev["id"]
                    prev["valid_until"] = rec["created_at"]
                    prev["confidence"] = 0.3  # the assistant memory: a contradicted fact drops to 0.3
                self.chain_last[ci] = rec
            self.records.append(rec)
        if weekday(night) == 0:
            self.reflect_week(night)
            if datetime.fromtimestamp(night, tz=UTC).day <= 7:
                self.reflect_month(night)

    def on_end(self):
        # the last night's reflections happened in on_night(SNAP); now a final level-3 reflection and decay
        if len(self.monthly) >= 2:
            self.add(kind="reflection", content=T.HALF_YEAR, t=SNAP + 70 * 60, importance=10,
                     source_ids=[r["id"] for r in self.monthly], tags=["reflection", "review"],
                     attributes={"level": 3, "period": "2025-01..2025-06",
                                 "questions_addressed": ["How has Elena's life changed this half year?"]})
        for rec in self.records:
            if rec["kind"] not in ("fact", "preference") or rec.get("protected") or rec.get("valid_until") is not None:
                continue
            base = rec["confidence"]
            ref = rec.get("last_accessed") or rec["created_at"]
            crossing = (math.log(base / PRUNE_BELOW) / rec["decay_rate"]) ** (1 / 0.8)  # days until < 0.05
            prune_night = _next_night(int(ref + crossing * DAY))
            if prune_night <= SNAP:
                rec["valid_until"] = prune_night
                rec["confidence"] = ebbinghaus(base, rec["decay_rate"], (prune_night - ref) / DAY)
                rec["attributes"]["pruned"] = True
            else:  # facts extracted on the last night itself come after its decay step: not decayed
                rec["confidence"] = ebbinghaus(base, rec["decay_rate"], max(0, SNAP - ref) / DAY)
            rec["attributes"]["decayed_as_of"] = rec.get("valid_until") or max(SNAP, ref)

    # ------------------------------------------------------------ reflections
    def reflect_week(self, night: int):
        rng = self.rng
        lo = night - 7 * DAY
        eps = [r for r in self.records if r["kind"] == "episode" and lo <= r["event_time"] < night
               and r["attributes"]["role"] == "user" and r.get("valid_until") is None]
        by_topic: dict[str, list[dict]] = {}
        for r in eps:
            by_topic.setdefault(r["attributes"]["topic"], []).append(r)
        ranked = sorted(by_topic.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        t = night + 20 * 60
        made = 0
        for topic, rs in ranked[:3]:
            if len(rs) < 2 or (made and len(rs) < 3):
                continue
            sessions = len({r["attributes"]["session"] for r in rs})
            src = sorted(rs, key=lambda r: (-r["importance"], rng.random()))[:5]
            facts = [f for f in self.records if f["kind"] in ("fact", "preference") and lo <= f["created_at"] <= night + 600
                     and f["attributes"].get("topic") == topic]
            src += facts[:2]
            used = {}
            for r in rs:
                used.update(self.slots.get(r["id"], {}))
            text, _ = fill(rng.pick(T.WEEKLY[topic]), rng, {**T.TOPICS[topic]["slots"]}, {**used, "n": _conversations(sessions)})
            t += rng.randint(30, 200)
            text = self.retell.say("reflection", text, t, REFLECTION_FRAMES)
            rec = self.add(kind="reflection", content=text, t=t, importance=rng.choice([8, 8, 9]),
                           source_ids=[r["id"] for r in src], entity_ids=sorted({e for r in src for e in r["entity_ids"]}),
                           tags=["reflection", "weekly"] + list(T.TOPICS[topic]["tags"]),
                           attributes={"level": 1, "topic": topic, "week_of": _date(lo),
                                       "questions_addressed": list(T.WEEKLY_Q[topic])})
            rec["event_time"] = t
            self.weekly.append(rec)
            made += 1
            if rng.chance(0.3):
                self.touch(rec, t + rng.randint(1, 20) * DAY)

    def reflect_month(self, night: int):
        rng = self.rng
        month_start = datetime.fromtimestamp(night - 8 * DAY, tz=UTC).replace(day=1, hour=0, minute=0, second=0)
        lo = int(month_start.timestamp())
        cited = [r for r in self.weekly if lo <= r["created_at"] < night and r["attributes"]["level"] == 1
                 and r not in getattr(self, "_month_used", [])]
        if len(cited) < 2:
            return
        self._month_used = getattr(self, "_month_used", []) + cited
        if len(cited) > 6:
            cited = sorted(rng.sample(cited, 6), key=lambda r: r["created_at"])
        areas = [a for a, _ in Counter(T.AREAS[r["attributes"]["topic"]] for r in cited).most_common()]
        a = areas[0]
        b = areas[1] if len(areas) > 1 else rng.pick([x for x in ("family", "health", "hobbies") if x != a])
        month = month_start.strftime("%B")
        text = rng.pick(T.MONTHLY).format(month=month, a=a, b=b)
        text = text[0].upper() + text[1:]
        rec = self.add(kind="reflection", content=text, t=night + 50 * 60, importance=rng.choice([9, 10]),
                       source_ids=[r["id"] for r in cited], tags=["reflection", "monthly"],
                       attributes={"level": 2, "month": month_start.strftime("%Y-%m"),
                                   "questions_addressed": [f"What defined {month} for Elena?",
                                                           f"How do {a} and {b} affect each other?"]})
        self.monthly.append(rec)


def _next_night(t: int) -> int:
    """The next consolidation (01:00) after time t."""
    night = (t // DAY) * DAY + HOUR
    return night if night > t else night + DAY


def _date(t: int) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%d")


def _conversations(n: int) -> str:
    words = ["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
    return (words[n] if n < len(words) else str(n)) + (" conversation" if n == 1 else " conversations")


def _slots(template: str) -> list[str]:
    return re.findall(r"\{(\w+)\}", template)
