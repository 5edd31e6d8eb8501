"""Overview: data health when something was skipped, step breakdown, stage × category bars per rank,
the top findings, how stages were found."""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from ..cells import fmt_us, literal
from ..plots import legend, sparkline, stacked_bar
from .findings import finding_line, ranked_findings

BAR_WIDTH = 30
CATEGORY_BAR_WIDTH = 24  # leaves room for the top three shares at 80 columns
STEP_PARTS = ("computing", "comm_not_overlapped", "free")
TOP_FINDINGS = 3
TOP_HEALTH = 3
# (mark, style) per data health severity; "info" items (skipped by design) only show under h.
SEVERITY = {"error": ("✗", "bold red"), "warning": ("!", "bold yellow"), "info": ("·", "dim")}


def health_problems(items: list) -> list:
    """Errors first (a file gave nothing), then warnings by rows lost; info items are not problems."""
    problems = [i for i in items if i.severity != "info"]
    return sorted(problems, key=lambda i: (i.severity != "error", -i.lost))


def health_line(item) -> Text:
    mark, style = SEVERITY.get(item.severity, ("?", "bold"))
    where = f"rank {item.rank}: " if item.rank is not None else ""
    return Text(f"{mark} ", style=style).append(literal(where + item.what))


def health_text(items: list) -> Text:
    """A few lines: how many problems, the worst ones, where to see all; empty when all is clean."""
    problems = health_problems(items)
    text = Text(no_wrap=True, overflow="ellipsis")
    if not problems:
        return text
    text.append("Data health", style="bold")
    text.append(f"  {len(problems)} problem{'s' if len(problems) != 1 else ''} · h shows all, with fixes",
                style="dim")
    for item in problems[:TOP_HEALTH]:
        text.append("\n").append_text(health_line(item))
    if len(problems) > TOP_HEALTH:
        text.append(f"\n  … {len(problems) - TOP_HEALTH} more", style="dim")
    return text


def steps_text(report: dict) -> Text:
    steps = report.get("steps", [])
    text = Text().append("Step breakdown", style="bold")
    if not steps:
        return text.append("\n  no step data in this profile", style="dim")
    sources = sorted({s.get("source") or "?" for s in steps})
    text.append(f"  (from {', '.join(sources)})\n", style="dim")
    by_rank: Dict[int, List[dict]] = defaultdict(list)
    for s in steps:
        by_rank[s["rank"]].append(s)
    for rank in sorted(by_rank):
        rows = by_rank[rank]
        n = len(rows)
        avg = {p: sum((r.get(f"{p}_us") or 0.0) for r in rows) / n for p in STEP_PARTS}
        stage = sum((r.get("stage_us") or 0.0) for r in rows) / n
        text.append(f"rank {rank:<3} ")
        text.append_text(stacked_bar([(p, avg[p]) for p in STEP_PARTS], BAR_WIDTH))
        text.append(f" step {fmt_us(stage)}" + (f" (mean of {n})" if n > 1 else "") + "\n")
        text.append(" " * 9 + "  ".join(f"{p.replace('_', ' ')} {fmt_us(avg[p])}" for p in STEP_PARTS) + "\n",
                    style="dim")
        if n > 1:
            text.append(" " * 9 + "per step ")
            text.append_text(sparkline([r.get("stage_us") or 0.0 for r in sorted(rows, key=lambda r: r["step"])], 40))
            text.append("\n")
    return text.append_text(legend(STEP_PARTS))


def categories_text(report: dict) -> Text:
    cats = report.get("categories", [])
    text = Text().append("Stage × category (share of kernel time)\n", style="bold")
    if not cats:
        return text.append("  no kernels", style="dim")
    order: List[str] = []
    rows: Dict[tuple, Dict[str, float]] = defaultdict(dict)
    for c in cats:
        if c["category"] not in order:
            order.append(c["category"])
        rows[(c["rank"], c["stage"])][c["category"]] = c["share"]
    for (rank, stage), shares in sorted(rows.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        label = f"rank {rank} {literal(stage)}"
        text.append(f"{label:<12.12} ")
        text.append_text(stacked_bar([(c, shares.get(c, 0.0)) for c in order], CATEGORY_BAR_WIDTH))
        top = sorted(shares.items(), key=lambda kv: -kv[1])[:3]
        text.append("  " + " · ".join(f"{literal(c)} {v * 100:.0f}%" for c, v in top if v > 0) + "\n")
    return text.append_text(legend(order))


def findings_text(report: dict) -> Text:
    findings = ranked_findings(report)
    text = Text().append(f"Findings ({len(findings)})", style="bold")
    if not findings:
        return text.append("\n  no threshold crossed", style="dim")
    for f in findings[:TOP_FINDINGS]:
        text.append("\n")
        text.append_text(finding_line(f))
    if len(findings) > TOP_FINDINGS:
        text.append(f"\n  … {len(findings) - TOP_FINDINGS} more: press 2", style="dim")
    return text


def stages_text(report: dict) -> Text:
    text = Text().append("How stages were detected\n", style="bold")
    stages = report.get("stages", [])
    if not stages:
        return text.append("  no stages", style="dim")
    summary = {d["rank"]: d.get("summary", "") for d in report.get("stage_detection", [])}
    rank = None
    for s in sorted(stages, key=lambda s: (s["rank"], s.get("start_us") or 0.0)):
        if s["rank"] != rank:
            rank = s["rank"]
            text.append(f"rank {rank:<3} ").append(literal(summary.get(rank, s.get("method", "?"))), style="italic")
            text.append("\n")
        text.append(f"         {literal(s['stage']):<6} ")
        text.append(f"wall {fmt_us(s.get('wall_us') or 0.0):>9}  kernels {s.get('kernel_count', 0):>7,}\n")
    return text


class OverviewPane(VerticalScroll):
    def compose(self) -> ComposeResult:
        for name in ("health", "steps", "categories", "findings", "stages"):
            yield Static(id=f"overview-{name}", classes="section")

    def on_mount(self) -> None:
        self.query_one("#overview-health").display = False

    def show_health(self, items: list) -> None:
        text = health_text(items)
        box = self.query_one("#overview-health", Static)
        box.update(text)
        box.display = bool(text.plain)

    def show_profile(self, con) -> None:
        self.query_one("#overview-steps", Static).update(Text("analysing…", style="dim"))
        for name in ("categories", "findings", "stages"):
            self.query_one(f"#overview-{name}", Static).update("")

    def show_report(self, report: dict) -> None:
        self.query_one("#overview-steps", Static).update(steps_text(report))
        self.query_one("#overview-categories", Static).update(categories_text(report))
        self.query_one("#overview-findings", Static).update(findings_text(report))
        self.query_one("#overview-stages", Static).update(stages_text(report))
