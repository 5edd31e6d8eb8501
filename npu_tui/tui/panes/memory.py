"""Memory: what profile_memory=True recorded: each rank's peaks per stage and the DiT forwards'
peaks one after another (does memory grow?), then the operators that allocate most; enter opens
an operator's allocations."""

from __future__ import annotations

from collections import defaultdict

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from ...text import apart_key, apart_mark, apart_ranks, memory_unit
from ..cells import literal
from ..drill import DrillGrid
from ..grids import memory_operators
from ..plots import sparkline


def memory_plots(report: dict) -> Text:
    """Per rank: the peak of each stage (allocated / reserved, GB or MB), then the peaks of the stage
    run most often (the denoising loop's forwards) as a sparkline from zero, first and last. A rank
    not compared with the others (a file of it not loaded whole, another run) is marked ✕."""
    memory = report.get("memory", {})
    peaks = memory.get("peaks", [])
    per, unit = memory_unit([p.get(k) for p in peaks for k in ("peak_reserved_mb", "peak_allocated_mb")])
    text = Text().append(f"Memory peaks per stage, {unit} allocated / reserved", style="bold")
    if not peaks:
        return text.append("\n  no memory records in this profile (collect with profile_memory=True)", style="dim")
    by_stage = defaultdict(lambda: defaultdict(list))
    for w in memory.get("windows", []):
        mb = w.get("peak_allocated_mb") if w.get("peak_allocated_mb") is not None else w.get("peak_reserved_mb")
        if mb is not None:
            by_stage[w["rank"]][w["stage"]].append(mb)
    loop = {rank: max(stages.items(), key=lambda kv: len(kv[1])) for rank, stages in by_stage.items()}
    apart = apart_ranks(report)
    shown = sorted({p["rank"] for p in peaks})
    for rank in shown:
        rows = [p for p in peaks if p["rank"] == rank]
        whole = next((p for p in rows if p["stage"] is None), {})
        text.append(f"\nrank {rank:<3}", style="bold")
        for p in (p for p in rows if p["stage"] is not None):
            mark = "bold" if p["stage"] == whole.get("peak_stage") else ""
            text.append(f" {literal(p['stage'])} ", style=mark)
            allocated, reserved = p["peak_allocated_mb"] or 0, p["peak_reserved_mb"] or 0
            # reserved below allocated: not recorded (the CPU's allocator keeps no reserve)
            text.append(f"{allocated / per:.2f}/" + (f"{reserved / per:.2f}" if reserved >= allocated else "-"),
                        style=mark)
        text.append(apart_mark(apart, rank))
        stage, series = loop.get(rank, ("", []))
        if len(series) >= 2:
            text.append(f"\n         {literal(stage)} forwards ")
            text.append_text(sparkline(series, 40))
            text.append(f" {series[0] / per:.2f} → {series[-1] / per:.2f} {unit}")
            if stage == "DiT" and whole.get("growth") is not None:  # (as memory_growth measures it)
                text.append(f" · later/earlier half {whole['growth'] * 100:+.1f}%")
    if any(rank in apart for rank in shown):
        text.append("\n" + apart_key(), style="dim")
    return text


class MemoryPane(Vertical):
    def compose(self) -> ComposeResult:
        yield Static(id="memory-plots", classes="plots")
        yield DrillGrid(memory_operators(), ("Memory",), id="memory-operators")

    def show_profile(self, con) -> None:
        self.query_one("#memory-plots", Static).update(Text("analysing…", style="dim"))
        self.query_one(DrillGrid).set_source(con)

    def show_report(self, report: dict) -> None:
        self.query_one("#memory-plots", Static).update(memory_plots(report))
