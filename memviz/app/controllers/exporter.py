"""File ▸ Export: the query's results or the memory table as CSV or JSON, a plot as PNG or SVG.
The parts hand over what they show (`results()`, `table_rows()`, `images[name](path)`); the
memory table's rows are written with their whole content, read from the store.
Signals: message(text, ms) for the status bar, error(title, text)."""
from __future__ import annotations

import csv
import json
from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QWidget

from memviz.session.state import AppState
from memviz.store import iso


class Exporter(QObject):
    message = Signal(str, int)
    error = Signal(str, str)

    def __init__(self, state: AppState, results: Callable[[], list[dict]], table_rows: Callable[[], np.ndarray],
                 images: dict[str, Callable[[str], None]], dialog_parent: QWidget | None = None) -> None:
        super().__init__(dialog_parent)
        self.state, self.results, self.table_rows, self.images = state, results, table_rows, images
        self.dialog_parent = dialog_parent

    def export_dialog(self, what: str, fmt: str) -> None:
        """Ask where to write `what` as `fmt`, then write it."""
        path, _ = QFileDialog.getSaveFileName(self.dialog_parent, f"Export {what}", f"memviz-{what}.{fmt}", f"*.{fmt}")
        if not path:
            return
        try:
            self.export(what, path)
        except (OSError, ValueError) as e:
            self.error.emit("Export failed", str(e))
        else:
            self.message.emit(f"Exported {what} to {path}", 6000)

    def export(self, what: str, path: str) -> int:
        """Write results / table (.csv or .json) or a plot (.png or .svg); returns rows written (plots: 1)."""
        if what in self.images:
            self.images[what](path)
            return 1
        if what == "results":
            records = self.results()
        elif what == "table":
            records = self.table_records(self.table_rows())
        else:
            raise ValueError(f"unknown export {what!r}")
        if path.lower().endswith(".json"):
            with open(path, "w", encoding="utf-8") as f:
                json.dump(records, f, ensure_ascii=False, indent=1)
        else:
            with open(path, "w", encoding="utf-8", newline="") as f:
                fields = list(records[0]) if records else ["id"]
                w = csv.DictWriter(f, fieldnames=fields)
                w.writeheader()
                w.writerows(records)
        return len(records)

    def table_records(self, rows: np.ndarray) -> list[dict]:
        data = self.state.data
        if data is None:
            return []
        a = data.arrays
        full = {r["id"]: r["content"] for r in data.store.get_many([a.ids[i] for i in rows])}
        out = []
        for i in rows:
            out.append({"id": a.ids[i], "kind": a.kind[i], "agent": a.agent[i], "importance": float(a.importance[i]),
                        "event_time": iso(a.event_time[i]), "valid_until": iso(a.valid_until[i]),
                        "confidence": float(a.confidence[i]), "access_count": int(a.access_count[i]),
                        "protected": bool(a.protected[i]), "content": full.get(a.ids[i], "")})
        return out
