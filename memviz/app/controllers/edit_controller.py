"""The bridge from the window to memviz.edits: actions, shortcuts, undo, dialogs.

`EditController(state, undo_stack, workers, dialog_parent)` owns the QActions Correct…,
Confirm/Protect, Unprotect, Soft-delete, Restore, Set importance… and Edit tags… (`actions`,
acting on the selection) and makes fresh ones for a context menu (`context_actions(ids)`);
the window puts them in its menus and toolbar. It talks back through signals: `message`
(status line), `refresh_requested` (read what the write changed), `edited` (a step was written).
Which edit applies to which memory is memviz.edits.applicable's rule, not the controller's.

One `memviz.edits.History` per open store does every write, on a second connection to the
store (a write never meets a background job reading on the window's). The window's QUndoStack
mirrors it: each done or undone action is one QUndoCommand whose undo()/redo() call
History.undo() / redo(), so Ctrl+Z / Ctrl+Shift+Z work from every panel. History can refuse or
defer a step (busy agent, conflict); after any change of the History the stack is rebuilt from
it when the two differ, so they never drift apart.

Edits are guarded by the row as the window showed it (the loaded arrays): a row the agent
changed since raises the conflict dialog. A read-only store disables every edit action, with
the reason in the tooltip; pressing the key of a disabled edit says in the status bar why
it is off and what to do. Soft-deleting protected memories asks first (the edits refuse them
unless told to include them). A correction's new text is embedded on a worker
first (correction_jobs.py); a failure or a cancel reopens the dialog with the user's text.
"""
from __future__ import annotations

import apsw
import numpy as np
from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QColor, QGuiApplication, QKeySequence, QShortcut, QUndoCommand, QUndoStack
from PySide6.QtWidgets import QMessageBox, QWidget

from memviz.app.controllers.correction_jobs import CorrectionJobs, model_embedder
from memviz.app.dialogs.edit_dialogs import BusyDialog, ConflictDialog, CorrectDialog, ImportanceDialog, ReasonDialog, TagsDialog
from memviz.app.plain_text import plain_tooltip
from memviz.app.plots.style import theme
from memviz.app.workers import Workers
from memviz.edits import (
    Confirm,
    Correct,
    EditKept,
    History,
    Restore,
    SetImportance,
    SetTags,
    SoftDelete,
    Unprotect,
    applicable,
    shown_id,
    shown_in_arrays,
    without_embedding,
)
from memviz.session.state import AppState
from memviz.store.errors import ASKED_READ_ONLY, ConflictError, ReadOnlyError, StoreError, translate
from memviz.words import count

STORE_IN_USE_MS = 100  # a background job (reload) holds the connection: try the write again this much later

#: actions that are another action with a reason asked first: they follow its rule
RULE_OF = {"delete_why": "delete", "confirm_why": "confirm"}
# (key, menu text, shortcut, status tip)
ACTIONS = (
    ("correct", "&Correct…", "F2", "Correct the text: a new memory supersedes this one"),
    ("confirm", "Confirm / &Protect", "Ctrl+Shift+P", "Protect: never decayed, pruned or superseded by automation"),
    ("unprotect", "&Unprotect", "Ctrl+Shift+U", "Let the memory decay again"),
    ("delete", "Soft-&delete", "Delete", "Retire the memory (valid_until = now); it stays in the retired list"),
    ("delete_why", "Soft-delete with a reason…", "Shift+Delete", "Soft-delete, with a reason kept in the history"),
    ("confirm_why", "Protect with a reason…", "Ctrl+Alt+P", "Confirm / protect, with a reason kept in the history"),
    ("restore", "&Restore", "Ctrl+Shift+R", "Make a retired memory current again"),
    ("importance", "Set &importance…", "Ctrl+Shift+I", "Change the importance (0-10)"),
    ("tags", "Edit &tags…", "Ctrl+Shift+T", "Replace, add or remove tags"),
)


class EditCommand(QUndoCommand):
    """One History action on the Qt undo stack; undo()/redo() are History's own steps."""

    def __init__(self, controller: EditController, action) -> None:
        super().__init__(action.label)
        self.controller, self.action = controller, action

    def undo(self) -> None:
        if not self.controller._mirroring:
            self.controller._step("undo")

    def redo(self) -> None:
        if not self.controller._mirroring:
            self.controller._step("redo")


class EditController(QObject):
    """edited(outcome): a step was written (do, undo or redo). message(text, ms): for the status
    line. refresh_requested(): the panels must read what a write changed (the window's live
    controller reads it; the selection asked for follows in `rows_changed`). `embedder_for(model,
    dim)` makes the embedder of a store's model (tests pass a slow one); dialogs are shown over
    `dialog_parent`."""

    edited = Signal(object)
    message = Signal(str, int)
    refresh_requested = Signal()

    def __init__(self, state: AppState, undo_stack: QUndoStack, workers: Workers,
                 dialog_parent: QWidget | None = None, *, embedder_for=model_embedder) -> None:
        super().__init__(dialog_parent)
        self.state, self.undo_stack, self.workers = state, undo_stack, workers
        self.dialog_parent = dialog_parent
        self.corrections = CorrectionJobs(workers, embedder_for, self)
        self.history: History | None = None
        self._main = None              # the window's Store
        self._edit_store = None        # our own connection to it (the same object when read-only)
        self.dialog = None             # the dialog shown last (tests drive it; kept so it is not collected)
        self._mirror: list = []        # History actions the undo stack holds, in stack order
        self._mirroring = False
        self._select_after: list[str] | None = None
        self._retry_timer = QTimer(self, singleShot=True, interval=STORE_IN_USE_MS, timeout=self._retry_in_use)
        # what each action key does, asked for the given ids (the explicit list: grep finds each)
        self._handlers = {"correct": self._correct, "confirm": self._confirm, "confirm_why": self._confirm_why,
                          "unprotect": self._unprotect, "delete": self._delete, "delete_why": self._delete_why,
                          "restore": self._restore, "importance": self._importance, "tags": self._tags}
        self.actions: dict[str, QAction] = {}
        for key, text, shortcut, tip in ACTIONS:
            act = QAction(text, self)
            act.setShortcut(QKeySequence(shortcut))
            act.setShortcutContext(Qt.WindowShortcut)
            act.setStatusTip(tip)
            act.setToolTip(f"{tip} ({shortcut})")
            act.triggered.connect(lambda _=False, k=key: self.run(k, self.state.selected_ids))
            self.actions[key] = act
        # a disabled QAction takes no key: while an edit is off, its key says why instead of nothing
        self._off_keys: dict[str, QShortcut] = {}
        if dialog_parent is not None:
            for key, _text, shortcut, _tip in ACTIONS:
                sc = QShortcut(QKeySequence(shortcut), dialog_parent, context=Qt.WindowShortcut, enabled=False)
                sc.activated.connect(lambda k=key: self._say_why_off(k))
                self._off_keys[key] = sc
        self.state.data_changed.connect(self._on_data)
        self.state.rows_changed.connect(self._on_rows)
        self.state.selection_changed.connect(lambda *a: self.update_enabled())
        self.state.as_of_changed.connect(lambda _t: self.update_enabled())  # no edits while viewing the past
        self._on_data(state.data)  # a store may be open already

    # ------------------------------------------------------------ store lifecycle
    @property
    def store(self):
        """The connection edits (and the controller's own reads) use: a second connection to the
        window's store, so a write never meets a background job reading on the window's one."""
        return self._edit_store

    def _on_data(self, data) -> None:
        main = None if data is None else data.store
        if main is not self._main:
            self._close_edit_store()
            self._main = main
            self._edit_store = main if main is None or main.read_only else self._open_second(main)
            self.history = None if main is None else History(self._edit_store, attempts=1)
            if self.history is not None:
                self.history.listeners.append(lambda h: self._sync_later())
            self._rebuild_stack()
        if self._select_after is not None:
            ids, self._select_after = self._select_after, None
            QTimer.singleShot(0, self, lambda: self.state.select_ids(ids))
        self.update_enabled()

    def _on_rows(self, delta) -> None:
        """A live refresh: select what our own edit asked for; the actions follow the selected
        rows only if one of them changed (checking them costs more than a refresh should)."""
        if self._select_after is not None:
            self._on_data(self.state.data)
        elif len(self.state.selection) and np.isin(self.state.selection, delta.changed).any():
            self.update_enabled()

    @staticmethod
    def _open_second(main):
        try:
            return main.reopen()
        except (StoreError, apsw.Error):
            return main  # e.g. the file went away: edits then fail with the store's own message

    def _close_edit_store(self) -> None:
        if self._edit_store is not None and self._edit_store is not self._main:
            self._edit_store.close()
        self._edit_store = None

    def close(self) -> None:
        """The window closes: drop corrections still being embedded, close our connection."""
        self.corrections.clear()
        self._close_edit_store()

    def _say(self, text: str, ms: int) -> None:
        self.message.emit(text, ms)

    def refresh(self, select: list[str] | None = None) -> None:
        """Have the panels read what a write changed; select `select` (else keep the selection)."""
        self._select_after = select
        self.refresh_requested.emit()

    # ------------------------------------------------------------ enabling
    def read_only_reason(self) -> str | None:
        return applicable.store_refusal(self._main, self.state.as_of)

    def what_to_do(self) -> str:
        """What the user can do about `read_only_reason`, in the window's words."""
        store = self._main
        if store is None:
            return "Open a store first (File ▸ Open…)."
        if not store.read_only:
            return ""  # viewing the past: the reason says to go back to now
        reason = store.read_only_reason or ""
        if reason.startswith(ASKED_READ_ONLY):
            return "To edit, reopen it without --read-only (File ▸ Open…)."
        if "memviz check" in reason:
            return "Tools ▸ Check store… says what is damaged and can repair it."
        return "To edit, copy it somewhere writable (File ▸ Copy store to…) and open the copy."

    def _say_why_off(self, key: str) -> None:
        """The key of a disabled edit was pressed: say why it is off (and what to do)."""
        name = next(text for k, text, _s, _t in ACTIONS if k == key).replace("&", "").rstrip("…")
        why = self.read_only_reason()
        if why:
            self._say(f"{name}: not available — {why}. {self.what_to_do()}".rstrip(), 10000)
        else:
            self._say(f"{name}: not now — {self.refusal(key, self.state.selected_ids)}", 6000)

    def refusal(self, key: str, ids: list[str]) -> str | None:
        """Why `key` does not apply to `ids` as loaded (None: it applies); see memviz.edits.applicable."""
        data = self.state.data
        return applicable.refusal(RULE_OF.get(key, key), None if data is None else data.arrays, ids,
                                  store=None if self._main is None or self._main.read_only else self._main)

    def applicable(self, key: str, ids: list[str]) -> bool:
        return self.refusal(key, ids) is None

    def update_enabled(self) -> None:
        why = self.read_only_reason()
        ids = self.state.selected_ids
        for key, text, shortcut, tip in ACTIONS:
            act = self.actions[key]
            if why:
                act.setEnabled(False)
                act.setToolTip(plain_tooltip(f"{text.replace('&', '').rstrip('…')}: not available — {why}"))
            else:
                not_here = self.refusal(key, ids)
                act.setEnabled(not_here is None)
                act.setToolTip(plain_tooltip(f"{tip} ({shortcut})" + (f" — not now: {not_here}" if not_here else "")))
            if key in self._off_keys:
                self._off_keys[key].setEnabled(not act.isEnabled())

    def context_actions(self, ids: list[str]) -> list[QAction]:
        """The context-menu entries for `ids` (fresh QActions owned by the menu's lifetime)."""
        why = self.read_only_reason()
        if self.state.data is None or not ids:
            return []
        out = []
        for key, text, shortcut, tip in ACTIONS:
            act = QAction(text, self)
            act.setShortcut(QKeySequence(shortcut))  # shown in the menu; the window's action handles the key
            act.setObjectName(f"edit_{key}")
            act.setStatusTip(tip)
            if why:
                act.setEnabled(False)
                act.setToolTip(plain_tooltip(why))
                act.setStatusTip(f"Editing is off: {why}")
            else:
                not_here = self.refusal(key, ids)
                act.setEnabled(not_here is None)
                if not_here:
                    act.setToolTip(plain_tooltip(not_here))
            act.triggered.connect(lambda _=False, k=key, i=list(ids): self.run(k, i))
            out.append(act)
        return out

    # ------------------------------------------------------------ running an action
    def shown_rows(self, ids: list[str]) -> dict[str, dict]:
        """The fields of each row as the panels show them (the loaded arrays): the conflict guard."""
        return shown_in_arrays(self.state.data.arrays, ids)

    def run(self, key: str, ids: list[str]) -> None:
        why = self.read_only_reason()
        if why:
            self._say(f"Not edited: {why}", 8000)
            return
        ids = [i for i in ids if i]
        if not ids:
            self._say("Select a memory first", 4000)
            return
        try:
            self._handlers[key](ids)
        except StoreError as e:
            self._error(e)

    def _field_action(self, cls, key, ids, **kw):
        targets = applicable.targets(key, self.state.data.arrays, ids)
        if not targets:
            self._say(f"Nothing to change: {cls.verb.lower()} does not apply to "
                      f"the chosen {'memory' if len(ids) == 1 else 'memories'}", 6000)
            return
        self.perform(cls(targets, shown_rows=self.shown_rows(targets), **kw))

    def _confirm(self, ids):
        self._field_action(Confirm, "confirm", ids)

    def _confirm_why(self, ids):
        self._with_reason(Confirm, "confirm", "Protect", ids)

    def _delete_why(self, ids):
        self._asking_if_protected(ids, lambda chosen, include: self._with_reason(
            SoftDelete, "delete", "Soft-delete", chosen, include_protected=include))

    def _with_reason(self, cls, key, verb, ids, **kw):
        """Ask for a reason (optional), then the edit with it as its audit note."""
        if not applicable.targets(key, self.state.data.arrays, ids):
            self._field_action(cls, key, ids)  # says why nothing applies
            return
        dlg = ReasonDialog(verb, len(applicable.targets(key, self.state.data.arrays, ids)), self.dialog_parent)
        dlg.accepted.connect(lambda: self._field_action(cls, key, ids, note=dlg.note(), **kw))
        self._open(dlg)

    def _unprotect(self, ids):
        self._field_action(Unprotect, "unprotect", ids)

    def _delete(self, ids):
        self._asking_if_protected(ids, lambda chosen, include: self._field_action(
            SoftDelete, "delete", chosen, include_protected=include))

    def _asking_if_protected(self, ids, then) -> None:
        """Soft-delete `ids`: `then(ids, include_protected)` at once when none of them is protected,
        else after the user said so (Cancel is the default; a mixed choice can also spare the
        protected ones)."""
        targets = applicable.targets("delete", self.state.data.arrays, ids)
        protected = applicable.protected(self.state.data.arrays, targets)
        if not protected:
            then(ids, False)
            return
        n, t = len(protected), len(targets)
        head = ("The memory you chose is protected." if t == 1 else f"All {t:,} chosen memories are protected."
                if n == t else f"{n:,} of the {count(t, 'memory')} chosen {'is' if n == 1 else 'are'} protected.")
        box = QMessageBox(QMessageBox.Warning, "Soft-delete protected memories?", head, QMessageBox.NoButton,
                          self.dialog_parent)
        box.setInformativeText(f"Protection keeps a memory from being removed by accident. Soft-delete "
                               f"{'it' if n == 1 else f'the {n:,} protected ones'} anyway? "
                               "Edit ▸ Undo takes a soft-delete back.")
        anyway = box.addButton(f"Soft-delete {count(t, 'memory')}", QMessageBox.DestructiveRole)
        spared = set(protected)
        others = [i for i in targets if i not in spared]
        spare = box.addButton(f"Only the {count(len(others), 'unprotected memory', 'unprotected memories')}",
                              QMessageBox.AcceptRole) if others else None
        cancel = box.addButton(QMessageBox.Cancel)
        box.setDefaultButton(cancel)
        box.setEscapeButton(cancel)

        def answered():
            clicked = box.clickedButton()
            if clicked is anyway:
                then(targets, True)
            elif spare is not None and clicked is spare:
                then(others, False)
            else:
                self._say(f"Not deleted: {count(n, 'protected memory', 'protected memories')} in the selection", 5000)
        box.finished.connect(lambda _r: answered())
        self._open(box)

    def _restore(self, ids):
        self._field_action(Restore, "restore", ids)

    def _importance(self, ids):
        a = self.state.data.arrays
        r = a.index_of(ids[0])
        dlg = ImportanceDialog(float(a.importance[r]) if r is not None else 5.0, len(ids), self.dialog_parent)
        dlg.accepted.connect(lambda: self.perform(
            SetImportance(ids, dlg.spin.value(), shown_rows=self.shown_rows(ids))))
        self._open(dlg)

    def _tags(self, ids):
        tags = self.store.get(ids[0])["tags"] if len(ids) == 1 else None
        dlg = TagsDialog([str(t) for t in tags] if tags is not None else None, len(ids), self.dialog_parent)

        def done():
            if dlg.single:
                self.perform(SetTags(ids, dlg.tags.text(), shown_rows=self.shown_rows(ids)))
            else:
                self.perform(SetTags(ids, add=dlg.add.text(), remove=dlg.remove.text(),
                                     shown_rows=self.shown_rows(ids)))
        dlg.accepted.connect(done)
        self._open(dlg)

    def _correct(self, ids, text: str | None = None, row: dict | None = None, note: str | None = None):
        """The correct dialog (`text`: the user's text to start from; `note`: why it is shown again)."""
        if not self.applicable("correct", ids[:1]) or len(ids) != 1:
            self._say("Correct works on one current memory", 5000)
            return
        row = row or self.store.get(ids[0])
        emb, why = self.corrections.embedder(*self.state.data.model)
        warning = None if emb is not None else (
            f"The store's embedding model cannot be used here ({why}). The corrected memory will be marked as "
            "needing an embedding; semantic search will not find it until it is embedded.")
        if note:
            warning = note if warning is None else f"{note}\n{warning}"
        dlg = CorrectDialog(row, self.dialog_parent, text=text, warning=warning, in_place=self.store.corrects_in_place,
                            caution=lambda: QColor(theme().caution))

        def done():
            shown = {**self.shown_rows(ids)[ids[0]], "content": row["content"]}
            if emb is None:  # nothing to compute: written at once, marked as needing an embedding
                self.perform(Correct(ids[0], dlg.text(), embedded=without_embedding(why), shown_rows={ids[0]: shown},
                                     note=dlg.note()))
            else:
                self._embed_then_correct(ids[0], dlg.text(), emb, shown, dlg.note())
        dlg.accepted.connect(done)
        self._open(dlg)

    def _embed_then_correct(self, mid: str, text: str, emb, shown: dict, note: str | None = None) -> None:
        """Embed `text` on a worker (the window stays responsive, even on a network model), then
        write the correction on this thread through the History of the store it was made for."""
        history = self.history

        def embedded(vector) -> None:
            if self.history is not history:  # another store was opened meanwhile
                self._keep_text(mid, text, "Not written: the store it was meant for is no longer open.")
                return
            self.perform(Correct(mid, text, embedder=emb, embedded=vector, shown_rows={mid: shown}, note=note))

        self._say(f"Embedding the correction of {shown_id(mid)} …", 0)
        self.corrections.start(mid, text, emb, embedded, lambda why: self._keep_text(mid, text, why))

    def _keep_text(self, mid: str, text: str, why: str) -> None:
        """A correction was not written: show its dialog again with the user's text, or, if the
        memory cannot be corrected any more, put the text on the clipboard."""
        self._say(why, 8000)
        data = self.state.data
        if data is not None and self.store is not None and self.applicable("correct", [mid]):
            self._correct([mid], text=text, note=why)
        else:
            QGuiApplication.clipboard().setText(text)
            self._say(f"{why} Your text is on the clipboard.", 8000)

    # ------------------------------------------------------------ History steps
    def perform(self, action):
        """Write a new edit through the History (also the entry point for other features' actions,
        e.g. reflection and consolidation). Returns its Outcome, or None when it was not written
        (busy: kept for retry; conflict or error: shown)."""
        return self._guarded(lambda: self.history.perform(action), action=action)

    def undo(self) -> None:
        self.undo_stack.undo()

    def redo(self) -> None:
        self.undo_stack.redo()

    def _step(self, kind: str) -> None:
        self._guarded(self.history.undo if kind == "undo" else self.history.redo)

    def _retry_in_use(self) -> None:
        if self.history is not None and len(self.history.pending):
            self._guarded(self.history.retry)

    def _guarded(self, fn, action=None):
        if self.history is None:
            return
        try:
            out = fn()
        except apsw.ThreadingViolationError:
            # a background job (reload) is reading on this connection; the step stays queued in History
            self._retry_timer.start()
            return
        except EditKept as e:
            self._busy(e)
            return
        except ConflictError as e:
            self._conflict(e)
            return
        except (StoreError, apsw.Error) as e:
            self._error(translate(e))
            return
        if out is not None:
            self._written(out)
        return out

    def _written(self, out) -> None:
        msg = out.text
        if out.warning:
            msg += " — " + out.warning
            box = QMessageBox(QMessageBox.Warning, "No embedding for the corrected memory", out.warning,
                              QMessageBox.Ok, self.dialog_parent)
            box.setTextFormat(Qt.PlainText)  # it may quote the memory's text
            self._open(box)
        self._say(msg, 8000)
        live = [i for i in out.ids if self._is_live_after(i)]
        self.refresh(select=(live or out.ids) if out.ids else None)
        self.edited.emit(out)

    def _is_live_after(self, mid: str) -> bool:
        try:
            row = self.store.get(mid)
        except StoreError:
            return True
        return row is not None and row["valid_until"] is None

    # ------------------------------------------------------------ dialogs for refusals
    def _open(self, dlg) -> None:
        self.dialog = dlg
        dlg.setWindowModality(Qt.WindowModal)
        dlg.open()

    def _error(self, e: Exception) -> None:
        if isinstance(e, ReadOnlyError):
            self._say(str(e), 8000)
        box = QMessageBox(QMessageBox.Warning, "Edit not written", str(e), QMessageBox.Ok, self.dialog_parent)
        box.setTextFormat(Qt.PlainText)  # it may quote the memory's text
        self._open(box)
        self._say(f"Not edited: {e}", 8000)

    def _busy(self, e: EditKept) -> None:
        dlg = BusyDialog(str(e), self.dialog_parent)
        self._say("The agent is busy; your edit is kept", 8000)

        def answered():
            if dlg.clickedButton() is dlg.discard_button:
                dropped = self.history.discard_pending()
                self._say(f"Discarded {count(len(dropped), 'waiting edit')}", 6000)
            else:
                self._guarded(self.history.retry)
        dlg.finished.connect(lambda _r: answered())
        self._open(dlg)

    def _conflict(self, e: ConflictError) -> None:
        action, step = e.action, e.step
        if action is None:
            self._error(e)
            return
        if step != "do":
            # an undo/redo over a row the agent changed: never forced; both versions shown, the step kept
            dlg = ConflictDialog(e, action.label, self.dialog_parent, step=step)
            self._say(f"Not {step}ne: the memory changed since", 8000)
            dlg.finished.connect(lambda _r: self.refresh())
            self._open(dlg)
            return
        is_correct = isinstance(action, Correct)
        dlg = ConflictDialog(e, action.label, self.dialog_parent, can_edit_again=is_correct)

        def answered():
            if dlg.choice == ConflictDialog.MINE:
                self.perform(action.retarget(self.store.get(action.ids[0]) if len(action.ids) == 1
                                             else {r["id"]: r for r in self.store.get_many(action.ids)}))
            elif dlg.choice == ConflictDialog.EDIT_AGAIN:
                self._correct(action.ids, text=action.content)
            else:
                if is_correct:  # the user's text is not lost: it stays on the clipboard
                    QGuiApplication.clipboard().setText(action.content)
                self._say("Kept the current version" + (" (your text is on the clipboard)" if is_correct else ""), 8000)
                self.refresh()
        dlg.finished.connect(lambda _r: answered())
        self._open(dlg)

    # ------------------------------------------------------------ the Qt undo stack as a mirror of History
    def _sync_later(self) -> None:
        # History changes while QUndoStack is inside undo()/redo(); rebuild once it has moved its index
        QTimer.singleShot(0, self, self._rebuild_stack)

    def _rebuild_stack(self) -> None:
        stack = self.undo_stack
        h = self.history
        done = h.done if h else []
        undone = list(reversed(h.undone)) if h else []
        want = done + undone
        same = len(self._mirror) == len(want) and all(c is a for c, a in zip(self._mirror, want))
        if same and stack.count() == len(want) and stack.index() == len(done):
            return
        self._mirroring = True
        try:
            stack.clear()
            for a in want:
                stack.push(EditCommand(self, a))
            stack.setIndex(len(done))
        finally:
            self._mirroring = False
        self._mirror = want

