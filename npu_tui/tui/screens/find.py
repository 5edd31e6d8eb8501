"""The global find (ctrl+f): kernel and operator names over every type, filtered as one types; enter
jumps to the chosen operator's kernels in the Operators drill-down."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from ..grid import GridView, PagedTable
from ..grids import FIND


class FindScreen(ModalScreen[dict]):
    """Dismissed with the chosen row of ``kernel_names`` (None: nothing chosen)."""

    HELP_TITLE = "Find"
    BINDINGS = [Binding("escape", "dismiss(None)", "Close")]

    def __init__(self, con) -> None:
        super().__init__()
        self.con = con

    def compose(self) -> ComposeResult:
        with Vertical(id="find-dialog"):
            yield GridView(FIND)
            yield Static("type part of a name, enter · enter on a row jumps to its kernels · escape leaves "
                         "the filter box, then closes", classes="hint")

    def on_mount(self) -> None:
        grid = self.query_one(GridView)
        grid.set_source(self.con)
        grid.table.action_filter()

    def on_paged_table_activated(self, msg: PagedTable.Activated) -> None:
        msg.stop()
        self.dismiss(msg.row)
