"""Overview: data health when something was skipped, the step account, stage × category bars per
rank, the top findings, how stages were found."""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Optional

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from ...text import (UNMARKED, account_check, apart_key, apart_mark, apart_ranks, exposed_parts, lost_phrase,
                    memory_unit, no_findings, per_what, ranks_why, steps_unmarked)
from ..cells import fmt_us, literal
from ..plots import legend, sparkline, stacked_bar
from .findings import finding_line

SPARK_STEPS = 40  # the last steps the per-step sparkline shows
BAR_WIDTH = 30
CATEGORY_BAR_WIDTH = 24  # leaves room for the top three shares at 80 columns
LABEL_WIDTH = 12  # a stage × category bar's "rank N stage", cut
# step_account's parts, as the Overview names them
ACCOUNT_PARTS = (("compute", "compute"), ("comm_exposed", "exposed comm"), ("copy", "copies"), ("free", "free"),
                 ("between", "between steps"))
TOP_FINDINGS = 3
TOP_HEALTH = 3
# (mark, style) per data health severity; "info" items (skipped by design) only show under h.
SEVERITY = {"error": ("✗", "bold red"), "warning": ("!", "bold yellow"), "info": ("·", "dim")}


def health_problems(items: list) -> list:
    """In health's order (errors, then warnings by rows lost); info items are not problems."""
    return [i for i in items if i.severity != "info"]


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
    errors = [i.file for i in problems if i.severity == "error"]
    if errors:  # before anything else: every figure on screen lacks what these files miss
        text.append(f"Incomplete: {lost_phrase(errors)} could not be loaded whole", style=SEVERITY["error"][1])
    else:
        text.append("Data health", style="bold")
    text.append(f"  {len(problems)} problem{'s' if len(problems) != 1 else ''} · h shows all, with fixes",
                style="dim")
    for item in problems[:TOP_HEALTH]:
        text.append("\n").append_text(health_line(item))
    if len(problems) > TOP_HEALTH:
        text.append(f"\n  … {len(problems) - TOP_HEALTH} more", style="dim")
    return text


def _mean_note(report: dict, row: dict) -> str:
    if steps_unmarked(report, row["rank"]):
        return f" ({UNMARKED})"
    steps, left = row.get("steps") or 0, row.get("left_out") or 0
    note = f"mean of {steps}" if steps > 1 else ""
    if left:
        note += f"{'; ' if note else ''}{left} warm-up step{'s' if left > 1 else ''} left out"
    return f" ({note})" if note else ""


def _fill(items: List[str], width: int, indent: int = 9) -> str:
    """Items two spaces apart, on as many lines as ``width`` needs, each indented."""
    lines = [" " * indent]
    for item in items:
        if len(lines[-1]) > indent and len(lines[-1]) + 2 + len(item) > width:
            lines.append(" " * indent)
        lines[-1] += ("  " if len(lines[-1]) > indent else "") + item
    return "\n".join(lines)


def account_text(report: dict, width: int = 100) -> Text:
    """Where each rank's step goes (step_account_mean): compute, exposed comm (and what it is),
    copies, free time, and the idle time before the next step, per step."""
    rows = report.get("step_account", [])
    text = Text().append(f"Step account, {per_what(report)}", style="bold")
    if not rows:
        # (step times without kernels: msprof-analyze's cluster step trace alone)
        why = "no kernels to account for; each rank's step time: 5 Ranks" if report.get("steps") else \
            "no step data in this profile"
        return text.append(f"\n  {why}", style="dim")
    check = account_check(report.get("step_account_check", []))
    if check:
        line, differs = check
        text.append("  " + line, style=SEVERITY["warning"][1] if differs else "dim")
    steps: Dict[int, List[dict]] = defaultdict(list)
    for st in report.get("steps", []):
        steps[st["rank"]].append(st)
    apart = apart_ranks(report)
    for rank in sorted({r["rank"] for r in rows}):
        mine = [r for r in rows if r["rank"] == rank]
        parts = {p: sum(r["us_per_step"] for r in mine if r["part"] == p) for p, _ in ACCOUNT_PARTS}
        span = sum(v for p, v in parts.items() if p != "between")
        text.append(f"\nrank {rank:<3} ")
        text.append_text(stacked_bar([(label, parts[p]) for p, label in ACCOUNT_PARTS], BAR_WIDTH))
        # (the mark alone: with its reason the line wraps at 80 columns; the key below names it)
        text.append(f" {fmt_us(span)}{_mean_note(report, mine[0])}{' ✕' if rank in apart else ''}\n")
        text.append(_fill([f"{label} {fmt_us(parts[p])}" for p, label in ACCOUNT_PARTS if parts[p]], width),
                    style="dim")
        split: Dict[str, float] = defaultdict(float)
        for r in mine:
            if r["part"] == "comm_exposed" and r["detail"] != "unsplit":
                split[r["detail"]] += r["us_per_step"]
        if split:
            items = [f"{d} {fmt_us(v)}" for d, v in exposed_parts(split)]
            items[0] = "exposed: " + items[0]
            text.append("\n" + _fill(items, width), style="dim")
        series = sorted(steps.get(rank, []), key=lambda st: st["step"])
        if len(series) > 1:
            text.append("\n" + " " * 9 + "per step ")
            values = [st.get("step_us") or 0.0 for st in series][-SPARK_STEPS:]
            text.append_text(sparkline(values))
            text.append(f" {fmt_us(min(values))}–{fmt_us(max(values))}", style="dim")
            marked = [str(st["step"]) for st in series if st.get("outlier")]
            if marked:
                text.append(f"  warm-up: step {', '.join(marked)}", style="dim")
    present = {r["part"] for r in rows if r["us_per_step"]}
    text.append("\n").append_text(legend([label for p, label in ACCOUNT_PARTS if p in present]))
    marked = sorted({r["rank"] for r in rows} & set(apart))
    if marked:
        text.append("\n" + apart_key(ranks_why(apart, marked)), style="dim")
    return text


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
    apart = apart_ranks(report)
    labels = {key: f"rank {key[0]}{'✕' if key[0] in apart else ''} {literal(key[1])}" for key in rows}
    width = min(max(LABEL_WIDTH, *map(len, labels.values())), LABEL_WIDTH + 2)  # (the mark's room)
    for (rank, stage), shares in sorted(rows.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        text.append(f"{labels[rank, stage]:<{width}.{width}} ")
        text.append_text(stacked_bar([(c, shares.get(c, 0.0)) for c in order], CATEGORY_BAR_WIDTH))
        top = sorted(shares.items(), key=lambda kv: -kv[1])[:3]
        text.append("  " + " · ".join(f"{literal(c)} {v * 100:.0f}%" for c, v in top if v > 0) + "\n")
    return text.append_text(legend(order))


def findings_text(report: dict) -> Text:
    findings = report.get("findings", [])
    text = Text().append(f"Findings ({len(findings)})", style="bold")
    if not findings:
        return text.append(f"\n  {no_findings(report)}", style="dim")
    for f in findings[:TOP_FINDINGS]:
        text.append("\n")
        text.append_text(finding_line(f))
    if len(findings) > TOP_FINDINGS:
        text.append(f"\n  … {len(findings) - TOP_FINDINGS} more: press 2", style="dim")
    return text


def memory_text(report: dict) -> Text:
    """One line a rank: the reserved and allocated peaks and the stage of the reserved one, and
    how the DiT forwards' peaks grew (memory_peaks)."""
    peaks = [p for p in report.get("memory", {}).get("peaks", []) if p.get("stage") is None]
    text = Text().append("Memory, peak", style="bold")
    if not peaks:
        # (msprof-analyze's cluster outputs alone hold no rank's memory)
        why = "no memory records (profile with profile_memory=True)" if report["profile"]["ranks"] else \
            "no rank's own files here, so no memory records"
        return text.append(f"\n  {why}", style="dim")
    per, unit = memory_unit([p.get(k) for p in peaks for k in ("peak_reserved_mb", "peak_allocated_mb")])
    apart = apart_ranks(report)
    for p in sorted(peaks, key=lambda p: p["rank"]):
        reserved, allocated = p.get("peak_reserved_mb") or 0, p.get("peak_allocated_mb") or 0
        # Reserved below allocated: not recorded (the CPU's allocator keeps no reserve).
        held = f"{reserved / per:6.2f} {unit}" if reserved >= allocated else "not recorded"
        text.append(f"\nrank {p['rank']:<3} reserved {held}")
        text.append(f" in {literal(p.get('peak_stage') or '-')}, allocated {allocated / per:6.2f} {unit}")
        if p.get("growth") is not None:
            # (memory_growth's measure: the later half's peaks against the earlier half's)
            text.append(f" · DiT forwards' later/earlier half {p['growth'] * 100:+.1f}%")
        text.append(apart_mark(apart, p["rank"]))
    return text


def stages_text(report: dict) -> Text:
    text = Text().append("How stages were detected\n", style="bold")
    stages = report.get("stages", [])
    if not stages:
        return text.append("  no stages", style="dim")
    summary = {d["rank"]: d.get("summary", "") for d in report.get("stage_detection", [])}
    apart = apart_ranks(report)
    rank = None
    for s in sorted(stages, key=lambda s: (s["rank"], s.get("start_us") or 0.0)):
        if s["rank"] != rank:
            rank = s["rank"]
            text.append(f"rank {rank:<3} ").append(literal(summary.get(rank, s.get("method", "?"))), style="italic")
            text.append(apart_mark(apart, rank) + "\n")
        text.append(f"         {literal(s['stage']):<6} ")
        text.append(f"wall {fmt_us(s.get('wall_us') or 0.0):>9} in all  kernels {s.get('kernel_count', 0):>7,}")
        if s.get("forwards"):
            text.append(f"  {s['forwards']} forward{'s' if s['forwards'] > 1 else ''}/call", style="dim")
        text.append("\n")
    return text


class OverviewPane(VerticalScroll):
    def compose(self) -> ComposeResult:
        # The findings right under the step account: at 80×24 they are on the first screen.
        for name in ("health", "steps", "findings", "memory", "categories", "stages"):
            yield Static(id=f"overview-{name}", classes="section")

    report: Optional[dict] = None

    def on_mount(self) -> None:
        self.query_one("#overview-health").display = False

    def _show_account(self) -> None:
        if self.report is not None:
            # the pane less its padding and the scrollbar's room: the figures wrap under themselves
            self.query_one("#overview-steps", Static).update(account_text(self.report, self.size.width - 4))

    def on_resize(self) -> None:
        self._show_account()

    def show_health(self, items: list) -> None:
        text = health_text(items)
        box = self.query_one("#overview-health", Static)
        box.update(text)
        box.display = bool(text.plain)

    def show_profile(self, con) -> None:
        self.report = None
        self.query_one("#overview-steps", Static).update(Text("analysing…", style="dim"))
        for name in ("categories", "findings", "memory", "stages"):
            self.query_one(f"#overview-{name}", Static).update("")

    def show_report(self, report: dict) -> None:
        self.report = report
        self._show_account()
        self.query_one("#overview-categories", Static).update(categories_text(report))
        self.query_one("#overview-findings", Static).update(findings_text(report))
        self.query_one("#overview-memory", Static).update(memory_text(report))
        self.query_one("#overview-stages", Static).update(stages_text(report))
