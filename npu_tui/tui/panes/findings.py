"""Findings: each threshold crossed, with value, threshold, direction, docs, estimated gain; enter
opens the operators behind it, v its SQL."""

from __future__ import annotations

from typing import List

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ..cells import fmt_us, literal
from ..drill import DrillRequested
from ..grids import findings_drill
from ..grid import PagedTable


def _value(f: dict, key: str) -> str:
    """Every metric a rule tests is a ratio (a share, an exposed share, a spread): a percentage."""
    v = f.get(key)
    return f"{v * 100:.1f}%" if isinstance(v, (int, float)) else literal(v)


def gain_us(f: dict) -> float:
    est = f.get("estimate")
    return float(est.get("step_saving_us") or 0.0) if isinstance(est, dict) else 0.0


def ranked_findings(report: dict) -> List[dict]:
    """Largest estimated saving first, then by how far the value is past its threshold."""
    def key(f: dict):
        thr = f.get("threshold") or 0.0
        return (-gain_us(f), -(f.get("value", 0.0) / thr if thr else 0.0))

    return sorted(report.get("findings", []), key=key)


def finding_line(f: dict) -> Text:
    text = Text().append("▲ ", style="bold color(203)")
    text.append(f"{literal(f['rule'])}", style="bold")
    text.append(f"  rank {f['rank']} {literal(f.get('stage') or 'all stages')}  ")
    text.append(f"{literal(f.get('metric', ''))} {_value(f, 'value')} > {_value(f, 'threshold')}")
    text.append(f"  → {literal(f.get('direction', ''))}", style="italic")
    if gain_us(f):
        text.append(f"  (−{fmt_us(gain_us(f))}/step)", style="dim")
    return text


def finding_detail(f: dict) -> Text:
    text = Text()
    rows = [("rule", f.get("rule")), ("rank", f.get("rank")), ("stage", f.get("stage")),
            ("metric", f.get("metric")), ("value", _value(f, "value")), ("threshold", _value(f, "threshold")),
            ("direction", f.get("direction")), ("docs", ", ".join(f.get("docs", [])))]
    est = f.get("estimate")
    if isinstance(est, dict):
        rows.append(("estimate", f"{fmt_us(gain_us(f))} less per step if {est.get('what', 'fixed')}"))
    for k, v in rows:
        text.append(f"{k:<10}", style="bold")
        text.append(literal(v) + "\n")
    tops = (f.get("evidence") or {}).get("top_operators") or []
    if tops:
        text.append("top operators\n", style="bold")
        for op in tops[:5]:
            text.append(f"  {(op.get('share') or 0.0) * 100:5.1f}%  {fmt_us(op.get('time_us') or 0.0):>9}  ")
            text.append(f"{literal(op.get('op'))}  {literal(op.get('input_shapes') or '')}\n")
    text.append("enter: operators behind it · v: its SQL", style="dim")
    return text


class FindingsPane(Vertical):
    HELP_TITLE = "Findings"
    HELP_EXTRA = (("enter", "Open the operators behind the finding"),)
    BINDINGS = [Binding("v", "show_sql", "SQL")]

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
        self.findings = ranked_findings(report)
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

    def on_option_list_option_highlighted(self, msg: OptionList.OptionHighlighted) -> None:
        if self.current is not None:
            self.query_one("#findings-detail", Static).update(finding_detail(self.current))

    def on_option_list_option_selected(self, msg: OptionList.OptionSelected) -> None:
        msg.stop()
        f = self.current
        if f is not None:
            self.post_message(DrillRequested(("Findings",), findings_drill(f)))

    def action_show_sql(self) -> None:
        f = self.current
        if f is not None and (f.get("evidence") or {}).get("sql"):
            self.post_message(PagedTable.ShowSql(f["evidence"]["sql"]))
