"""Drill-down: each level is a screen with a breadcrumb over one paged table; escape pops it. The
levels themselves (which view, which columns, what a row opens) are in ``grids``."""

from __future__ import annotations

from typing import Tuple

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static

from .cells import literal
from .grid import GridView, PagedTable
from .grids import Drill


class DrillRequested(Message):
    """Open ``drill`` below the levels named in ``crumbs``."""

    def __init__(self, crumbs: Tuple[str, ...], drill: Drill) -> None:
        super().__init__()
        self.crumbs, self.drill = crumbs, drill


def breadcrumb(crumbs: Tuple[str, ...]) -> Text:
    text = Text()
    for i, c in enumerate(crumbs):
        if i:
            text.append(" › ", style="dim")
        text.append(literal(c), style="bold" if i == len(crumbs) - 1 else "")
    return text


class DrillGrid(GridView):
    """A GridView whose enter opens the next level of its Drill."""

    def __init__(self, drill: Drill, crumbs: Tuple[str, ...], **kwargs) -> None:
        super().__init__(drill.query, **kwargs)
        self.drill = drill
        self.crumbs = crumbs

    def on_paged_table_activated(self, msg: PagedTable.Activated) -> None:
        msg.stop()
        if self.drill.child is not None:
            self.post_message(DrillRequested(self.crumbs, self.drill.child(msg.row)))


class DrillScreen(Screen):
    HELP_TITLE = "Drill-down"
    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, crumbs: Tuple[str, ...], drill: Drill, con) -> None:
        super().__init__()
        self.crumbs = crumbs + (drill.query.title,)
        self.drill = drill
        self.con = con

    def compose(self) -> ComposeResult:
        yield Static(breadcrumb(self.crumbs), classes="breadcrumb")
        yield DrillGrid(self.drill, self.crumbs)
        yield Footer()

    def on_mount(self) -> None:
        grid = self.query_one(DrillGrid)
        grid.set_source(self.con)
        grid.table.focus()
