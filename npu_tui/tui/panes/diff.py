"""The Diff pane: the comparison of a run with the one before (``Session.diff``)."""

from __future__ import annotations

from typing import List, Optional

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from ...text import finding_where
from ..cells import fmt_us, literal

EMPTY = "No comparison yet: c collects a new run and compares it with the one before; " \
        "`npu-tui diff BASE NEW` compares any two profiles."
VERDICT_STYLE = {"faster": "bold green", "slower": "bold red", "within noise": "bold yellow"}


def _delta(us: float) -> Text:
    # Less time is better: green when it went down.
    style = "green" if us < 0 else "red" if us > 0 else ""
    return Text(("+" if us > 0 else "") + fmt_us(us), style=style)


def _label(value) -> Text:
    # A plain str in a Rich table cell would be read as markup; profile text never is.
    return Text(literal(value))


def _table(title: str, headers: List[str], labels: int) -> Table:
    t = Table(title=title, title_justify="left", title_style="bold", box=None, pad_edge=False)
    for i, h in enumerate(headers):
        t.add_column(h, justify="left" if i < labels else "right", no_wrap=i >= labels)
    return t


def diff_renderable(d: dict) -> Group:
    # The analysis package loads DuckDB: imported when a diff exists, not with the pane.
    from ...analysis.diff import apart_lines, incomplete_lines, rank_cell, signed_percent, value_change, verdict_line

    v = d["verdict"]
    parts = [Text(f"base {literal(d['base']['path'])}\nnew  {literal(d['new']['path'])}"),
             *[Text(line, style="bold red") for line in incomplete_lines(d)],
             Text(literal(verdict_line(d)), style=VERDICT_STYLE.get(v["verdict"], "bold")), Text()]

    stages = _table("Stages (kernel time per step)", ["rank", "stage", "base", "new", "delta", "%"], 2)
    for r in d["stages"]:
        stages.add_row(rank_cell(r), _label(r["stage"]), fmt_us(r["base_us"]), fmt_us(r["new_us"]),
                       _delta(r["delta_us"]), signed_percent(r["delta_pct"]))
    cats = _table("Categories (per step)", ["rank", "stage", "category", "base", "new", "delta",
                                            "share"], 3)
    for r in d["categories"]:
        if r["base_us"] or r["new_us"]:
            cats.add_row(rank_cell(r), _label(r["stage"]), _label(r["category"]),
                         fmt_us(r["base_us"]), fmt_us(r["new_us"]), _delta(r["delta_us"]),
                         f"{r['base_share'] * 100:.0f}% → {r['new_share'] * 100:.0f}%")
    parts += [stages, Text(), cats, *[Text(line, style="dim") for line in apart_lines(d)], Text()]

    f = d["findings"]
    found = Text("Findings\n", style="bold")
    for x in f["appeared"]:
        found.append("▲ appeared ", style="bold red").append(f"{literal(x['rule'])} {literal(finding_where(x))}\n")
    for x in f["cleared"]:
        found.append("▼ cleared  ", style="bold green").append(f"{literal(x['rule'])} {literal(finding_where(x))}")
        if x["untested"]:
            found.append(f" (maybe only untested: the new run leaves out {x['untested']})", style="dim")
        found.append("\n")
    for x in f["remaining"]:
        found.append("  still    ", style="dim").append(
            f"{literal(x['rule'])} {literal(finding_where({**x, 'ranks': x['new_ranks']}))}: "
            f"{value_change(x, '→')}\n")
    if not any(f.values()):
        found.append("none in either run\n", style="dim")
    parts.append(found)

    ops = _table("Operators that moved most (per step)", ["operator", "base", "new", "delta",
                                                          "calls"], 1)
    for r in d["operators"]:
        ops.add_row(_label(r["op"]), fmt_us(r["base_us"]), fmt_us(r["new_us"]),
                    _delta(r["delta_us"]), f"{r['base_count']:g} → {r['new_count']:g}")
    parts.append(ops)
    return Group(*parts)


class DiffView(VerticalScroll):
    """Shows one comparison. ``show(diff)`` with the dict from ``analysis.diff.compare`` (what
    ``CollectLog.Finished.diff`` carries, or ``npu-tui diff --format json`` prints); ``clear()``
    goes back to the hint."""

    DEFAULT_CSS = """
    DiffView { height: 1fr; padding: 0 1; }
    """
    can_focus = True

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.diff: Optional[dict] = None

    def compose(self):
        yield Static(Text(EMPTY, style="dim"), id="diff-body")

    def show(self, diff: dict) -> None:
        self.diff = diff
        self.query_one("#diff-body", Static).update(diff_renderable(diff))

    def clear(self) -> None:
        self.diff = None
        self.query_one("#diff-body", Static).update(Text(EMPTY, style="dim"))
