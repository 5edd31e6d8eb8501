"""The SQL console in a tiny host app, driven by key presses."""

import duckdb
import pytest
from textual.app import App, ComposeResult
from textual.widgets import Footer, Input

from npu_tui.profile import connect
from npu_tui.tui.panes.console import SqlConsole, SqlConsoleCommands
from npu_tui.tui.panes.console.dialogs import ExportScreen, HistoryScreen
from npu_tui.tui.panes.console.editor import CompletionList
from tui_support import async_test, settle

ROWS = [(0, "mm_1", "MatMulV3", 0, 40), (0, "add_1", "Add", 40, 10), (1, "mm_1", "MatMulV3", 0, 50)]


@pytest.fixture
def con():
    c = connect()
    c.execute("SET threads = 1")  # the slow query must not starve the UI on a small test machine
    c.executemany("INSERT INTO kernels (rank, name, type, start_ns, dur_ns) VALUES (?, ?, ?, ?, ?)",
                  ROWS)
    return c


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("NPU_TUI_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


class Host(App):
    COMMANDS = App.COMMANDS | {SqlConsoleCommands}

    def __init__(self, con):
        super().__init__()
        self.con = con

    def compose(self) -> ComposeResult:
        yield SqlConsole(self.con)
        yield Footer()


def cells(console):
    grid = console.grid
    return [tuple(str(c) for c in grid.get_row_at(i)) for i in range(grid.row_count)]


@async_test
async def test_type_and_run_a_query(con):
    async with Host(con).run_test(size=(100, 30)) as pilot:
        console = pilot.app.query_one(SqlConsole)
        console.editor.focus()
        # The hint is the empty editor's placeholder: what is typed is the whole statement.
        await pilot.press(*"FROM kernels WHERE dur_ns > 20")
        assert console.editor.text == "FROM kernels WHERE dur_ns > 20"
        await pilot.press("ctrl+r")
        await settle(pilot.app, pilot)
        assert [row[:5] for row in cells(console)] == [("0", "NULL", "NULL", "mm_1", "MatMulV3"),
                                                       ("1", "NULL", "NULL", "mm_1", "MatMulV3")]
        assert str(console.query_one("#sql-status").render()).startswith("SELECT  rows 1–2 of 2")


@async_test
async def test_run_statement_under_cursor_and_all(con):
    async with Host(con).run_test(size=(100, 30)) as pilot:
        console = pilot.app.query_one(SqlConsole)
        console.load_sql("SELECT 1 AS one;\nSELECT count(*) AS n FROM kernels;")
        console.editor.move_cursor((0, 3))
        await pilot.press("ctrl+r")
        await settle(pilot.app, pilot)
        assert cells(console) == [("1",)]
        await pilot.press("f5")
        await settle(pilot.app, pilot)
        assert cells(console) == [("3",)]


@async_test
async def test_syntax_error_shows_message_and_keeps_text(con):
    async with Host(con).run_test(size=(100, 30)) as pilot:
        console = pilot.app.query_one(SqlConsole)
        text = "SELECT 1;\nSELECT name\n  FROM kernels WHERE WHERE rank = 0"
        console.load_sql(text)
        await pilot.press("f5")
        await settle(pilot.app, pilot)
        error = console.query_one("#sql-error")
        assert error.display and "syntax error" in str(error.render())
        assert "line 3" in str(error.render())
        assert console.editor.text == text
        # The cursor sits on the second WHERE, where DuckDB stopped.
        assert console.editor.cursor_location == (2, 21)
        # The statements before the failure ran.
        assert cells(console) == [("1",)]


@async_test
async def test_escape_cancels_a_slow_query_and_the_ui_keeps_working(con):
    async with Host(con).run_test(size=(100, 30)) as pilot:
        console = pilot.app.query_one(SqlConsole)
        console.load_sql("SELECT count(*) FROM range(1000000000000) a")
        # Started directly: while DuckDB works, every Pilot key press waits for the process to
        # go idle (up to a second), which would only slow the test down.
        console.action_run_statement()
        await pilot.pause(0.3)
        first = str(console.query_one("#sql-status").render())
        await pilot.pause(0.5)
        second = str(console.query_one("#sql-status").render())
        # The event loop goes on while the query runs: the elapsed time keeps counting.
        assert console.running and first.startswith("running") and first != second
        await pilot.press("escape")
        await settle(pilot.app, pilot)
        assert not console.running
        assert str(console.query_one("#sql-status").render()) == "cancelled"
        assert console.editor.text == "SELECT count(*) FROM range(1000000000000) a"


@async_test
async def test_autocomplete_offers_a_column(con):
    async with Host(con).run_test(size=(100, 30)) as pilot:
        console = pilot.app.query_one(SqlConsole)
        console.load_sql("SELECT dur_")
        await pilot.press("tab")  # tab alone moves the focus, as help says; it completes nothing
        assert console.editor.text == "SELECT dur_" and not console.editor.has_focus
        console.editor.focus()
        await pilot.press("ctrl+space")  # one candidate: completed in place
        assert console.editor.text == "SELECT dur_ns"
        console.load_sql("SELECT k.st FROM kernels k")
        console.editor.move_cursor((0, 11))
        await pilot.press("ctrl+space")
        popup = console.query_one(CompletionList)
        offered = [popup.get_option_at_index(i).id for i in range(popup.option_count)]
        assert popup.display and offered == ["step", "start_ns", "stream_id"]
        await pilot.press("down", "tab")  # while the list is open, tab takes the candidate too
        assert console.editor.text == "SELECT k.start_ns FROM kernels k" and not popup.display


@async_test
async def test_escape_leaves_the_editor_when_nothing_runs(con):
    async with Host(con).run_test(size=(100, 30)) as pilot:
        console = pilot.app.query_one(SqlConsole)
        console.editor.focus()
        await pilot.pause()
        keys = {b.binding.action for b in pilot.app.active_bindings.values()}
        assert "leave_editor" in keys  # the footer says how out
        await pilot.press("escape")
        assert not console.editor.has_focus and console.grid.has_focus


@async_test
async def test_history_survives_a_restart(con, state):
    async with Host(con).run_test(size=(100, 30)) as pilot:
        console = pilot.app.query_one(SqlConsole)
        console.load_sql("SELECT max(dur_ns) FROM kernels")
        await pilot.press("ctrl+r")
        await settle(pilot.app, pilot)
    assert (state / "sql_history.jsonl").exists()
    async with Host(con).run_test(size=(100, 30)) as pilot:
        console = pilot.app.query_one(SqlConsole)
        console.load_sql("")
        await pilot.press("f2")
        await pilot.pause()
        assert isinstance(pilot.app.screen, HistoryScreen)
        await pilot.press(*"max(", "enter")
        await pilot.pause()
        assert console.editor.text == "SELECT max(dur_ns) FROM kernels"


@async_test
async def test_export_writes_a_file_that_reads_back_equal(con, tmp_path):
    async with Host(con).run_test(size=(100, 30)) as pilot:
        console = pilot.app.query_one(SqlConsole)
        console.load_sql("SELECT rank, name, dur_ns FROM kernels ORDER BY dur_ns")
        await pilot.press("ctrl+r")
        await settle(pilot.app, pilot)
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ExportScreen)
        target = tmp_path / "out.parquet"
        pilot.app.screen.query_one(Input).value = str(target)
        await pilot.press("enter")
        await settle(pilot.app, pilot)
    back = duckdb.connect().execute("SELECT * FROM read_parquet(?)", [str(target)]).fetchall()
    assert back == [(0, "add_1", 10), (0, "mm_1", 40), (1, "mm_1", 50)]


@async_test
async def test_base_tables_are_protected(con):
    async with Host(con).run_test(size=(100, 30)) as pilot:
        console = pilot.app.query_one(SqlConsole)
        console.load_sql("CREATE TEMP TABLE mine AS FROM kernels;\nDELETE FROM mine;\n"
                         "DELETE FROM kernels WHERE rank = 1;")
        await pilot.press("f5")
        await settle(pilot.app, pilot)
        error = console.query_one("#sql-error")
        assert error.display and "refused" in str(error.render())
        assert con.execute("SELECT count(*) FROM kernels").fetchone()[0] == 3
        assert "mine" in console.catalog.relations  # the temp table is the user's, and listed


@async_test
async def test_escape_reaches_the_app_when_nothing_runs(con):
    class Back(Host):
        BINDINGS = [("escape", "back", "Back")]
        went_back = 0

        def action_back(self):
            self.went_back += 1

    async with Back(con).run_test(size=(100, 30)) as pilot:
        console = pilot.app.query_one(SqlConsole)
        console.load_sql("SELECT 1")
        await pilot.press("escape")  # out of the editor first
        assert pilot.app.went_back == 0 and console.grid.has_focus
        await pilot.press("escape")
        assert pilot.app.went_back == 1


@async_test
async def test_palette_offers_the_console_commands(con):
    async with Host(con).run_test(size=(100, 30)) as pilot:
        console = pilot.app.query_one(SqlConsole)
        console.load_sql("SELECT 40 + 2 AS answer")
        provider = SqlConsoleCommands(pilot.app.screen)
        hits = [hit async for hit in provider.search("SQL: run statement")]
        assert hits and str(hits[0].text) == "SQL: run statement"
        hits[0].command()  # what the palette calls on enter
        await settle(pilot.app, pilot)
        assert cells(console) == [("42",)]


@async_test
async def test_result_columns_are_as_wide_as_their_widest_cell_when_shown(con):
    async with Host(con).run_test(size=(100, 30)) as pilot:
        console = pilot.app.query_one(SqlConsole)
        console.load_sql("SELECT name, type FROM kernels ORDER BY rank, start_ns")
        await pilot.press("ctrl+r")
        await settle(pilot.app, pilot)
        # Widest cells of ROWS: name "add_1" -> 5, type "MatMulV3" -> 8. Set with the rows (not
        # auto widths, which the table works out on a later idle).
        assert [c.width for c in console.grid.columns.values()] == [5, 8]
        assert not any(c.auto_width for c in console.grid.columns.values())
