"""The multi-agent simulation sample (Wonda memory style, with the dual-memory design's reflections; GLOSSARY).

Gifted memories (character, scene, character_knowledge) are seeded at initialisation;
then nine simulated days of scenes in which the agents talk ("X said: ..."), observe and
act, each line an episode of its speaker; each night every agent reflects on what it
heard (level 1, citing episodes), every third night on its reflections (level 2), and on
the last night on those (level 3).
"""
from __future__ import annotations

import re
from collections import Counter

from . import simulation_text as T
from .common import DAY, Rand, epoch, fill, memory

SEED = 1001
INIT = epoch(2025, 6, 2, 7, 0)  # simulation initialisation (gifted memories)
DAY1 = epoch(2025, 6, 2)


def build(scale: float = 1.0) -> tuple[list[dict], list[dict], dict]:
    """(records, entities, meta) of the simulation store; `scale` shrinks the dialogue (1.0 = full sample)."""
    return _Sim(Rand(SEED), scale).run()


class _Sim:
    def __init__(self, rng: Rand, scale: float):
        self.rng, self.scale = rng, scale
        self.records: list[dict] = []
        self.agents = list(T.CHARACTERS)
        self.turn = 0
        self.identity: dict[str, list[dict]] = {}   # agent -> its identity memories (query_self hits)
        self.scene_by_loc: dict[str, list[dict]] = {}
        self.heard: dict[str, list[dict]] = {a: [] for a in self.agents}  # episodes each agent witnessed
        self.where = {a: None for a in self.agents}
        self.entities = [{"id": rng.new_id(), "canonical_name": ch["full"], "type": "person", "aliases": [a],
                          "summary": ch["identity"][0].replace("You are ", "", 1)} for a, ch in T.CHARACTERS.items()]
        self.entities += [{"id": rng.new_id(), "canonical_name": loc, "type": "place", "aliases": [],
                           "summary": desc["location"]} for loc, desc in T.LOCATIONS.items()]
        self._entity_patterns = [
            (e["id"], re.compile(r"\b(" + "|".join(re.escape(n) for n in [e["canonical_name"]] + e["aliases"]) + r")\b"))
            for e in self.entities]
        self._place = {e["canonical_name"]: e["id"] for e in self.entities if e["type"] == "place"}

    def add(self, **kw) -> dict:
        rec = memory(self.rng, **kw)
        ids = [eid for eid, pat in self._entity_patterns if pat.search(rec["content"])]
        place = self._place.get(rec.get("attributes", {}).get("location"))
        rec["entity_ids"] = ids + ([place] if place and place not in ids else [])
        self.records.append(rec)
        return rec

    def run(self):
        self.gift()
        l1: dict[str, list[dict]] = {a: [] for a in self.agents}
        l2: dict[str, list[dict]] = {a: [] for a in self.agents}
        for d, (context, locs, weights) in enumerate(T.DAYS):
            day0 = DAY1 + d * DAY
            self.add(agent="", kind="scene", content=context, t=day0 + 7 * 3600 + d, importance=6,
                     tags=["scene", "context"], attributes={"category": "context", "day": d + 1,
                                                            "canonical_queries": T.CANONICAL_QUERIES["context"]})
            for slot, loc in enumerate(locs):
                self.scene(d, slot, loc, weights)
            for a in self.agents:
                l1[a] += self.reflect_day(d, a)
            if d % 3 == 2:
                for a in self.agents:
                    l2[a] += self.reflect_window(d, a, [r for r in l1[a] if r["attributes"]["day"] > d - 2])
        for a in self.agents:
            self.reflect_lesson(len(T.DAYS) - 1, a, l2[a])
        meta = {"sample": {"name": "simulation", "title": T.SCENARIO["title"], "seed": SEED, "scale": self.scale,
                           "generator": "scripts/make_samples.py", "agents": self.agents},
                "reflection_threshold": 100}
        counts = Counter(e for r in self.records for e in r["entity_ids"])
        for e in self.entities:
            e["mention_count"] = counts.get(e["id"], 0)
        return self.records, self.entities, meta

    # ------------------------------------------------------------ gifted memories
    def gift(self):
        rng, t = self.rng, INIT
        for a, ch in T.CHARACTERS.items():
            items = [("identity", s, 9) for s in ch["identity"]]
            items += [("background", s, 7) for s in ch["background"]]
            items += [("communication", s, 6) for s in ch["communication"]]
            items += [("decision_style", s, 6) for s in ch["decision"]]
            items += [("traits", f"You are {x}.", 6) for x in ch["traits"]]
            items += [("skills", f"You are good at {x}.", 5) for x in ch["skills"]]
            items += [("values", f"You value {x} above convenience.", 7) for x in ch["values"]]
            for cat, text, imp in items:
                rec = self.add(agent=a, kind="character", content=text, t=t, importance=rng.importance(imp, 0.6),
                               protected=1, decay_rate=0.0, tags=["gifted", "character", cat],
                               attributes={"type": "character", "category": cat, "source": "gifted",
                                           "canonical_queries": T.CANONICAL_QUERIES[cat]})
                if cat == "identity":
                    self.identity.setdefault(a, []).append(rec)
        self.add(agent="", kind="scene", content=T.SCENARIO["summary"], t=t, importance=8,
                 tags=["scene", "context"], attributes={"category": "context", "source": "gifted",
                                                        "canonical_queries": T.CANONICAL_QUERIES["context"]})
        for loc, desc in T.LOCATIONS.items():
            for cat in ("location", "atmosphere"):
                rec = self.add(agent="", kind="scene", content=desc[cat], t=t, importance=rng.importance(5, 0.8),
                               tags=["scene", cat], attributes={"category": cat, "location": loc, "source": "gifted",
                                                                "canonical_queries": T.CANONICAL_QUERIES[cat]})
                self.scene_by_loc.setdefault(loc, []).append(rec)
        for a in T.CHARACTERS:
            for b, other in T.CHARACTERS.items():
                if a == b:
                    continue
                traits = rng.sample(other["traits"], 2)
                texts = [
                    ("identity", f"{other['full']} is {other['archetype']}: {other['identity'][0].replace('You are ', '', 1)}"),
                    ("observable", f"{b} {other['observable']}, and comes across as {traits[0]} and {traits[1]}."),
                    ("relationship", T.RELATIONS[(a, b)]),
                ]
                for cat, text in texts:
                    self.add(agent=a, kind="character_knowledge", content=text, t=t, importance=rng.importance(6, 1),
                             tags=["gifted", "character_knowledge", cat],
                             attributes={"type": "character_knowledge", "category": cat, "about": b, "source": "gifted",
                                         "canonical_queries": [f"who is {b}?", f"what do I know about {b}?",
                                                               f"describe {b}"]})

    # ------------------------------------------------------------ one scene of dialogue
    def participants(self, loc: str) -> list[str]:
        rng = self.rng
        host = {"Harbour Café": "Jordan", "Reef Station": "Priya", "The Marguerite": "Sam"}.get(loc)
        cap = 3 if loc == "The Marguerite" else 5
        n = rng.randint(2, cap)
        people = rng.sample(self.agents, n)
        if host and host not in people:
            people[0] = host
        return people

    def scene(self, d: int, slot: int, loc: str, weights: dict):
        rng = self.rng
        h, m, tod = T.DAY_TIMES[slot]
        t = DAY1 + d * DAY + h * 3600 + m * 60 + rng.randint(0, 40) * 60
        people = self.participants(loc)
        self.add(agent="", kind="scene", content=f"Day {d + 1}, {tod}, at the {loc}.", t=t - 60, importance=3,
                 tags=["scene", "time"], attributes={"category": "time", "day": d + 1, "location": loc,
                                                     "canonical_queries": T.CANONICAL_QUERIES["time"]})
        for a in people:
            if self.where[a] and self.where[a] != loc and rng.chance(0.35):
                self.episode(a, "action", T.ACTIONS["move"].format(who=a, origin=self.where[a], destination=loc),
                             t - rng.randint(120, 900), d, loc, people, "travel", 2, act="move")
            self.where[a] = loc
            self.touch(self.identity[a], t)          # query_self() on arrival
            self.touch(self.scene_by_loc[loc], t)    # query_scene()
        main = rng.weighted(weights)
        last = None
        n_turns = max(3, round(rng.randint(24, 36) * self.scale))
        for _ in range(n_turns):
            topic = main if rng.chance(0.75) else rng.weighted(weights)
            w = {p: T.TOPIC_SPEAKERS[topic][p] for p in people if p != last}
            speaker = rng.weighted(w)
            last = speaker
            t += rng.randint(20, 110)
            self.turn += 1
            text, imp = self.utterance(speaker, topic, people, weights)
            self.episode(speaker, "dialogue", f"{speaker} said: {text}", t, d, loc, people, topic, imp)
            if rng.chance(0.04) and self.heard[speaker]:
                self.touch([rng.pick(self.heard[speaker])], t)  # query_memory() recalled an old line
            if rng.chance(0.12):
                who = rng.pick(people)
                noun = rng.pick(T.TOPICS[topic]["noun"])
                self.episode(who, "observation", rng.pick(T.OBSERVATIONS[topic]).format(who=who, noun=noun),
                             t + rng.randint(5, 30), d, loc, people, topic, max(1, T.TOPIC_IMPORTANCE[topic] - 1))
        if rng.chance(0.6):
            proposal = rng.pick(T.PROPOSALS[main])
            proposer = max(people, key=lambda p: (T.TOPIC_SPEAKERS[main][p], rng.random()))
            t += rng.randint(30, 120)
            self.episode(proposer, "action", T.ACTIONS["propose"].format(who=proposer, proposal=proposal), t, d, loc,
                         people, main, T.TOPIC_IMPORTANCE[main] + 1, act="propose")
            for voter in rng.sample(people, min(len(people), 2)):
                vote = "vote_yes" if rng.chance(0.7) else "vote_no"
                t += rng.randint(5, 40)
                self.episode(voter, "action", T.ACTIONS[vote].format(who=voter, proposal=proposal), t, d, loc,
                             people, main, T.TOPIC_IMPORTANCE[main], act=vote)

    def utterance(self, speaker: str, topic: str, people: list[str], weights: dict) -> tuple[str, int]:
        rng, spec = self.rng, T.TOPICS[topic]
        others = [p for p in people if p != speaker] or [speaker]
        fixed = {"other": rng.pick(others), "deadline": rng.pick(T.DEADLINES)}
        generic = rng.chance(0.3)
        template = rng.pick(T.GENERIC) if generic else rng.pick(spec["say"])
        text, _ = fill(template, rng, spec, fixed)
        if rng.chance(0.25):
            more, _ = fill(rng.pick(spec["say"]), rng, spec, fixed)
            text += " " + more
        if rng.chance(0.35):
            opener = rng.pick(T.CHARACTERS[speaker]["openers"])
            first = text.split(" ", 1)[0].strip(",")
            keep = first in ("I", "I'm", "I'd", "I'll", "I've", "Mrs", "Councillor", "Ezekiel's") or first in T.CHARACTERS
            text = f"{opener} {text if keep else text[0].lower() + text[1:]}"
        base = T.TOPIC_IMPORTANCE[topic] + (1 if weights.get(topic, 0) >= 5 else 0) + (1 if "decide" in template else 0)
        return text, rng.importance(base, 1.1)

    def episode(self, agent, category, content, t, d, loc, people, topic, importance, act=None) -> dict:
        attrs = {"category": category, "turn": self.turn, "speaker": agent, "location": loc, "day": d + 1,
                 "topic": topic, "listeners": sorted(people)}
        if act:
            attrs["action"] = act
        rec = self.add(agent=agent, kind="episode", content=content, t=t, importance=importance,
                       tags=["episodic", category, topic], attributes=attrs)
        for p in people:
            self.heard[p].append(rec)
        return rec

    @staticmethod
    def touch(recs, t):
        for r in recs:
            r["access_count"] = r.get("access_count", 0) + 1
            r["last_accessed"] = max(t, r.get("last_accessed") or 0)

    # ------------------------------------------------------------ reflections (dual-memory design)
    def reflect_day(self, d: int, me: str) -> list[dict]:
        rng = self.rng
        today = [r for r in self.heard[me] if r["attributes"]["day"] == d + 1 and r["attributes"]["topic"] in T.INSIGHTS]
        by_topic: dict[str, list[dict]] = {}
        for r in today:
            by_topic.setdefault(r["attributes"]["topic"], []).append(r)
        ranked = sorted(by_topic.items(), key=lambda kv: -sum(r["importance"] for r in kv[1]))
        out = []
        t = DAY1 + d * DAY + 22 * 3600 + rng.randint(0, 40) * 60
        for topic, eps in ranked[:3]:
            if len(eps) < 2:
                continue
            eps = sorted(eps, key=lambda r: (-r["importance"], rng.random()))[:rng.randint(3, 6)]
            speakers = Counter(r["attributes"]["speaker"] for r in eps if r["attributes"]["speaker"] != me)
            top = speakers.most_common(1)[0][0] if speakers else me
            insight = rng.pick(T.INSIGHTS[topic]).format(top=top)
            frame = rng.pick(["{me} realises that {i}.", "{me} has come to believe that {i}.",
                              "It is becoming clear to {me} that {i}.", "{me} thinks {i}."])
            text = frame.format(me=me, i=insight)
            questions = [q.format(top=top) for q in T.QUESTIONS[topic]]
            t += rng.randint(60, 400)
            out.append(self.add(agent=me, kind="reflection", content=text[0].upper() + text[1:], t=t,
                                importance=rng.choice([8, 8, 9, 9, 10]), source_ids=[r["id"] for r in eps],
                                tags=["reflection", topic],
                                attributes={"level": 1, "day": d + 1, "topic": topic, "questions_addressed": questions,
                                            "about": top}))
            if rng.chance(0.3):
                self.touch([out[-1]], t + DAY // 2)
        return out

    def reflect_window(self, d: int, me: str, refl: list[dict]) -> list[dict]:
        rng = self.rng
        out = []
        pool = list(refl)
        t = DAY1 + d * DAY + 23 * 3600 + rng.randint(0, 20) * 60
        while len(pool) >= 2 and len(out) < 2:
            k = min(len(pool), rng.randint(2, 4))
            cited = rng.sample(pool, k)
            pool = [r for r in pool if r not in cited]
            topics = [r["attributes"]["topic"] for r in cited]
            a = topics[0]
            b = next((x for x in topics[1:] if x != a), rng.pick([x for x in T.THEMES if x != a]))
            people = _and(sorted({r["attributes"]["about"] for r in cited if r["attributes"]["about"] != me}) or ["the others"])
            text = rng.pick(T.PATTERNS).format(first=d - 1, last=d + 1, me=me, theme_a=T.THEMES[a],
                                               theme_b=T.THEMES[b], people=people)
            t += rng.randint(60, 300)
            out.append(self.add(agent=me, kind="reflection", content=text, t=t, importance=rng.choice([9, 9, 10]),
                                source_ids=[r["id"] for r in cited], tags=["reflection", "pattern"],
                                attributes={"level": 2, "day": d + 1, "topics": topics, "about": people,
                                            "questions_addressed": [f"What has {me} learned about {T.THEMES[a]} and {T.THEMES[b]}?",
                                                                    "What keeps dividing the committee?"]}))
        return out

    def reflect_lesson(self, d: int, me: str, l2: list[dict]):
        if len(l2) < 2:
            return
        rng = self.rng
        topics = Counter(x for r in l2 for x in r["attributes"]["topics"]).most_common(2)
        a, b = topics[0][0], (topics[1][0] if len(topics) > 1 else "legends")
        people = rng.pick([r["attributes"]["about"] for r in l2])
        text = rng.pick(T.LESSONS).format(me=me, theme_a=T.THEMES[a], theme_b=T.THEMES[b], people=people)
        self.add(agent=me, kind="reflection", content=text, t=DAY1 + d * DAY + 23 * 3600 + 50 * 60, importance=10,
                 source_ids=[r["id"] for r in l2], tags=["reflection", "lesson"],
                 attributes={"level": 3, "day": d + 1, "topics": [a, b],
                             "questions_addressed": [f"What did {me} learn from the festival?"]})


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
