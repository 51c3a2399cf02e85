"""Reading the progress a Task reports, for tests: an import's text says "Importing done/total"."""
import re

from memviz.tasks import Task


def units(text: str) -> tuple[int, int]:
    """(done, total) from a progress text such as "Importing 1,024/2,048"."""
    m = re.search(r"([\d,]+)/([\d,]+)", text)
    assert m, f"no done/total in {text!r}"
    return int(m[1].replace(",", "")), int(m[2].replace(",", ""))


def counting(seen: list) -> Task:
    """A Task that appends (done, total) of each progress report to `seen`."""
    return Task(on_progress=lambda fraction, text: seen.append(units(text)))
