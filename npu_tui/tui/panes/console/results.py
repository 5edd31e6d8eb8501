"""The result grid: one page of the latest result at a time, read from DuckDB by the console."""

from __future__ import annotations

from typing import List, Sequence

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from ...cells import literal

PAGE_SIZE = 200
_NUMBER = (int, float)


def cell(value) -> Text:
    """Profile text is data, never markup; numbers sit on the right, NULL is dim."""
    if value is None:
        return Text("NULL", style="dim")
    if isinstance(value, bool):
        return Text(str(value).lower())
    if isinstance(value, _NUMBER) or type(value).__name__ == "Decimal":
        return Text(str(value), justify="right")
    return Text(literal(value))


class ResultGrid(DataTable):
    """Shows rows start..start+PAGE_SIZE; `[` and `]` ask the console for another page."""

    HELP_TITLE = "SQL results"
    BINDINGS = [
        Binding("right_square_bracket", "page(1)", "Next page"),
        Binding("left_square_bracket", "page(-1)", "Prev page"),
        Binding("y", "copy", "Copy page"),
    ]

    class PageRequested(Message):
        def __init__(self, start: int) -> None:
            super().__init__()
            self.start = start

    class CopyRequested(Message):
        pass

    def __init__(self, **kwargs) -> None:
        super().__init__(zebra_stripes=True, **kwargs)
        self.start = 0
        self.total = 0
        self.columns_shown: List[str] = []
        self.rows_shown: List[tuple] = []

    def show(self, columns: Sequence[str], rows: List[tuple], start: int, total: int) -> None:
        self.columns_shown = list(columns)
        self._fill(rows)
        self.start, self.total, self.rows_shown = start, total, rows

    def show_page(self, rows: List[tuple], start: int) -> None:
        self._fill(rows)
        self.start, self.rows_shown = start, rows
        self.move_cursor(row=0)

    def _fill(self, rows: List[tuple]) -> None:
        # Each column as wide as its widest cell on this page, set now: left to the table, the
        # widths come on its next idle, and a page can be drawn before that with its columns cut.
        cells = [[cell(v) for v in r] for r in rows]
        labels = [Text(literal(c)) for c in self.columns_shown]
        self.clear(columns=True)
        for i, label in enumerate(labels):
            self.add_column(label, width=max([label.cell_len] + [r[i].cell_len for r in cells]))
        self.add_rows(cells)

    def action_page(self, step: int) -> None:
        start = self.start + step * PAGE_SIZE
        if 0 <= start < self.total:
            self.post_message(self.PageRequested(start))

    def action_copy(self) -> None:
        self.post_message(self.CopyRequested())
