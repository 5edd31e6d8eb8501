"""Asks where to write the current table; the file's extension picks CSV or Markdown."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from ...session import writable_folder
from ..export import default_name


def ask_export(app, table) -> None:
    """Ask where to write ``table`` (a PagedTable that asked to be exported), then write it there."""

    def chosen(path: Optional[str]) -> None:
        if path:
            table.export_to(path)

    session = getattr(app, "session", None)
    app.push_screen(ExportScreen(default_export_path(table.query.title, session.folders if session else [])),
                    chosen)


def default_export_path(title: str, folders: List[Path]) -> str:
    """In the working directory, never into the profile's folders (writable_folder)."""
    return str(writable_folder(folders) / default_name(title))


class ExportScreen(ModalScreen):
    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def compose(self) -> ComposeResult:
        with Vertical(id="export-dialog"):
            yield Label("Export table to (end the name in .md for Markdown, else CSV):")
            yield Input(self.path, id="export-path")
            yield Label("enter writes · escape cancels", classes="hint")

    def on_input_submitted(self, msg: Input.Submitted) -> None:
        self.dismiss(msg.value.strip() or None)
