"""Comm: exposed communication per stage, comm operators (wait vs transit), bandwidth per link."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from ..cells import fmt_us, literal
from ..drill import DrillGrid
from ..grids import COMM_LINKS, COMM_OPS, Drill
from ..plots import stacked_bar

BAR_WIDTH = 24


def exposure_text(report: dict) -> Text:
    rows = report.get("comm", [])
    text = Text().append("Exposed communication per stage, totals over the profile", style="bold")
    if not rows:
        return text.append("\n  no communication in this profile", style="dim")
    for c in sorted(rows, key=lambda c: (c["rank"], str(c["stage"]))):
        comm, exposed = c.get("comm_us") or 0.0, c.get("exposed_us") or 0.0
        text.append(f"\nrank {c['rank']:<3} {literal(c['stage']):<6} ")
        text.append_text(stacked_bar([("Comm", exposed), ("Other", max(comm - exposed, 0.0))], BAR_WIDTH)
                         if comm else Text(" " * BAR_WIDTH))
        text.append(f" exposed {fmt_us(exposed)} of {fmt_us(comm)}, "
                    f"{(c.get('exposed_share') or 0.0) * 100:.1f}% of the stage's wall")
        text.append(f"  [{literal(c.get('source', ''))}]", style="dim")
    return text


class CommPane(Vertical):
    def compose(self) -> ComposeResult:
        yield Static(id="comm-exposure", classes="plots")
        yield DrillGrid(Drill(COMM_OPS), ("Comm",), id="comm-ops")
        yield DrillGrid(Drill(COMM_LINKS), ("Comm",), id="comm-links")

    def show_profile(self, con) -> None:
        self.query_one("#comm-exposure", Static).update(Text("analysing…", style="dim"))
        for grid in self.query(DrillGrid):
            grid.set_source(con)

    def show_report(self, report: dict) -> None:
        self.query_one("#comm-exposure", Static).update(exposure_text(report))
