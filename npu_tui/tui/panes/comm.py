"""Comm: exposed communication per stage or the ranks × ranks link matrix (`m` switches), comm
operators (wait vs transit), bandwidth per link."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Dict, List, Optional, Tuple

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from ...text import apart_ranks, per_what
from ..cells import fmt_us, literal
from ..drill import DrillGrid
from ..grids import COMM_LINKS, COMM_OPS, Drill
from ..plots import heat_grid, legend, stacked_bar

BAR_WIDTH = 16


def exposure_text(report: dict) -> Text:
    """One line per rank and stage that communicates (fits 80 columns): a bar of the stage's time
    per step split into exposed comm, overlapped comm and the rest, then the figures; per step as
    the step account and comm_exposed_high count them (warm-up steps left out)."""
    rows = [c for c in report.get("comm", []) if c.get("comm_us_per_step")]
    text = Text().append(f"Exposed communication per stage, {per_what(report)}", style="bold")
    if not rows:
        # (comm ops without kernels to place them among: msprof-analyze's cluster outputs alone)
        why = "no kernels to place the comm ops among; exposed comm per rank: 5 Ranks" \
            if report.get("cluster", {}).get("comm_ops") else "no communication in this profile"
        return text.append(f"\n  {why}", style="dim")
    sources = sorted({literal(c.get("source") or "") for c in rows} - {""})
    if sources:
        text.append(f"  (from {', '.join(sources)})", style="dim")
    # a rank with a file cut (or another run's): its figures lack what is missing, marked as in 5 Ranks
    apart = apart_ranks(report)
    for c in sorted(rows, key=lambda c: (c["rank"], str(c["stage"]))):
        comm, exposed = c.get("comm_us_per_step") or 0.0, c.get("exposed_us_per_step") or 0.0
        stage = max(c.get("stage_us_per_step") or 0.0, comm)
        label = f"{c['rank']}{'✕' if c['rank'] in apart else ''}"
        text.append(f"\nrank {label:<3} {literal(c['stage']):<6} ")
        # The whole bar is the stage's time, so 0.2 % exposed is a sliver, not a full bar.
        text.append_text(stacked_bar([("exposed", exposed), ("overlapped", max(comm - exposed, 0.0)),
                                      ("rest of the stage", max(stage - comm, 0.0))], BAR_WIDTH))
        text.append(f" {fmt_us(exposed)} of {fmt_us(comm)} comm · {c['exposed_share'] * 100:.1f}% of stage")
    marked = sorted(r for r in apart if any(c["rank"] == r for c in rows))
    if marked:
        text.append("\n✕ " + "; ".join(f"rank {r}: {apart[r]}" for r in marked) + " (h says why)", style="dim")
    return text.append("\n").append_text(legend(["exposed", "overlapped", "rest of the stage"]))


PLOTS = ("exposure", "gbps", "time")


def matrix_text(report: dict, measure: str) -> Text:
    """Ranks × ranks from the links of communication_matrix.json (src rows, dst columns), each
    cell the link's GB/s or transit ms over every transport but LOCAL, shaded against the largest;
    a slow link (comm_links) is marked `!`. A link both its ends report (a pipeline's send and
    receive) counts once, by the report that moved most. Links to ranks not loaded (numbered within
    their group alone) are counted below it."""
    remote = [x for x in report.get("cluster", {}).get("links", [])
              if str(x.get("transport") or "").upper() != "LOCAL"]
    # (a rank's totals per transport, without a matrix, have no dst and no local numbers)
    untold = sum(1 for x in remote if x.get("dst_local") is not None and None in (x["src_rank"], x["dst_rank"]))
    links = [x for x in remote if x.get("src_rank") is not None and x.get("dst_rank") is not None]
    what = "bandwidth, GB/s" if measure == "gbps" else "transit time, ms"
    text = Text().append(f"Links: {what}, src rank (rows) → dst rank (columns)", style="bold")
    if not links and not untold:
        return text.append("\n  no communication_matrix.json in this profile", style="dim")
    by_reporter: Dict[Tuple[int, int], Dict[Any, List[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    slow = set()
    for x in links:
        key = (x["src_rank"], x["dst_rank"])
        moved = by_reporter[key][x.get("reported_by")]
        moved[0] += x.get("size_mb") or 0.0
        moved[1] += x.get("time_ms") or 0.0
        if x.get("slow"):
            slow.add(key)
    size, time_ms = {}, {}
    for key, reports in by_reporter.items():
        size[key], time_ms[key] = max(reports.values())
    figure: Dict[Tuple[int, int], Optional[float]] = {
        k: (size[k] / time_ms[k] if time_ms[k] else None) if measure == "gbps" else time_ms[k] for k in size}
    top = max((v for v in figure.values() if v), default=0.0)
    ranks = sorted({r for k in figure for r in k})
    rows = [f"rank {r}" for r in ranks]
    values, labels = {}, {}
    for (src, dst), v in figure.items():
        if v is not None:
            cell = (f"rank {src}", str(dst))
            values[cell] = v / top if top else 0.0
            labels[cell] = f"{v:.1f}" + ("!" if (src, dst) in slow else "")
    if links:
        text.append("\n").append_text(heat_grid(rows, [str(r) for r in ranks], values, labels=labels))
    else:
        text.append("\n  no link between the ranks loaded", style="dim")
    if slow:
        text.append("\n! slow link: below the median of its transport's links by the rules' ratio", style="dim")
    if untold:
        text.append(f"\n{untold} link{'s' if untold > 1 else ''} to ranks not loaded (the grid below lists "
                    f"{'them' if untold > 1 else 'it'}, by their number within the group)", style="dim")
    return text


class CommPane(Vertical):
    HELP_TITLE = "Comm"
    BINDINGS = [Binding("m", "next_plot", "Plot: exposure, link GB/s, link ms")]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.plot = PLOTS[0]
        self.report: Optional[dict] = None

    def compose(self) -> ComposeResult:
        yield Static(id="comm-exposure", classes="plots")
        yield DrillGrid(Drill(COMM_OPS), ("Comm",), id="comm-ops")
        yield DrillGrid(Drill(COMM_LINKS), ("Comm",), id="comm-links")

    def show_profile(self, con) -> None:
        self.query_one("#comm-exposure", Static).update(Text("analysing…", style="dim"))
        for grid in self.query(DrillGrid):
            grid.set_source(con)

    def show_report(self, report: dict) -> None:
        self.report = report
        self._draw()

    def action_next_plot(self) -> None:
        self.plot = PLOTS[(PLOTS.index(self.plot) + 1) % len(PLOTS)]
        self._draw()

    def _draw(self) -> None:
        if self.report is None:
            return
        text = exposure_text(self.report) if self.plot == "exposure" else matrix_text(self.report, self.plot)
        self.query_one("#comm-exposure", Static).update(text)
