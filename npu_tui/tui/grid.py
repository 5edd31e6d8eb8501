"""A table over a DuckDB query that is paged, never loaded whole.

The query (with the user's filter and sort) is materialised once, in a worker, into a temporary
table on a cursor of its own; rows are then read a page at a time by rowid, so a page-down over a
million kernels costs one small indexed read and a repaint of the visible lines only.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

from rich.segment import Segment
from textual import work
from textual.binding import Binding
from textual.containers import Vertical
from textual.app import ComposeResult
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input, Static
from textual.worker import get_current_worker
from rich.text import Text

from .cells import Column, fmt_cell, literal
from ..text import clip, inline_params, width as display_width

PAGE_ROWS = 256
CACHED_PAGES = 8
SAMPLE_ROWS = 200  # rows read at load time to size the columns
MAX_TEXT_WIDTH = 60
MIN_TEXT_WIDTH = 8
IDENTITY_WIDTH = 24  # the first text column of a grid keeps up to this many cells
GAP = 1

_names = itertools.count()
_cursor_lock = threading.Lock()


def cursor_of(con):
    """A new DuckDB connection to the same database; workers each take their own."""
    with _cursor_lock:
        return con.cursor()


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class GridQuery:
    """What a grid shows: an analysis view (or table), the rows of it (``where``: column = value,
    None matching NULL), its display columns, and how it may be sorted and filtered.

    The view and column names are the program's own; values from the profile or the user (``where``
    and the filter text) travel as parameters. The SQL is built here from those alone, so what a
    grid shows is always a named view the schema browser describes, and `v` opens it as it ran.
    """

    title: str
    view: str
    columns: Tuple[Column, ...]
    where: Tuple[Tuple[str, Any], ...] = ()
    sort: str = ""
    descending: bool = True
    # `/` matches every text column shown, and these columns of the view besides (ones not shown,
    # such as the operator names of a type).
    filter_also: Tuple[str, ...] = ()
    highlight: str = ""  # a boolean column of the view: rows to draw highlighted
    args: Tuple[Any, ...] = ()  # a view that takes arguments (a table macro): its arguments

    @property
    def filter_on(self) -> Tuple[str, ...]:
        return tuple(c.key for c in self.columns if c.kind in ("text", "list")) + self.filter_also

    def effective(self, filter_text: str = "") -> Tuple[str, List[Any]]:
        """The SQL and parameters for the current sort and filter."""
        tests, params = [], list(self.args)
        for column, value in self.where:
            tests.append(f"{_ident(column)} IS NULL" if value is None else f"{_ident(column)} = ?")
            params += [] if value is None else [value]
        filter_on = self.filter_on
        if filter_text and filter_on:
            pattern = "%" + filter_text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            tests.append("(" + " OR ".join(f"CAST({_ident(c)} AS VARCHAR) ILIKE ? ESCAPE '\\'"
                                           for c in filter_on) + ")")
            params += [pattern] * len(filter_on)
        sql = f"SELECT * FROM {_ident(self.view)}"
        if self.args:
            sql += f"({', '.join('?' for _ in self.args)})"
        if tests:
            sql += "\nWHERE " + "\n  AND ".join(tests)
        if self.sort:
            # Ties in the sort column go by the other columns: the same rows in the same order
            # on every run (a tie would otherwise come back in whatever order the threads give).
            rest = [_ident(c.key) for c in self.columns if c.key != self.sort]
            sql += f"\nORDER BY {_ident(self.sort)} {'DESC' if self.descending else 'ASC'} NULLS LAST" \
                + "".join(f", {c}" for c in rest)
        return sql, params

    def shown_sql(self, filter_text: str = "") -> str:
        """The effective query with its parameters written in, to open and edit in the console: one
        clause a line and a last empty one, where the console's cursor lands, so the editor shows
        the statement from its first column."""
        sql, params = self.effective(filter_text)
        return inline_params(sql, params) + "\n"


class PagedTable(ScrollView, can_focus=True):
    """Rows of a GridQuery, read from DuckDB a page at a time; a header line stays on top."""

    HELP_TITLE = "Tables"
    BINDINGS = [
        Binding("enter", "open", "Open"),
        Binding("s", "sort", "Sort"),
        Binding("e", "export", "Export"),
        Binding("v", "show_sql", "SQL"),
        Binding("y", "copy_value", "Copy value", show=False),
        Binding("Y", "copy_table", "Copy table", show=False),
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "move_to(0)", "First row", show=False),
        Binding("end", "move_to(-1)", "Last row", show=False),
        Binding("left", "column(-1)", "Column left", show=False),
        Binding("right", "column(1)", "Column right", show=False),
    ]

    COMPONENT_CLASSES = {
        "paged-table--header",
        "paged-table--header-column",
        "paged-table--cursor",
        "paged-table--highlight",
        "paged-table--dim",
    }

    class Loaded(Message):
        """Worker → widget: the query is materialised (or failed)."""

        def __init__(self, generation: int, cursor, table: str, total: int,
                     names: List[str], sample: List[tuple], error: str = "") -> None:
            super().__init__()
            self.generation, self.cursor, self.table, self.total = generation, cursor, table, total
            self.names, self.sample, self.error = names, sample, error

    class CacheDamaged(Message):
        """The query failed on a block of the database file that does not read back (a damaged
        cache file): not the query's fault, and not one a retry mends."""

    class Ready(Message):
        """The table shows a new result; ``total`` rows."""

        def __init__(self, table: "PagedTable") -> None:
            super().__init__()
            self.table = table

        @property
        def control(self) -> "PagedTable":
            return self.table

    class Activated(Message):
        """Enter on a row: ``row`` maps every column of the query (shown or not) to its value."""

        def __init__(self, table: "PagedTable", row: Dict[str, Any]) -> None:
            super().__init__()
            self.table, self.row = table, row

        @property
        def control(self) -> "PagedTable":
            return self.table

    class ShowSql(Message):
        """Open this SQL in the console."""

        def __init__(self, sql: str) -> None:
            super().__init__()
            self.sql = sql

    class FilterRequested(Message):
        pass

    class ExportRequested(Message):
        """`e`: ask where to write the table, then call ``table.export_to(path)``."""

        def __init__(self, table: "PagedTable") -> None:
            super().__init__()
            self.table = table

        @property
        def control(self) -> "PagedTable":
            return self.table

    def __init__(self, query: GridQuery, **kwargs) -> None:
        super().__init__(**kwargs)
        self.query = query
        self.filter_text = ""
        self.total: Optional[int] = None
        self.error = ""
        self.cursor_row = 0
        self.cursor_col = 0
        self._source = None
        self._stale = False  # the query changed while the grid was not shown: read it when it is
        self._generation = 0
        self._cursor = None
        self._table = ""
        self._names: List[str] = []
        self._pages: Dict[int, List[tuple]] = {}
        self._widths: List[int] = []
        self._sample: List[tuple] = []
        self.page_reads = 0  # pages read from DuckDB since the last load (a test checks paging)

    # -- data ---------------------------------------------------------------------------------

    def set_source(self, con) -> None:
        """The DuckDB connection to read from (the grid takes cursors of its own)."""
        self._source = con
        self._from_top()

    def set_query(self, query: GridQuery) -> None:
        self.query = query
        self._from_top()

    def set_filter(self, text: str) -> None:
        self.filter_text = text
        self._from_top()

    def _from_top(self) -> None:
        """Other rows, or the same in another order: the old place means nothing in them."""
        self.cursor_row = 0
        self.reload()

    def reload(self) -> None:
        """Read the query again (the data under it changed); the cursor and scroll stay where they
        are, as far as the new rows reach."""
        if self._source is None:
            return
        self._generation += 1
        self.total = None
        self.error = ""
        self._stale = True
        self.refresh()
        # A grid in a pane not shown reads its query when it is: at load, the Overview's report
        # and the shown pane's grid would otherwise share the cores with every pane's queries.
        if self.is_on_screen:
            self._read()

    def on_show(self) -> None:
        if self._stale:
            self._read()

    def _read(self) -> None:
        self._stale = False
        sql, params = self.query.effective(self.filter_text)
        self._materialise(self._generation, sql, params)

    @work(thread=True, exclusive=True, group="grid")
    def _materialise(self, generation: int, sql: str, params: List[Any]) -> None:
        import duckdb

        cur = cursor_of(self._source)
        table = f"_grid_{next(_names)}"
        try:
            cur.execute(f"CREATE TEMP TABLE {table} AS {sql}", params)
            total = cur.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            res = cur.execute(f"SELECT * FROM {table} WHERE rowid < ?", [SAMPLE_ROWS])
            names = [d[0] for d in res.description]
            sample = res.fetchall()
        except duckdb.Error as e:
            cur.close()
            self.post_message(self.Loaded(generation, None, "", 0, [], [], str(e).splitlines()[0]))
            return
        if get_current_worker().is_cancelled:
            cur.close()
            return
        self.post_message(self.Loaded(generation, cur, table, total, names, sample))

    def on_paged_table_loaded(self, msg: "PagedTable.Loaded") -> None:
        msg.stop()
        if msg.generation != self._generation:
            if msg.cursor is not None:
                msg.cursor.close()
            return
        if self._cursor is not None:
            self._cursor.close()
        self._cursor, self._table, self._names = msg.cursor, msg.table, msg.names
        self.error = msg.error
        if msg.error:
            from ..query.errors import is_damaged  # here, not above: the app's first frame imports no database

            if is_damaged(msg.error):
                self.post_message(self.CacheDamaged())
        self.total = msg.total
        self._sample = msg.sample
        self._pages = {0: msg.sample[:PAGE_ROWS]} if msg.sample and PAGE_ROWS <= SAMPLE_ROWS else {}
        self.page_reads = 0
        self.cursor_row = max(0, min(self.cursor_row, self.total - 1))
        self._layout_columns()
        self.virtual_size = Size(self.size.width, self.total + 1)
        top = max(0, min(int(self.scroll_offset.y), self.total - self.visible_rows,
                         self.cursor_row), self.cursor_row - self.visible_rows + 1)
        self.scroll_to(y=top, animate=False, immediate=True)
        self.refresh()
        self.post_message(self.Ready(self))

    def row(self, index: int) -> tuple:
        page = index // PAGE_ROWS
        rows = self._pages.get(page)
        if rows is None:
            rows = self._cursor.execute(
                f"SELECT * FROM {self._table} WHERE rowid >= ? AND rowid < ? ORDER BY rowid",
                [page * PAGE_ROWS, (page + 1) * PAGE_ROWS],
            ).fetchall()
            self.page_reads += 1
            if len(self._pages) >= CACHED_PAGES:
                self._pages.pop(next(iter(self._pages)))
            self._pages[page] = rows
        return rows[index - page * PAGE_ROWS]

    def row_dict(self, index: int) -> Dict[str, Any]:
        return dict(zip(self._names, self.row(index)))

    def current_row(self) -> Optional[Dict[str, Any]]:
        if not self.total:
            return None
        return self.row_dict(self.cursor_row)

    def cell_text(self, index: int, column: Column) -> str:
        return fmt_cell(self.row_dict(index).get(column.key), column.kind)

    # -- layout and painting ------------------------------------------------------------------

    def _layout_columns(self) -> None:
        cols = self.query.columns
        idx = {n: i for i, n in enumerate(self._names)}
        widths = []
        for c in cols:
            vals = [fmt_cell(r[idx[c.key]], c.kind) for r in self._sample] if c.key in idx else []
            cap = MAX_TEXT_WIDTH if not c.numeric else 16
            widths.append(min(cap, max([len(c.label) + 1] + [display_width(v) for v in vals])))
        avail = max(1, self.size.width - 1) - GAP * (len(cols) - 1)
        over = sum(widths) - avail
        text_cols = [i for i, c in enumerate(cols) if not c.numeric]
        # Shrink text columns, the rightmost first, down to MIN_TEXT_WIDTH; numbers keep their width
        # so they stay readable. The column naming the row (an operator, a rank's format: the one
        # marked identity, else the first text column) keeps up to IDENTITY_WIDTH, and what is still
        # too wide runs off the right edge.
        floor = {i: MIN_TEXT_WIDTH for i in text_cols}
        named = next((i for i in text_cols if cols[i].identity), text_cols[0] if text_cols else None)
        if named is not None:
            floor[named] = max(MIN_TEXT_WIDTH, min(widths[named], IDENTITY_WIDTH))
        while over > 0:
            i = next((j for j in reversed(text_cols) if widths[j] > floor[j]), None)
            if i is None:
                break
            take = min(over, widths[i] - floor[i])
            widths[i] -= take
            over -= take
        self._widths = widths

    def on_resize(self) -> None:
        if self.total is not None:
            self._layout_columns()
            self.virtual_size = Size(self.size.width, self.total + 1)

    def _cells(self, values: Sequence[str], columns: Sequence[Column]) -> str:
        out = []
        for text, cells, column in zip(values, self._widths, columns):
            right = column.numeric
            text = clip(text, cells, middle=column.kind != "list")
            pad = " " * (cells - display_width(text))
            out.append(pad + text if right else text + pad)
        return (" " * GAP).join(out)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        if y == 0:
            return self._header(width)
        if self.error:
            return Strip([Segment(literal(self.error)[:width] if y == 1 else "", base)]).extend_cell_length(width, base)
        if self.total is None:
            return Strip([Segment("loading…" if y == 1 else "", base)]).extend_cell_length(width, base)
        index = int(self.scroll_offset.y) + y - 1
        if index >= self.total:
            return Strip([Segment("(no rows)" if index == 0 and y == 1 else "", base)]).extend_cell_length(width, base)
        row = self.row_dict(index)
        text = self._cells([fmt_cell(row.get(c.key), c.kind) for c in self.query.columns], self.query.columns)
        style = base
        if self.query.highlight and row.get(self.query.highlight):
            style = base + self.get_component_rich_style("paged-table--highlight")
        if index == self.cursor_row and self.has_focus:
            style = base + self.get_component_rich_style("paged-table--cursor")
        elif index == self.cursor_row:
            style = style + self.get_component_rich_style("paged-table--dim")
        return Strip([Segment(text, style)]).crop_extend(0, width, style)

    def _header(self, width: int) -> Strip:
        base = self.rich_style + self.get_component_rich_style("paged-table--header")
        segments = []
        for i, (c, w) in enumerate(zip(self.query.columns, self._widths or [len(c.label) + 2 for c in self.query.columns])):
            mark = ""
            if c.key == self.query.sort:
                mark = "▼" if self.query.descending else "▲"
            label = (c.label + mark)[:w]
            label = label.rjust(w) if c.numeric else label.ljust(w)
            style = base + self.get_component_rich_style("paged-table--header-column") if i == self.cursor_col else base
            if i:
                segments.append(Segment(" " * GAP, base))
            segments.append(Segment(label, style))
        return Strip(segments).crop_extend(0, width, base)

    def _refresh_row(self, index: int) -> None:
        y = index - int(self.scroll_offset.y) + 1
        if 1 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def on_focus(self) -> None:
        self._refresh_row(self.cursor_row)

    def on_blur(self) -> None:
        self._refresh_row(self.cursor_row)

    # -- actions ------------------------------------------------------------------------------

    @property
    def visible_rows(self) -> int:
        return max(1, self.size.height - 1)

    def move_cursor(self, index: int) -> None:
        if not self.total:
            return
        old, self.cursor_row = self.cursor_row, max(0, min(index, self.total - 1))
        top = int(self.scroll_offset.y)
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True)
        elif self.cursor_row >= top + self.visible_rows:
            self.scroll_to(y=self.cursor_row - self.visible_rows + 1, animate=False, immediate=True)
        else:
            # Only the two lines that changed are repainted.
            self._refresh_row(old)
            self._refresh_row(self.cursor_row)

    def action_move(self, delta: int) -> None:
        self.move_cursor(self.cursor_row + delta)

    def action_move_to(self, index: int) -> None:
        self.move_cursor(index if index >= 0 else (self.total or 1) - 1)

    def action_page(self, direction: int) -> None:
        if not self.total:
            return
        step = self.visible_rows
        top = int(self.scroll_offset.y)
        new_top = max(0, min(top + direction * step, self.total - step))
        self.cursor_row = max(0, min(self.cursor_row + direction * step, self.total - 1))
        if new_top != top:
            self.scroll_to(y=new_top, animate=False, immediate=True)
        else:
            self.refresh()

    def action_column(self, delta: int) -> None:
        self.cursor_col = max(0, min(self.cursor_col + delta, len(self.query.columns) - 1))
        self.refresh(Region(0, 0, self.size.width, 1))

    def action_open(self) -> None:
        row = self.current_row()
        if row is not None:
            self.post_message(self.Activated(self, row))

    def action_filter(self) -> None:
        self.post_message(self.FilterRequested())

    def sort_by(self, key: str, descending: Optional[bool] = None) -> None:
        if descending is None:
            descending = not self.query.descending if key == self.query.sort else True
        self.set_query(replace(self.query, sort=key, descending=descending))

    def action_sort(self) -> None:
        """Sort by the column under the column cursor; again on the same column flips the order."""
        self.sort_by(self.query.columns[self.cursor_col].key)

    def action_show_sql(self) -> None:
        self.post_message(self.ShowSql(self.query.shown_sql(self.filter_text)))

    def action_export(self) -> None:
        self.post_message(self.ExportRequested(self))

    @work(thread=True, group="export")
    def export_to(self, path: str) -> None:
        """Write every row of the current query (filter and sort included) to ``path``."""
        from .export import export_rows

        sql, params = self.query.effective(self.filter_text)
        cur = cursor_of(self._source)
        try:
            written, where = export_rows(cur, sql, params, self.query.columns, path)
        except (OSError, ValueError) as e:
            self.app.call_from_thread(self.notify, literal(f"Export failed: {e}"), severity="error",
                                      markup=False)
            return
        finally:
            cur.close()
        self.app.call_from_thread(self.notify, f"Exported {written:,} row{'' if written == 1 else 's'} to {literal(where)}",
                                  markup=False)

    def action_copy_value(self) -> None:
        row = self.current_row()
        if row is None:
            return
        column = self.query.columns[self.cursor_col]
        value = literal(row.get(column.key))
        self.app.copy_to_clipboard(value)
        self.notify(f"Copied {column.label}: {value[:60]}", markup=False)

    def action_copy_table(self) -> None:
        from .export import COPY_ROW_LIMIT, tsv

        if not self.total:
            return
        n = min(self.total, COPY_ROW_LIMIT)
        rows = [self.row_dict(i) for i in range(n)]
        self.app.copy_to_clipboard(tsv(self.query.columns, rows))
        more = f" (first {n:,} of {self.total:,})" if n < self.total else ""
        self.notify(f"Copied {n:,} rows{more}")


class GridView(Vertical):
    """A PagedTable with its status line and the `/` filter box."""

    HELP_TITLE = "Tables"
    # Escape leaves the filter box first; on the panes (not in a drill level, where escape goes
    # back a level) it then clears the filter. The keys that move the focus between the table and
    # the box are priority bindings, run as the app reads them: a key read in the same burst then
    # goes where they put the focus (as Textual hands a key on, it is already queued for the old).
    BINDINGS = [Binding("slash", "filter", "Filter", priority=True),
                Binding("escape", "close_filter", "Close filter", show=False, priority=True),
                Binding("enter", "close_filter", "Keep the filter", show=False, priority=True),
                Binding("escape", "clear_filter", "Clear filter")]

    def __init__(self, query: GridQuery, **kwargs) -> None:
        super().__init__(**kwargs)
        self.query = query

    def compose(self) -> ComposeResult:
        yield Static(classes="grid-status")
        yield Input(placeholder="filter: matches every text column · enter keeps it", classes="grid-filter")
        yield PagedTable(self.query)

    @property
    def table(self) -> PagedTable:
        return self.query_one(PagedTable)

    def on_mount(self) -> None:
        box = self.query_one(Input)
        box.display = box.can_focus = False
        self._status()

    def set_source(self, con) -> None:
        self.table.set_source(con)

    def _status(self) -> None:
        t = self.table
        parts = [t.query.title]
        if t.error:
            parts.append("query failed")
        elif t.total is None:
            parts.append("loading…")
        else:
            parts.append(f"{t.total:,} row{'' if t.total == 1 else 's'}")
        if t.query.sort:
            label = next((c.label for c in t.query.columns if c.key == t.query.sort), t.query.sort)
            parts.append(f"sorted by {label} {'▼' if t.query.descending else '▲'}")
        if t.filter_text:
            parts.append(f"filter “{literal(t.filter_text)}”")
        self.query_one(".grid-status", Static).update(Text("  ·  ".join(parts)))

    def on_paged_table_ready(self, msg: PagedTable.Ready) -> None:
        self._status()

    def on_paged_table_filter_requested(self, msg: PagedTable.FilterRequested) -> None:
        msg.stop()
        self.action_filter()

    def action_filter(self) -> None:
        if not self.table.query.filter_on:
            self.notify("This table has no text column to filter on.", severity="warning")
            return
        box = self.query_one(Input)
        box.display = box.can_focus = True
        box.value = self.table.filter_text
        self.screen.set_focus(box)  # at once; focus() would wait for the queue

    def on_input_changed(self, msg: Input.Changed) -> None:
        msg.stop()
        self.table.set_filter(msg.value)
        self._status()

    def check_action(self, action: str, parameters) -> Optional[bool]:
        # The screen's focus, set at once, not has_focus, which follows when the Focus event is read.
        if action == "filter":
            return self.screen.focused is self.table
        if action == "close_filter":
            return self.screen.focused is self.query_one(Input)
        if action == "clear_filter":
            return bool(self.table.filter_text) and self.screen is self.app.screen_stack[0]
        return True

    def action_close_filter(self) -> None:
        self._hide_filter()

    def action_clear_filter(self) -> None:
        self.query_one(Input).value = ""  # its Input.Changed clears the table's filter
        self._hide_filter()

    def _hide_filter(self) -> None:
        box = self.query_one(Input)
        # A closed filter stays in sight while it filters, but takes no focus.
        box.display = bool(self.table.filter_text)
        box.can_focus = False
        self.screen.set_focus(self.table)
