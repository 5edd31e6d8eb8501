"""Operators: kernel types → names and input shapes → kernel instances."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical

from ..drill import DrillGrid
from ..grids import operator_types


class OperatorsPane(Vertical):
    def compose(self) -> ComposeResult:
        yield DrillGrid(operator_types(), ("Operators",), id="operators-grid")

    def show_profile(self, con) -> None:
        self.query_one(DrillGrid).set_source(con)
