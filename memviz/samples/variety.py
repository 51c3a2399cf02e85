"""Retelling: a person does not say the same sentence forty times, and an assistant does not
answer with it word for word. The generators pick from a few templates per topic, so the
same text comes up again and again; `Retelling.say` keeps the first telling as it is and
frames each later one by when it was said before ("Following up on 2025-03-04: …").

Deterministic without a random source of its own: the n-th retelling of a text takes the
n-th frame, so the samples' main random stream (ids, times, choices) is left unchanged.
"""
from __future__ import annotations

from datetime import UTC, datetime

USER_FRAMES = (
    "Following up on {date}: {text}",
    "Same question as on {date}. {text}",
    "Back to what we discussed on {date}: {text}",
    "{text} (I asked on {date} too.)",
    "Picking this up again after {date}: {text}",
    "Still open since {date}. {text}",
)
AGENT_FRAMES = (
    "As I suggested on {date}: {text}",
    "Same as on {date}. {text}",
    "Like last time ({date}): {text}",
    "{text} (Unchanged since {date}.)",
    "Repeating my answer of {date}: {text}",
    "Still my advice, as on {date}: {text}",
)
REFLECTION_FRAMES = (
    "Again in the week after {date}: {text}",
    "Still true after {date}: {text}",
    "{text} The pattern seen on {date} holds.",
    "Once more since {date}: {text}",
)


def _date(t: int) -> str:
    d = datetime.fromtimestamp(t, tz=UTC)
    return f"{d.day} {d:%B}"


class Retelling:
    """What each speaker has said; `say` returns a text that speaker has not said before."""

    def __init__(self):
        self.said: dict[tuple[str, str], list[int]] = {}   # (speaker, text as first said) -> times
        self.used: set[tuple[str, str]] = set()             # (speaker, text as stored)

    def say(self, speaker: str, text: str, t: int, frames=USER_FRAMES) -> str:
        times = self.said.setdefault((speaker, text), [])
        out = text
        if times:
            n = len(times)
            for k in range(len(frames)):
                out = frames[(n - 1 + k) % len(frames)].format(date=_date(times[-1]), text=text)
                if (speaker, out) not in self.used:
                    break
            else:
                out = f"{frames[0].format(date=_date(times[-1]), text=text)} ({n + 1}th time)"
        times.append(t)
        self.used.add((speaker, out))
        return out
