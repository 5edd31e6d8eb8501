"""Operators: kernel types → names and input shapes → kernel instances; above them, the ranks not
loaded whole, whose kernels the totals hold as far as they loaded."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from ...text import NOT_WHOLE, apart_ranks, rank_list
from ..drill import DrillGrid
from ..grids import operator_types


class OperatorsPane(Vertical):
    def compose(self) -> ComposeResult:
        yield Static(id="operators-apart", classes="plots")
        yield DrillGrid(operator_types(), ("Operators",), id="operators-grid")

    def on_mount(self) -> None:
        self.query_one("#operators-apart").display = False

    def show_profile(self, con) -> None:
        self.query_one(DrillGrid).set_source(con)

    def show_report(self, report: dict) -> None:
        cut = sorted(rank for rank, why in apart_ranks(report).items() if why == NOT_WHOLE)
        note = self.query_one("#operators-apart", Static)
        note.display = bool(cut)
        note.update(Text(f"✕ {rank_list(cut)} {NOT_WHOLE}: these totals hold what of "
                         f"{'it' if len(cut) == 1 else 'them'} loaded (h says why)", style="dim"))
