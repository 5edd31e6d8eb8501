"""Drill-down: each level is a screen with a breadcrumb over one paged table; escape pops it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static

from . import queries as Q
from .cells import Column, literal
from .grid import GridQuery, GridView, PagedTable

Row = Dict[str, Any]


@dataclass(frozen=True)
class Drill:
    """A level: its query, and how a row of it opens the next level (None: the bottom)."""

    query: GridQuery
    child: Optional[Callable[[Row], "Drill"]] = None


class DrillRequested(Message):
    """Open ``drill`` below the levels named in ``crumbs``."""

    def __init__(self, crumbs: Tuple[str, ...], drill: Drill) -> None:
        super().__init__()
        self.crumbs, self.drill = crumbs, drill


def breadcrumb(crumbs: Tuple[str, ...]) -> Text:
    text = Text()
    for i, c in enumerate(crumbs):
        if i:
            text.append(" › ", style="dim")
        text.append(literal(c), style="bold" if i == len(crumbs) - 1 else "")
    return text


class DrillGrid(GridView):
    """A GridView whose enter opens the next level of its Drill."""

    def __init__(self, drill: Drill, crumbs: Tuple[str, ...], **kwargs) -> None:
        super().__init__(drill.query, **kwargs)
        self.drill = drill
        self.crumbs = crumbs

    def on_paged_table_activated(self, msg: PagedTable.Activated) -> None:
        msg.stop()
        if self.drill.child is not None:
            self.post_message(DrillRequested(self.crumbs, self.drill.child(msg.row)))


class DrillScreen(Screen):
    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, crumbs: Tuple[str, ...], drill: Drill, con) -> None:
        super().__init__()
        self.crumbs = crumbs + (drill.query.title,)
        self.drill = drill
        self.con = con

    def compose(self) -> ComposeResult:
        yield Static(breadcrumb(self.crumbs), classes="breadcrumb")
        yield DrillGrid(self.drill, self.crumbs)
        yield Footer()

    def on_mount(self) -> None:
        grid = self.query_one(DrillGrid)
        grid.set_source(self.con)
        grid.table.focus()


# -- the operator hierarchy: type → name and input shapes → kernel instances ----------------------


def instances(row: Row, rank: Optional[int] = None) -> Drill:
    """The kernels of one (type, name, shapes) group; of one rank when ``rank`` is given."""
    shapes = row.get("input_shapes") or ""
    title = literal(row["name"]) + (f" [{literal(shapes)}]" if shapes else "")
    return Drill(GridQuery(title, Q.KERNEL_INSTANCES, Q.INSTANCE_COLUMNS,
                           params=(row["type"], row["name"], shapes, rank), sort="dur_us",
                           filter_on=("input_shapes", "input_dtypes", "core")))


def names_of_type(row: Row) -> Drill:
    def child(r: Row) -> Drill:
        return instances(dict(r, type=row["type"]))

    return Drill(GridQuery(literal(row["type"]), Q.OPERATOR_NAMES, Q.NAME_COLUMNS, params=(row["type"],),
                           sort="total_us", filter_on=("name", "input_shapes")), child)


def operator_types() -> Drill:
    return Drill(GridQuery("Operators", Q.OPERATOR_TYPES, Q.TYPE_COLUMNS, sort="total_us",
                           filter_on=("type",)), names_of_type)


# -- a finding → the operators of its rank, stage and category (the analysis view kernel_stages) → their
# instances of that rank -------------------------------------------------------------------------------

# The finding's evidence names its top operators by (type, input shapes); keys join the two with
# the unit separator, which profile text does not contain. A finding without a stage spans them all.
FINDING_OPERATORS = """
SELECT coalesce(nullif(type, ''), 'N/A') AS type, name, coalesce(input_shapes, '') AS input_shapes,
       count(*) AS count, sum(dur_ns) / 1e3 AS total_us, avg(dur_ns) / 1e3 AS mean_us,
       max(dur_ns) / 1e3 AS max_us,
       sum(dur_ns) / nullif(sum(sum(dur_ns)) OVER (), 0) AS share
FROM kernel_stages
WHERE rank = ? AND stage IS NOT DISTINCT FROM coalesce(?, stage)
  AND list_contains(?, coalesce(type, '') || chr(31) || coalesce(input_shapes, ''))
GROUP BY 1, 2, 3
"""
FINDING_COLUMNS = (Column("type", "type"),) + Q.NAME_COLUMNS


def findings_drill(f: Row) -> Drill:
    title = f"{f['rule']} · rank {f['rank']} {f.get('stage') or ''}".rstrip()
    keys = [f"{op.get('type') or ''}\x1f{op.get('input_shapes') or ''}"
            for op in (f.get("evidence") or {}).get("top_operators") or []]
    return Drill(GridQuery(title, FINDING_OPERATORS, FINDING_COLUMNS, params=(f["rank"], f.get("stage"), keys),
                           sort="total_us", filter_on=("type", "name", "input_shapes")),
                 lambda row: instances(row, f["rank"]))
