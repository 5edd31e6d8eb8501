"""Ranks: kernel time per rank by category, the ranks × category heat grid, the slow rank marked."""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Optional, Tuple

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from ...text import apart_key, apart_mark, apart_ranks, ranks_why
from ..cells import fmt_us
from ..drill import DrillGrid
from ..grids import ranks
from ..plots import heat_grid, legend, stacked_bar

BAR_WIDTH = 40


def category_time(report: dict) -> Tuple[List[str], Dict[int, Dict[str, float]]]:
    """Per rank, kernel time by category summed over stages, categories in the report's order."""
    order: List[str] = []
    per_rank: Dict[int, Dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for c in report.get("categories", []):
        if c["category"] not in order:
            order.append(c["category"])
        per_rank[c["rank"]][c["category"]] += c["time_us"]
    return order, per_rank


def slow_rank(report: dict) -> Optional[int]:
    """The slow rank by its own time per step (computing and free: the waits aside), as
    rank_spread names it (None with fewer than two ranks)."""
    spread = report.get("cluster", {}).get("spread", [])
    return next((s["slow_rank"] for s in spread if s["measure"] == "own_time"), None)


def rank_plots(report: dict) -> Text:
    cats, per_rank = category_time(report)
    slow = slow_rank(report)
    apart = apart_ranks(report)
    text = Text().append("Kernel time per rank by category, total\n", style="bold")
    peak = max((sum(v.values()) for v in per_rank.values()), default=0.0)
    for rank in sorted(per_rank):
        parts = [(c, per_rank[rank].get(c, 0.0)) for c in cats]
        total = sum(v for _, v in parts)
        width = round(BAR_WIDTH * total / peak) if peak else 0
        # (by its own time per step, computing and free, which the bar of kernel time need not show;
        # a fact, not a verdict: the finding says when the spread is worth acting on)
        mark = " ◀ most own time/step" if rank == slow else apart_mark(apart, rank)
        text.append(f"rank {rank:<3}", style="bold reverse" if rank == slow else "")
        text.append(" ")
        text.append_text(stacked_bar(parts, width))
        text.append(" " * (BAR_WIDTH - width) + f" {fmt_us(total)}{mark}\n")
    if apart:  # said once, so the marks stay short enough for 80 columns
        # (a rank without kernels has no bar to mark: named here)
        text.append(apart_key(ranks_why(apart, [r for r in apart if r not in per_rank])) + "\n", style="dim")
    text.append_text(legend(cats))
    text.append("\n\nShare of each rank's kernel time\n", style="bold")
    shares = {}
    for rank, vals in per_rank.items():
        total = sum(vals.values())
        for c in cats:
            shares[(f"rank {rank}", c)] = vals.get(c, 0.0) / total if total else None
    text.append_text(heat_grid([f"rank {r}" for r in sorted(per_rank)], cats, shares,
                               marked=[f"rank {slow}"] if slow is not None else []))
    return text


class RanksPane(Vertical):
    def compose(self) -> ComposeResult:
        yield Static(id="ranks-plots", classes="plots")
        yield DrillGrid(ranks(), ("Ranks",), id="ranks-grid")

    def show_profile(self, con) -> None:
        self.query_one("#ranks-plots", Static).update(Text("analysing…", style="dim"))
        self.query_one(DrillGrid).set_source(con)

    def show_report(self, report: dict) -> None:
        self.query_one("#ranks-plots", Static).update(rank_plots(report))
