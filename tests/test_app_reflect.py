"""Reflect, consolidate, LLM settings and the importance meter driven through the window,
offscreen, against the fake OpenAI-compatible server over real HTTP on 127.0.0.1."""
from __future__ import annotations

import json

import keyring
import keyring.backend
import keyring.backends.fail
import pytest
from fake_openai import reply_error, reply_json, reply_text, slow  # noqa: E402
from PySide6.QtCore import QCoreApplication, Qt  # noqa: E402
from test_app_support import T0, build_store  # noqa: E402

from memviz.app.dialogs.llm_settings import QSETTINGS_KEY, load_llm_settings, save_llm_settings  # noqa: E402
from memviz.app.plots.style import theme  # noqa: E402
from memviz.reflect import LLMSettings, importance_status  # noqa: E402

QUESTIONS = {"questions": ["What should Alice's meals avoid?", "Who visits Alice?"]}
INSIGHT_A = {"insights": [{"insight": "Alice's meals must be free of peanuts.", "evidence": [1, 2]}]}
INSIGHT_B = {"insights": [{"insight": "Maya from Lisbon visits Alice.", "evidence": [1]}]}


@pytest.fixture
def store_file(tmp_path):
    path = tmp_path / "mem.db"
    s = build_store(path)
    day = 86400
    # consolidation material: an old fact that decays below the floor, one that only decays,
    # and a protected one that would otherwise be pruned
    s.insert_memories([
        {"id": "old-low", "kind": "fact", "agent": "alice", "content": "Alice once liked jazz.",
         "importance": 2, "event_time": T0 - 400 * day, "created_at": T0 - 400 * day, "confidence": 0.06},
        {"id": "old-low2", "kind": "fact", "agent": "alice", "content": "Alice had a red bicycle.",
         "importance": 2, "event_time": T0 - 400 * day, "created_at": T0 - 400 * day, "confidence": 0.06},
        {"id": "kept-safe", "kind": "fact", "agent": "alice", "content": "Alice's blood type is O.",
         "importance": 9, "event_time": T0 - 400 * day, "created_at": T0 - 400 * day, "confidence": 0.01,
         "protected": True},
    ])
    s.close()
    return str(path)


@pytest.fixture
def win(make_window, store_file):
    return make_window(store_file, size=(1200, 800), graph=True)


def use_server(win, server):
    save_llm_settings(win.settings, LLMSettings(base_url=server.base_url, chat_model="fake-chat",
                                                max_retries=0, timeout=5))


def reflections(win):
    c = win.state.data.store.conn
    return {r[0]: r for r in c.execute("SELECT id, valid_until FROM memories WHERE kind='reflection' "
                                       "AND id NOT LIKE 'refl%'")}


def open_dialog(qtbot, win):
    assert win.reflect_action.isEnabled()
    win.reflect_action.trigger()
    dlg = win.reflect_tools.dialog
    qtbot.waitUntil(dlg.isVisible, timeout=20000)
    dlg.agent.setCurrentIndex(dlg.agent.findData("alice"))
    dlg.questions.setValue(2)
    dlg.evidence_k.setValue(4)
    return dlg


def test_reflect_accept_one_reject_one_then_undo(qtbot, win, fake_openai):
    use_server(win, fake_openai)
    fake_openai.push(reply_json(QUESTIONS), reply_json(INSIGHT_A), reply_json(INSIGHT_B))
    dlg = open_dialog(qtbot, win)
    qtbot.mouseClick(dlg.propose_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: len(dlg.cards) == 2, timeout=20000)
    assert "2 reflections proposed" in dlg.message.text()
    a, b = dlg.cards
    assert a.proposal.question == QUESTIONS["questions"][0]
    assert a.text.text() == "Alice's meals must be free of peanuts." and a.text.textFormat() == Qt.PlainText
    assert a.evidence.count() == 2 and not dlg.write_button.isEnabled()
    # clicking evidence selects it in the other panels
    ev = a.evidence.item(1)
    rect = a.evidence.visualItemRect(ev)
    qtbot.mouseClick(a.evidence.viewport(), Qt.LeftButton, pos=rect.center())
    assert win.state.selected_ids == [ev.data(Qt.UserRole)]

    a.accept_box.setChecked(True)
    b.accept_box.setChecked(False)
    assert dlg.write_button.isEnabled()
    before = win.state.data.n
    qtbot.mouseClick(dlg.write_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: win.state.data.n == before + 1, timeout=20000)  # reloaded: the graph has it
    new_id = a.proposal.written_id
    assert new_id and b.proposal.written_id is None
    assert list(reflections(win)) == [new_id]
    row = win.state.data.store.get(new_id)
    assert row["kind"] == "reflection" and row["importance"] >= 8
    assert row["source_ids"] == a.proposal.cited_ids and len(row["source_ids"]) == 2
    assert row["attributes"]["questions_addressed"] == [QUESTIONS["questions"][0]]
    qtbot.waitUntil(lambda: win.state.selected_ids == [new_id], timeout=20000)  # selected after the reload
    qtbot.waitUntil(lambda: win.graph.graph is not None and
                    new_id in {win.state.data.arrays.ids[r] for r in win.graph.graph.rows if r >= 0}, timeout=20000)

    assert win.undo_stack.undoText().startswith("Reflect")
    win.undo_action.trigger()
    assert reflections(win)[new_id][1] is not None  # soft-deleted, not gone
    win.redo_action.trigger()
    assert reflections(win)[new_id][1] is None


def test_evidence_is_retrieved_with_the_states_parameters(qtbot, win, fake_openai):
    """Reflection ranks its evidence with `state.params` (what the query panel shows): a kind
    filter that matches nothing leaves every question without evidence."""
    use_server(win, fake_openai)
    win.state.set_params(win.state.params.replace(kinds=("no-such-kind",)))
    assert win.query.kind.currentIndex() == 0  # the panel cannot show it, the state holds it
    fake_openai.push(reply_json(QUESTIONS))
    dlg = open_dialog(qtbot, win)
    qtbot.mouseClick(dlg.propose_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: dlg.propose_button.isEnabled(), timeout=20000)
    assert not dlg.cards and len(fake_openai.chat_requests()) == 1  # questions asked, no insight asked
    assert dlg.problems.text().count("no evidence was found") == 2


def test_server_errors_show_and_write_nothing(qtbot, win, fake_openai):
    use_server(win, fake_openai)
    dlg = open_dialog(qtbot, win)
    fake_openai.push(reply_error(500, "model crashed"))
    qtbot.mouseClick(dlg.propose_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: dlg.propose_button.isEnabled(), timeout=20000)
    assert "500" in dlg.message.text() or "model crashed" in dlg.message.text()
    assert "Nothing was written" in dlg.message.text() and not dlg.cards
    # a reply cut off by the token limit
    fake_openai.push(reply_text('{"questions": ["What sho', finish_reason="length"))
    qtbot.mouseClick(dlg.propose_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: dlg.propose_button.isEnabled(), timeout=20000)
    assert "cut off" in dlg.message.text().lower() or "token" in dlg.message.text().lower()
    assert not dlg.write_button.isEnabled() and reflections(win) == {}
    assert win.undo_stack.count() == 0


def test_cancel_midway_writes_nothing(qtbot, win, fake_openai):
    use_server(win, fake_openai)
    fake_openai.push(reply_json(QUESTIONS), slow(30, reply_json(INSIGHT_A)), reply_json(INSIGHT_B))
    dlg = open_dialog(qtbot, win)
    qtbot.mouseClick(dlg.propose_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: len(fake_openai.chat_requests()) >= 2, timeout=20000)  # waiting on the slow reply
    assert dlg.cancel_button.isVisible()
    qtbot.mouseClick(dlg.cancel_button, Qt.LeftButton)
    assert "Cancelled" in dlg.message.text() and dlg.propose_button.isEnabled()
    assert win.workers.wait(15000), "the proposal went on after its cancel (its reply takes 30 s)"
    QCoreApplication.processEvents()  # what the ended job posted is delivered (and dropped)
    assert not dlg.cards and reflections(win) == {} and win.undo_stack.count() == 0


def test_consolidate_untick_apply_undo(qtbot, win):
    win.reflect_tools.consolidate_action.trigger()
    dlg = win.reflect_tools.consolidate_dialog
    qtbot.waitUntil(lambda: dlg.plan is not None, timeout=20000)
    plan = dlg.plan
    pruned = [p.id for p in plan.prune]
    assert {"old-low", "old-low2"} <= set(pruned) and "kept-safe" not in pruned  # protected: never listed
    assert "kept-safe" not in [d.id for d in plan.decay] and plan.protected_skipped >= 1
    assert dlg.decay.rowCount() == len(plan.decay) > 0
    keep = dlg.prune.item(pruned.index("old-low2"), 0)
    keep.setCheckState(Qt.Unchecked)
    assert plan.prune[pruned.index("old-low2")].selected is False
    decayed = next(d for d in plan.decay if d.id not in pruned)
    qtbot.mouseClick(dlg.apply_button, Qt.LeftButton)
    store = win.state.data.store
    row = {i: store.get(i) for i in ("old-low", "old-low2", "kept-safe", decayed.id)}
    assert row["old-low"]["valid_until"] is not None
    assert row["old-low2"]["valid_until"] is None
    assert row["kept-safe"]["valid_until"] is None and row["kept-safe"]["confidence"] == pytest.approx(0.01)
    assert row[decayed.id]["confidence"] == pytest.approx(decayed.after) and decayed.after < decayed.before
    qtbot.waitUntil(lambda: win.undo_stack.undoText().startswith("Consolidat"), timeout=20000)  # synced after the write
    win.undo_action.trigger()
    qtbot.waitUntil(lambda: store.get("old-low")["valid_until"] is None, timeout=20000)
    assert store.get(decayed.id)["confidence"] == pytest.approx(decayed.before)
    qtbot.waitUntil(win.undo_stack.canRedo, timeout=20000)
    win.redo_action.trigger()
    qtbot.waitUntil(lambda: store.get("old-low")["valid_until"] is not None, timeout=20000)
    # let the reload end before teardown
    qtbot.waitUntil(lambda: not any(win.workers.running(j) for j in ("reload", "refresh")), timeout=10000)


def test_importance_meter_shows_status(qtbot, win):
    win.state.select_ids(["ep06"])  # bob
    st = importance_status(win.state.data.store, "bob")
    meter = win.reflect_tools.meter
    assert meter.isVisible() and meter.bar.text() == f"{st.accumulated:g} / {st.threshold:g}"
    assert meter.suggest.isVisible() == st.crossed
    assert not st.crossed
    store = win.state.data.store
    store.insert_memories([{"id": "bob-new", "kind": "episode", "agent": "bob", "importance": 6,
                            "content": "Bob ran 21 km.", "created_at": (st.since or 0) + 10}])
    store.set_meta("reflection_threshold", 5)
    win.reflect_tools.refresh_meter()
    st2 = importance_status(store, "bob")
    assert st2.accumulated == st.accumulated + 6 and st2.crossed
    assert meter.bar.text() == f"{st2.accumulated:g} / 5" and meter.suggest.isVisible()


def tone(label) -> str:
    """The colour a label's text is drawn in."""
    from PySide6.QtGui import QPalette
    return label.palette().color(QPalette.WindowText).name()


def test_llm_settings_dialog_saves_public_settings_and_tests(qtbot, win, fake_openai):
    dlg = win.reflect_tools.open_settings()
    dlg.base_url.setText(fake_openai.base_url)
    dlg.chat_model.setEditText("fake-chat")
    fake_openai.push(reply_text("ok"))  # the test's chat ping
    qtbot.mouseClick(dlg.test_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: dlg.test_button.isEnabled() and dlg.result_label.text()
                    and not dlg.result_label.text().startswith("Testing"), timeout=20000)
    assert tone(dlg.result_label) == theme().ok, dlg.result_label.text()  # the theme's green
    dlg.chat_model.setEditText("no-such-model")
    qtbot.mouseClick(dlg.test_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: dlg.test_button.isEnabled() and not dlg.result_label.text().startswith("Testing"),
                    timeout=20000)
    assert tone(dlg.result_label) == theme().alarm and "fake-chat" in dlg.result_label.text()
    dlg.chat_model.setEditText("fake-chat")
    dlg.buttons.button(dlg.buttons.StandardButton.Save).click()
    s = load_llm_settings(win.settings)
    assert s.base_url == fake_openai.base_url and s.chat_model == "fake-chat"
    saved = json.loads(win.settings.value(QSETTINGS_KEY))
    assert "api_key" not in saved


def test_threshold_from_the_dialog_is_saved_in_the_store(qtbot, win):
    dlg = open_dialog(qtbot, win)
    assert dlg.threshold.value() == 100
    dlg.threshold.setValue(40)
    dlg.threshold.editingFinished.emit()
    assert win.state.data.store.meta("reflection_threshold") == 40
    assert win.reflect_tools.meter.bar.text().endswith("/ 40")


def test_bad_output_shows_error(qtbot, win, fake_openai):
    use_server(win, fake_openai)
    dlg = open_dialog(qtbot, win)
    fake_openai.push(reply_text("Sure! Here are some questions: what, why"),
                     reply_text("Still not JSON, sorry"), reply_text("nope"))
    qtbot.mouseClick(dlg.propose_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: dlg.propose_button.isEnabled(), timeout=20000)
    assert "Nothing was written" in dlg.message.text() and not dlg.cards and reflections(win) == {}


def test_read_only_store_disables_writes(make_window, store_file):
    w = make_window(store_file, read_only=True, settings="ro.ini")
    assert not w.reflect_action.isEnabled() and not w.reflect_tools.consolidate_action.isEnabled()


class MemoryKeyring(keyring.backend.KeyringBackend):
    """A real keyring backend that keeps passwords in a dict (no OS keyring on CI machines)."""

    priority = 1

    def __init__(self):
        super().__init__()
        self.passwords = {}

    def get_password(self, service, username):
        return self.passwords.get((service, username))

    def set_password(self, service, username, password):
        self.passwords[(service, username)] = password

    def delete_password(self, service, username):
        self.passwords.pop((service, username), None)


def test_api_key_goes_to_the_keyring_only(qtbot, win, tmp_path):
    previous = keyring.get_keyring()
    ring = MemoryKeyring()
    keyring.set_keyring(ring)
    try:
        dlg = win.reflect_tools.open_settings()
        dlg.base_url.setText("https://llm.example.com/v1")
        dlg.chat_model.setEditText("some-model")
        dlg.api_key.setText("sk-secret-123")
        dlg.buttons.button(dlg.buttons.StandardButton.Save).click()
        assert not dlg.isVisible()
        assert ring.passwords == {("memviz-llm", "https://llm.example.com/v1"): "sk-secret-123"}
        win.settings.sync()
        assert "sk-secret-123" not in (tmp_path / "settings.ini").read_text()
        assert load_llm_settings(win.settings).resolve_api_key() == ("sk-secret-123", "the OS keyring")
        with open(win.state.data.store.path, "rb") as f:
            assert b"sk-secret-123" not in f.read()
    finally:
        keyring.set_keyring(previous)


def test_no_keyring_keeps_the_dialog_open_with_a_message(qtbot, win):
    previous = keyring.get_keyring()
    keyring.set_keyring(keyring.backends.fail.Keyring())
    try:
        dlg = win.reflect_tools.open_settings()
        dlg.base_url.setText("https://llm.example.com/v1")
        dlg.api_key.setText("sk-secret-123")
        dlg.buttons.button(dlg.buttons.StandardButton.Save).click()
        assert dlg.isVisible() and "keyring" in dlg.result_label.text()
        assert dlg.api_key.text() == "sk-secret-123"  # nothing typed is lost
        assert win.settings.value(QSETTINGS_KEY) is None
    finally:
        keyring.set_keyring(previous)
