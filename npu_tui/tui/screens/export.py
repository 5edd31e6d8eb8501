"""Asks where to write the current table; the file's extension picks CSV or Markdown."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Tuple

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from ...session import export_target, writable_folder
from ..cells import literal
from ..export import default_name


def ask_export(app, table) -> None:
    """Ask where to write ``table`` (a PagedTable that asked to be exported), then write it there."""

    def chosen(path: Optional[str]) -> None:
        if path:
            table.export_to(path)

    folders = app.session.folders if getattr(app, "session", None) else []
    app.push_screen(ExportScreen(default_export_path(table.query.title, folders), folders), chosen)


def default_export_path(title: str, folders: List[Path]) -> str:
    """In the working directory, never into the profile's folders (writable_folder)."""
    return str(writable_folder(folders) / default_name(title))


class ExportPath:
    """The path an export dialog was given, checked before anything is written: never into the
    profile's folders (session.export_target), and a file that exists replaced only when the same
    path is given again."""

    def __init__(self, folders: List[Path]) -> None:
        self.folders = folders
        self.replacing: Optional[Path] = None

    def check(self, value: str) -> Tuple[Optional[Path], str]:
        """(the path to write, "") or (None, why not yet)."""
        try:
            target = export_target(value, self.folders)
        except (ValueError, OSError) as e:
            return None, str(e)
        if target.exists() and self.replacing != target:
            self.replacing = target
            return None, f"{target.name} exists: enter again to replace it"
        return target, ""


class ExportScreen(ModalScreen):
    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, path: str, folders: List[Path]) -> None:
        super().__init__()
        self.path = path
        self.target = ExportPath(folders)

    def compose(self) -> ComposeResult:
        with Vertical(id="export-dialog"):
            yield Label("Export table to (end the name in .md for Markdown, else CSV):")
            yield Input(self.path, id="export-path")
            yield Label("", id="export-problem", markup=False)
            yield Label("enter writes · escape cancels", classes="hint")

    def on_input_submitted(self, msg: Input.Submitted) -> None:
        if not msg.value.strip():
            self.dismiss(None)
            return
        target, problem = self.target.check(msg.value.strip())
        self.query_one("#export-problem", Label).update(literal(problem))
        if target is not None:
            self.dismiss(str(target))
