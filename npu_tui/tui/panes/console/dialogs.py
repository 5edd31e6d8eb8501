"""The console's dialogs: history search, saved and starter queries, save-as, export."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Tuple

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Select
from textual.widgets.option_list import Option

from ....query import EXPORT_OPTIONS, History, SavedQueries, starter_queries
from ...cells import literal
from ...screens.export import ExportPath


def _first_line(sql: str) -> str:
    lines = [x for x in sql.splitlines() if x.strip() and not x.strip().startswith("--")]
    return literal((lines[0] if lines else sql).strip())


class HistoryScreen(ModalScreen[Optional[str]]):
    """Type to filter past statements (newest first); enter loads one into the editor."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Close")]

    def __init__(self, history: History) -> None:
        super().__init__(classes="sql-dialog")
        self.history = history

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("History", classes="sql-dialog-title")
            yield Input(placeholder="search history", id="history-search")
            yield OptionList(id="history-list")

    def on_mount(self) -> None:
        self._fill("")

    def _fill(self, text: str) -> None:
        options = self.query_one("#history-list", OptionList)
        options.clear_options()
        self.found = self.history.search(text)
        options.add_options(Option(Text.assemble(_first_line(e.sql), "  ",
                                                 (f"{e.rows} rows" if e.ok else "failed", "dim")))
                            for e in self.found)
        if self.found:
            options.highlighted = 0

    def on_input_changed(self, event: Input.Changed) -> None:
        self._fill(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        options = self.query_one("#history-list", OptionList)
        if self.found:
            self.dismiss(self.found[options.highlighted or 0].sql)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.found[event.option_index].sql)

    def on_key(self, event) -> None:
        # Up/down move through the list while the search box keeps the focus.
        if event.key in ("up", "down") and self.found:
            options = self.query_one("#history-list", OptionList)
            options.action_cursor_up() if event.key == "up" else options.action_cursor_down()
            event.stop()


class QueriesScreen(ModalScreen[Optional[str]]):
    """Saved queries, then the shipped starters; enter loads one, delete forgets a saved one."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Close"),
                Binding("delete", "forget", "Delete saved")]

    def __init__(self, saved: SavedQueries) -> None:
        super().__init__(classes="sql-dialog")
        self.saved = saved

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Queries", classes="sql-dialog-title")
            yield OptionList(id="queries-list")

    def on_mount(self) -> None:
        self._fill()

    def _fill(self) -> None:
        self.entries: List[Tuple[str, str, bool]] = (
            [(n, q, True) for n, q in sorted(self.saved.queries.items())]
            + [(n, q, False) for n, q in starter_queries()])
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options(Option(Text.assemble(literal(name), "  ", ("saved" if mine else "starter", "dim")))
                            for name, _, mine in self.entries)
        options.highlighted = 0 if self.entries else None

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.entries[event.option_index][1])

    def action_forget(self) -> None:
        index = self.query_one(OptionList).highlighted
        if index is not None and self.entries[index][2]:
            try:
                self.saved.delete(self.entries[index][0])
            except OSError as e:
                self.notify(f"forgotten for this session; the file not written: {e.strerror or e}",
                            severity="warning", markup=False)
            self._fill()


class SaveQueryScreen(ModalScreen[Optional[str]]):
    """Asks for the name to save the editor's text under."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Close")]

    def __init__(self) -> None:
        super().__init__(classes="sql-dialog")

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Save query as", classes="sql-dialog-title")
            yield Input(placeholder="name", id="save-name")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.dismiss(event.value.strip())


class ExportScreen(ModalScreen[Optional[Tuple[str, str]]]):
    """Asks for a path and a format; nothing is written until the user names the path."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Close")]

    def __init__(self, rows: int, folders: List[Path]) -> None:
        super().__init__(classes="sql-dialog")
        self.rows = rows
        self.target = ExportPath(folders)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Export {self.rows:,} rows", classes="sql-dialog-title")
            yield Input(placeholder="path, e.g. ~/kernels.csv", id="export-path")
            with Horizontal(id="export-row"):
                yield Select([(f, f) for f in EXPORT_OPTIONS], value="csv", allow_blank=False,
                             id="export-format")
                yield Button("Export", variant="primary", id="export-go")
            yield Label("", id="sql-export-problem", markup=False)

    def on_input_changed(self, event: Input.Changed) -> None:
        suffix = event.value.rsplit(".", 1)[-1].lower() if "." in event.value else ""
        if suffix in EXPORT_OPTIONS:
            self.query_one(Select).value = suffix

    def _submit(self) -> None:
        path = self.query_one(Input).value.strip()
        if not path:
            return
        target, problem = self.target.check(path)
        self.query_one("#sql-export-problem", Label).update(literal(problem))
        if target is not None:
            self.dismiss((str(target), str(self.query_one(Select).value)))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self._submit()
