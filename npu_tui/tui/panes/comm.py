"""Comm: exposed communication per stage, comm operators (wait vs transit), bandwidth per link."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from ..cells import fmt_us, literal
from ..drill import DrillGrid
from ..grids import COMM_LINKS, COMM_OPS, Drill
from ..plots import legend, stacked_bar

BAR_WIDTH = 16


def exposure_text(report: dict) -> Text:
    """One line per rank and stage that communicates (fits 80 columns): a bar of the stage's wall
    time split into exposed comm, overlapped comm and the rest, then the figures."""
    rows = [c for c in report.get("comm", []) if c.get("comm_us")]
    text = Text().append("Exposed communication per stage, totals over the profile", style="bold")
    if not rows:
        return text.append("\n  no communication in this profile", style="dim")
    sources = sorted({literal(c.get("source") or "") for c in rows} - {""})
    if sources:
        text.append(f"  (from {', '.join(sources)})", style="dim")
    for c in sorted(rows, key=lambda c: (c["rank"], str(c["stage"]))):
        comm, exposed = c.get("comm_us") or 0.0, c.get("exposed_us") or 0.0
        wall = max(c.get("wall_us") or 0.0, comm)
        text.append(f"\nrank {c['rank']:<3} {literal(c['stage']):<6} ")
        # The whole bar is the stage's wall time, so 0.2 % exposed is a sliver, not a full bar.
        text.append_text(stacked_bar([("exposed", exposed), ("overlapped", max(comm - exposed, 0.0)),
                                      ("rest of the stage", max(wall - comm, 0.0))], BAR_WIDTH))
        text.append(f" {fmt_us(exposed)} of {fmt_us(comm)} comm · "
                    f"{(c.get('exposed_share') or 0.0) * 100:.1f}% of wall")
    return text.append("\n").append_text(legend(["exposed", "overlapped", "rest of the stage"]))


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
