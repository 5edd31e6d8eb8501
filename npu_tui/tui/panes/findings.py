"""Findings: each threshold crossed, with value, threshold, direction, docs, estimated gain; enter
opens the operators behind it, v its SQL."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import List, Optional

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ...text import apart_line, exposed_parts, finding_where, metric_value, per_step, saving_place, waited_for_text
from ..cells import fmt_us, literal
from ..drill import DrillRequested
from ..grids import findings_drill
from ..grid import PagedTable


def finding_line(f: dict) -> Text:
    """One line a finding, largest saving first as the report orders them: rule, where, value,
    the saving per step, the direction (cut at the screen's edge, never wrapped)."""
    text = Text(no_wrap=True, overflow="ellipsis").append("▲ ", style="bold color(203)")
    text.append(f"{literal(f['rule'])}", style="bold")
    text.append(f"  {literal(finding_where(f))}  {metric_value(f['metric'], f['value'])}")
    if f.get("saving_us"):
        text.append(f"  −{fmt_us(f['saving_us'])}{per_step(f, short=True)}", style="bold")
    text.append(f"  → {literal(f.get('direction', ''))}", style="italic")
    return text


LABEL = 10  # the width of the label column; values wrap under themselves, not under it


def _row(text: Text, label: str, value: str, width: int, style: str = "") -> None:
    lines = textwrap.wrap(value, max(width - LABEL, 20)) or [""]
    text.append(f"{label:<{LABEL}}", style="bold").append(lines[0] + "\n", style=style)
    for line in lines[1:]:
        text.append(" " * LABEL + line + "\n", style=style)


def finding_detail(f: dict, width: int = 100) -> Text:
    """The whole finding, as a label column and values wrapped to ``width`` under themselves."""
    text = Text()
    # a spread is of every rank compared, not the worst rank's own figure
    whose = "across the ranks, (max - min) / mean" if f["metric"] == "spread" else f"on rank {f['rank']}"
    rows = [("rule", f["rule"]), ("where", literal(finding_where(f))), ("metric", f["metric"]),
            ("value", f"{metric_value(f['metric'], f['value'])} {whose} "
                      f"(threshold {metric_value(f['metric'], f['threshold'])})"),
            ("direction", f.get("direction"))]
    if f.get("per_rank") and all(r.get("apart") for r in f["per_rank"]):
        rows.append(("apart", apart_line(f["per_rank"])))
    if f.get("waited_for") is not None:
        rows.append(("slow rank", waited_for_text(f)))
    rows.append(("saves", f"{fmt_us(f.get('saving_us') or 0.0)} {per_step(f)} {saving_place(f)}, with "
                          f"{f.get('estimate') or 'it fixed'}"))
    for k, v in rows:
        _row(text, k, literal(v), width)
    for doc in f.get("docs", []):
        _row(text, "do", literal(doc["action"]), width)
        _row(text, "", f"{literal(doc['repository'])}: {literal(doc['path'])}", width, style="dim")
    split = (f.get("evidence") or {}).get("exposed_split") or {}
    if split:
        _row(text, "exposed", " · ".join(f"{literal(d)} {fmt_us(v)}" for d, v in exposed_parts(split))
             + f" {per_step(f)}", width)
    tops = (f.get("evidence") or {}).get("top_operators") or []
    if tops:
        text.append("top operators (total)\n", style="bold")
        for op in tops[:5]:
            text.append(f"  {(op.get('share') or 0.0) * 100:5.1f}%  {fmt_us(op.get('time_us') or 0.0):>9}  ")
            text.append(f"{literal(op.get('op'))}  {literal(op.get('input_shapes') or '')}\n")
    gaps = (f.get("evidence") or {}).get("idle_gaps") or []
    if gaps:
        text.append("longest idle gaps\n", style="bold")
        for g in gaps:
            where = f"after step {g['step']}" if g.get("between_steps") else f"at {fmt_us(g['start_us'])}"
            text.append(f"  {fmt_us(g['gap_us']):>9} {where}  {literal(g.get('host_range') or '')}\n")
    text.append("enter: the ranks behind it · t: the timeline there · v: its SQL", style="dim")
    return text


@dataclass
class TimelineRequested(Message):
    """Open the Timeline at a finding's rank and stage."""

    rank: Optional[int]
    stage: Optional[str]


class FindingsPane(Vertical):
    HELP_TITLE = "Findings"
    HELP_EXTRA = (("enter", "Open the finding's ranks, then what lies behind it on one"),)
    BINDINGS = [Binding("v", "show_sql", "SQL"), Binding("t", "timeline", "Timeline")]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.findings: List[dict] = []

    def compose(self) -> ComposeResult:
        yield OptionList(id="findings-list")
        with VerticalScroll(id="findings-detail-scroll"):
            yield Static(id="findings-detail")

    def show_profile(self, con) -> None:
        self.findings = []
        self.query_one(OptionList).clear_options()
        self.query_one("#findings-detail", Static).update(Text("analysing…", style="dim"))

    def show_report(self, report: dict) -> None:
        self.findings = report.get("findings", [])
        opts = self.query_one(OptionList)
        opts.clear_options()
        opts.add_options([Option(finding_line(f)) for f in self.findings])
        if not self.findings:
            self.query_one("#findings-detail", Static).update(Text("No threshold crossed.", style="dim"))
        else:
            opts.highlighted = 0

    @property
    def current(self):
        i = self.query_one(OptionList).highlighted
        return self.findings[i] if i is not None and i < len(self.findings) else None

    def _show_detail(self) -> None:
        if self.current is not None:
            # the pane less the scroll's padding and its scrollbar, which comes and goes with the text
            self.query_one("#findings-detail", Static).update(finding_detail(self.current, self.size.width - 4))

    def on_option_list_option_highlighted(self, msg: OptionList.OptionHighlighted) -> None:
        self._show_detail()

    def on_resize(self) -> None:
        self._show_detail()

    def on_option_list_option_selected(self, msg: OptionList.OptionSelected) -> None:
        msg.stop()
        f = self.current
        if f is not None:
            self.post_message(DrillRequested(("Findings",), findings_drill(f)))

    def action_timeline(self) -> None:
        f = self.current
        if f is not None:
            self.post_message(TimelineRequested(f.get("rank"), f.get("stage")))

    def action_show_sql(self) -> None:
        f = self.current
        if f is not None and (f.get("evidence") or {}).get("sql"):
            self.post_message(PagedTable.ShowSql(f["evidence"]["sql"]))
