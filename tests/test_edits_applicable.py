"""Which edit applies to which memory (memviz.edits.applicable), headless: no Qt imported."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import memviz.store as ms
from memviz.edits.applicable import EDITS, applies, refusal, store_refusal, targets

T = 1_700_000_000


@pytest.fixture
def arrays(store):
    store.insert_memories([
        {"id": "live", "kind": "fact", "content": "a current memory", "event_time": T},
        {"id": "live2", "kind": "fact", "content": "another current memory", "event_time": T},
        {"id": "gone", "kind": "fact", "content": "a retired memory", "event_time": T, "valid_until": T + 5},
        {"id": "safe", "kind": "fact", "content": "protected, no decay", "event_time": T, "protected": True,
         "decay_rate": 0.0},
        {"id": "half", "kind": "fact", "content": "protected, still decaying", "event_time": T,
         "protected": True, "decay_rate": 0.1},
    ])
    return store.arrays()


def test_protect_unprotect_delete_restore_follow_the_rows(arrays):
    assert applies("confirm", arrays, ["live"]) and not applies("unprotect", arrays, ["live"])
    assert refusal("confirm", arrays, ["safe"]) == "the memory is already protected"
    assert applies("confirm", arrays, ["half"])  # protected by the agent but still decaying: confirm stops it
    assert applies("unprotect", arrays, ["safe"]) and applies("unprotect", arrays, ["half"])
    assert applies("delete", arrays, ["live"]) and refusal("delete", arrays, ["gone"]) == "the memory is already retired"
    assert applies("restore", arrays, ["gone"]) and "nothing to restore" in refusal("restore", arrays, ["live"])
    # several memories: the edit applies when it changes at least one of them
    assert applies("delete", arrays, ["gone", "live"]) and applies("restore", arrays, ["gone", "live"])
    assert refusal("delete", arrays, ["gone", "gone"]) == "the memory is already retired"
    assert refusal("unprotect", arrays, ["live", "live2"]) == "every chosen memory is not protected"
    assert targets("delete", arrays, ["gone", "live", "live2"]) == ["live", "live2"]
    assert targets("restore", arrays, ["gone", "live"]) == ["gone"]


def test_correct_needs_one_current_memory(arrays):
    assert applies("correct", arrays, ["live"])
    assert "one memory" in refusal("correct", arrays, ["live", "live2"])
    assert "retired" in refusal("correct", arrays, ["gone"])


def test_importance_and_tags_apply_to_any_memory(arrays):
    for key in ("importance", "tags"):
        assert applies(key, arrays, ["gone", "safe", "live"])


def test_nothing_applies_without_a_memory_or_a_store(arrays):
    for key in EDITS:
        assert refusal(key, arrays, []) == "select a memory first"
        assert refusal(key, arrays, ["no-such-id"]) == "select a memory first"
        assert refusal(key, None, ["live"]) == "no store is open"
    assert store_refusal(None) == "no store is open"
    with pytest.raises(ValueError, match="unknown edit 'explode'"):
        refusal("explode", arrays, ["live"])


def test_a_read_only_store_refuses_every_edit_and_says_why(store_path, arrays):
    with ms.open(str(store_path), read_only=True) as ro:
        why = store_refusal(ro)
        assert why.startswith("read-only: ") and len(why) > len("read-only: ")
        for key in EDITS:
            assert refusal(key, arrays, ["live"], store=ro) == why
    with ms.open(str(store_path)) as rw:
        assert store_refusal(rw) is None and applies("delete", arrays, ["live"], store=rw)


def test_the_rules_import_no_qt():
    code = ("import sys, memviz.edits.applicable; "
            "print(sorted(m for m in sys.modules if m.startswith(('PySide6', 'pyqtgraph', 'memviz.app'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.stdout.strip() == "[]"
