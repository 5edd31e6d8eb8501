"""The SQL console: editor, schema browser and a paged result grid over the loaded profile.

Statements run in thread workers on the console's own QueryEngine (one cursor, so temp tables
persist); workers post messages and never touch widgets. `escape` interrupts a running statement."""

from __future__ import annotations

import time
from pathlib import Path
from typing import List, Optional

import duckdb
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static

from ....query import (Cancelled, Catalog, History, QueryEngine, QueryError, Result, SavedQueries,
                      Statement, complete, split_statements, statement_at)
from ....query.statements import line_col
from ...cells import literal
from .dialogs import ExportScreen, HistoryScreen, QueriesScreen, SaveQueryScreen
from .editor import CompletionList, SqlEditor
from .results import PAGE_SIZE, ResultGrid
from .schema_browser import SchemaBrowser

# Shown while the editor is empty, so what a person types starts a clean statement.
HINT = "ctrl+r runs the statement under the cursor, f5 runs them all; f3 has starter queries"


class SqlConsole(Widget):
    """The console on `con` (a DuckDB connection or cursor holding the loaded profile)."""

    DEFAULT_CSS = (Path(__file__).parent / "console.tcss").read_text(encoding="utf-8")
    SCOPED_CSS = False  # the dialogs it opens are styled from the same file
    HELP_TITLE = "SQL console"
    # The editor's own keys (Textual's TextArea), which no binding list of ours declares.
    HELP_EXTRA = (("f7", "Select all"), ("ctrl+a / ctrl+e", "Line start / end"),
                  ("ctrl+k", "Delete to the end of the line"), ("ctrl+z / ctrl+y", "Undo / redo"),
                  ("tab", "Leave the editor (or take a completion while the list is open)"))
    BINDINGS = [
        Binding("ctrl+r", "run_statement", "Run"),
        Binding("f5", "run_all", "Run all"),
        Binding("escape", "cancel", "Cancel", show=True),
        # Escape leaves the editor when nothing runs, so digits and the other app keys work again:
        # as the app reads it (priority), so a digit read in the same burst is not typed in.
        Binding("escape", "leave_editor", "Leave editor", priority=True),
        # Terminals without the kitty keyboard protocol (tmux, xterm) send ctrl+space as NUL: ctrl+@.
        Binding("ctrl+space,ctrl+@", "complete", "Complete"),
        Binding("f2", "history", "History"),
        Binding("f3", "queries", "Queries"),
        Binding("ctrl+s", "save_query", "Save query"),
        Binding("ctrl+o", "export", "Export"),
        Binding("f4", "toggle_schema", "Schema"),
    ]

    running = reactive(False)

    class Finished(Message):
        """The statements ran in order until `error` (None when all ran); `rows` is the first page
        of the last result that has columns."""

        def __init__(self, sql: str, results: List[Result], rows: List[tuple],
                     catalog: Optional[Catalog], error: Optional[QueryError]) -> None:
            super().__init__()
            self.sql, self.results, self.rows = sql, results, rows
            self.catalog, self.error = catalog, error

    class PageLoaded(Message):
        def __init__(self, start: int, rows: List[tuple]) -> None:
            super().__init__()
            self.start, self.rows = start, rows

    class CatalogRead(Message):
        def __init__(self, catalog: Catalog) -> None:
            super().__init__()
            self.catalog = catalog

    class Exported(Message):
        def __init__(self, path: Optional[Path], error: Optional[str]) -> None:
            super().__init__()
            self.path, self.error = path, error

    def __init__(self, con: duckdb.DuckDBPyConnection, **kwargs) -> None:
        super().__init__(**kwargs)
        self.engine = QueryEngine(con)
        self.history = History()
        self.saved = SavedQueries()
        self.catalog: Catalog = self.engine.catalog()
        self.result: Optional[Result] = None
        self._started = 0.0

    def compose(self) -> ComposeResult:
        with Horizontal(id="sql-body"):
            yield SchemaBrowser(id="sql-schema")
            with Vertical(id="sql-main"):
                yield SqlEditor(placeholder=HINT, id="sql-editor")
                yield Static(id="sql-error")
                yield Static(Text("ready"), id="sql-status")
                yield ResultGrid(id="sql-grid")
        yield CompletionList(id="sql-complete")

    @property
    def editor(self) -> SqlEditor:
        return self.query_one(SqlEditor)

    @property
    def grid(self) -> ResultGrid:
        return self.query_one(ResultGrid)

    def on_mount(self) -> None:
        self.query_one(SchemaBrowser).show(self.catalog)
        self.query_one("#sql-error").display = False
        self.query_one(CompletionList).display = False
        for kept in (self.history, self.saved):
            if kept.set_aside_to is not None:
                self.notify(f"unreadable file set aside as {literal(kept.set_aside_to)}",
                            severity="warning", markup=False)
        if self.history.unsaved:
            self.notify(f"history and saved queries kept for this session only: {literal(self.history.unsaved)}",
                        severity="warning", markup=False)
        self.set_interval(0.2, self._tick)

    # -- the interface the app uses ------------------------------------------------------------

    def load_sql(self, sql: str) -> None:
        """Put `sql` in the editor (undoable) and focus it, ready to edit and run."""
        editor = self.editor
        editor.replace(sql, (0, 0), editor.document.end)
        editor.move_cursor(editor.document.end)
        editor.focus()

    @work(thread=True, exclusive=True, group="sql-catalog")
    def refresh_schema(self) -> None:
        """Read the tables and views again (the app calls this after (re)installing the analysis
        views); on a worker, since a running statement holds the engine."""
        self.post_message(self.CatalogRead(self.engine.catalog()))

    def on_sql_console_catalog_read(self, msg: CatalogRead) -> None:
        self._new_catalog(msg.catalog)

    # -- running -------------------------------------------------------------------------------

    def check_action(self, action: str, parameters) -> Optional[bool]:
        if action == "cancel":
            return self.running
        if action == "leave_editor":
            # The screen's focus, set at once; has_focus follows when the Focus event is read.
            return not self.running and self.screen.focused is self.editor and not self.editor.completing
        if action in ("run_statement", "run_all", "export"):
            return not self.running
        return True

    def watch_running(self, running: bool) -> None:
        self.set_class(running, "-running")
        self.refresh_bindings()

    def action_run_statement(self) -> None:
        text = self.editor.text
        stmt = statement_at(text, self.editor.cursor_offset)
        if stmt is not None:
            self._start(text, [stmt])

    def action_run_all(self) -> None:
        text = self.editor.text
        statements = split_statements(text)
        if statements:
            self._start(text, statements)

    def _start(self, text: str, statements) -> None:
        if self.running:  # the palette can ask while a statement runs; one at a time
            return
        self._hide_error()
        self._close_completion()
        self.running = True
        self._started = time.perf_counter()
        self._tick()
        self._execute(text, statements)

    @work(thread=True, exclusive=True, group="sql")
    def _execute(self, text: str, statements) -> None:
        done: List[Result] = []
        error = None
        try:
            for stmt in statements:
                done.append(self.engine.run(text, stmt))
        except QueryError as e:
            error = e
        # The engine keeps only the latest result, so a page is read only if it is the last run.
        rows = self.engine.page(0, PAGE_SIZE) if done and done[-1].columns else []
        catalog = self.engine.catalog() if any(r.kind != "SELECT" for r in done) else None
        self.post_message(self.Finished(text, done, rows, catalog, error))

    def action_cancel(self) -> None:
        self.engine.cancel()

    def action_leave_editor(self) -> None:
        self.screen.set_focus(self.grid)  # at once; focus() would wait for the queue

    def _tick(self) -> None:
        if self.running:
            self._status(f"running… {time.perf_counter() - self._started:.1f} s  (escape cancels)")

    def on_sql_console_finished(self, msg: Finished) -> None:
        self.running = False
        for r in msg.results:
            self.history.add(r.statement.text, True, r.row_count, r.elapsed_s)
        if msg.catalog is not None:
            self._new_catalog(msg.catalog)
        if msg.results and msg.results[-1].columns:
            last = msg.results[-1]
            self.result = last
            self.grid.show(last.columns, msg.rows, 0, last.row_count)
        if msg.error is None:
            self._show_status()
        elif isinstance(msg.error, Cancelled):
            self._status("cancelled", "warning")
        else:
            self._failed(msg.sql, split_statements(msg.sql)[len(msg.results)], msg.error)

    def _failed(self, sql: str, failed: Statement, error: QueryError) -> None:
        """Say what went wrong under the editor and put the cursor where DuckDB stopped."""
        self.history.add(failed.text, False)
        where = failed.start if error.offset is None else error.offset
        self.editor.move_cursor(line_col(sql, where))
        self._show_error(error)
        self._status("failed", "error")

    def _new_catalog(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.query_one(SchemaBrowser).show(catalog)

    # -- paging, copy, export ------------------------------------------------------------------

    def on_result_grid_page_requested(self, msg: ResultGrid.PageRequested) -> None:
        if not self.running:
            self._page(msg.start)

    @work(thread=True, exclusive=True, group="sql-page")
    def _page(self, start: int) -> None:
        self.post_message(self.PageLoaded(start, self.engine.page(start, PAGE_SIZE)))

    def on_sql_console_page_loaded(self, msg: PageLoaded) -> None:
        self.grid.show_page(msg.rows, msg.start)
        self._show_status()

    def on_result_grid_copy_requested(self, msg: ResultGrid.CopyRequested) -> None:
        self.action_copy()

    def action_copy(self) -> None:
        """The page on screen as tab-separated text, to the clipboard (OSC 52 works over SSH)."""
        if self.result is None:
            return
        lines = ["\t".join(self.result.columns)]
        lines += ["\t".join("" if v is None else str(v) for v in row) for row in self.grid.rows_shown]
        self.app.copy_to_clipboard("\n".join(lines) + "\n")
        self.notify(f"copied {len(lines) - 1} rows")

    def action_export(self) -> None:
        if self.result is None or not self.result.exportable:
            self.notify("nothing to export: run a query (SELECT ...) first", severity="warning")
            return

        def chosen(answer) -> None:
            if answer:
                self._export(Path(answer[0]), answer[1])

        session = getattr(self.app, "session", None)
        self.app.push_screen(ExportScreen(self.result.row_count, session.folders if session else []), chosen)

    @work(thread=True, exclusive=True, group="sql-export")
    def _export(self, path: Path, fmt: str) -> None:
        try:
            self.post_message(self.Exported(self.engine.export(path, fmt), None))
        except (QueryError, OSError) as e:
            self.post_message(self.Exported(None, str(e)))

    def on_sql_console_exported(self, msg: Exported) -> None:
        if msg.error:
            self.notify(literal(msg.error), severity="error", markup=False)
        else:
            self.notify(f"wrote {literal(msg.path)}", markup=False)

    # -- history, saved queries, schema --------------------------------------------------------

    def _load_answer(self, sql: Optional[str]) -> None:
        if sql:
            self.load_sql(sql)

    def action_history(self) -> None:
        self.app.push_screen(HistoryScreen(self.history), self._load_answer)

    def action_queries(self) -> None:
        self.app.push_screen(QueriesScreen(self.saved), self._load_answer)

    def action_save_query(self) -> None:
        text = self.editor.text.strip()
        if not text:
            return

        def named(name: Optional[str]) -> None:
            if name:
                try:
                    self.saved.save(name, text)
                except OSError as e:
                    self.notify(f"kept as {literal(name)} for this session; not written: {e.strerror or e}",
                                severity="warning", markup=False)
                    return
                self.notify(f"saved as {literal(name)}", markup=False)

        self.app.push_screen(SaveQueryScreen(), named)

    def action_toggle_schema(self) -> None:
        browser = self.query_one(SchemaBrowser)
        browser.display = not browser.display

    def on_schema_browser_insert(self, msg: SchemaBrowser.Insert) -> None:
        self.editor.insert(msg.text)
        self.editor.focus()

    # -- completion ----------------------------------------------------------------------------

    def action_complete(self) -> None:
        editor = self.editor
        found = complete(editor.text, editor.cursor_offset, self.catalog)
        if found is None or not found.candidates:
            self._close_completion()
            return
        if len(found.candidates) == 1:
            self._accept(found.candidates[0].text, found.start)
            return
        self._completion = found
        popup = self.query_one(CompletionList)
        popup.show(found)
        x, y = editor.cursor_screen_offset
        popup.styles.offset = (max(0, x - self.region.x - len(found.prefix)), y - self.region.y + 1)
        editor.completing = True

    def on_sql_editor_completion_key(self, msg: SqlEditor.CompletionKey) -> None:
        popup = self.query_one(CompletionList)
        if msg.key == "up":
            popup.action_cursor_up()
        elif msg.key == "down":
            popup.action_cursor_down()
        elif msg.key == "accept":
            self._accept(popup.chosen(), self._completion.start)
        else:
            self._close_completion()

    def on_option_list_option_selected(self, event) -> None:
        if event.option_list.id == "sql-complete":
            self._accept(event.option.id, self._completion.start)

    def _accept(self, text: str, start: int) -> None:
        editor = self.editor
        editor.replace(text, line_col(editor.text, start), editor.cursor_location)
        self._close_completion()
        editor.focus()

    def _close_completion(self) -> None:
        self.query_one(CompletionList).display = False
        self.editor.completing = False

    # -- status --------------------------------------------------------------------------------

    def _status(self, text: str, severity: str = "") -> None:
        status = self.query_one("#sql-status", Static)
        status.set_classes(f"-{severity}" if severity else "")
        status.update(Text(text))

    def _show_status(self) -> None:
        r = self.result
        if r is None:
            self._status("done")
            return
        shown = len(self.grid.rows_shown)
        span = f"rows {self.grid.start + 1:,}–{self.grid.start + shown:,} of {r.row_count:,}" \
            if shown else f"{r.row_count:,} rows"
        more = "  ([ ] pages)" if r.row_count > PAGE_SIZE else ""
        self._status(f"{r.kind}  {span}  {r.elapsed_s * 1000:.1f} ms{more}")

    def _show_error(self, error: QueryError) -> None:
        box = self.query_one("#sql-error", Static)
        box.update(Text(literal(error)))
        box.display = True

    def _hide_error(self) -> None:
        self.query_one("#sql-error").display = False
