"""The window on Letta: a Letta server's database opened in place (every panel on its mirror,
a live change arriving as a delta, a block edit refused with its reason), and a Letta agent file
opened from the command line or a drop going to the import dialog, recognised."""
from __future__ import annotations

from pathlib import Path

import pytest
from letta_db import Letta
from pg_server import pg, pg_db  # noqa: F401 - fixtures

from memviz.embed import default_embedder

AF = Path(__file__).parent / "data" / "letta" / "two_agents_handmade.af"


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMVIZ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMVIZ_DATA_DIR", str(tmp_path / "data"))


def test_letta_database_in_the_window(pg_db, make_window, qtbot):  # noqa: F811
    db = Letta(pg_db, default_embedder())
    try:
        ada = db.create_agent("ada", {"human": "Name: Priya.", "persona": "I am Ada."})
        for i, text in enumerate(["Priya wants a weekend in Lisbon.", "Priya avoids red-eye flights.", "Priya is vegetarian."]):
            db.insert_passage(ada, text, ["trips"] if i == 0 else None, created_at=1_730_000_000 + i)
        win = make_window(pg_db)
        data = win.state.data
        assert len(data.arrays) == 5
        assert sorted(data.store.counts()["by_kind"]) == ["archival", "core"]
        assert data.store.describe().startswith("Letta database at")
        new = db.insert_passage(ada, "Priya's sister lives in Porto.")
        qtbot.waitUntil(lambda: new in set(win.state.data.arrays.ids.tolist()), timeout=30000)  # live, by delta
        assert len(win.state.data.arrays) == 6
        win.state.data.store.close()
        win.state.set_data(None)
    finally:
        db.close()


def test_an_agent_file_opened_goes_to_the_import_dialog(make_window, qtbot):
    win = make_window()
    win.open_path(str(AF))
    dlg = win.import_dialog
    assert dlg is not None and dlg.isVisible()
    assert dlg.format.currentText() == "letta-af" and dlg.message.text() == "Looks like letta-af."
    dlg.reject()
