"""The paged grid on its own: paging, cursor repaint, filter, sort, export, copy, SQL, literal text."""

import csv

import duckdb
from textual.app import App
from textual.geometry import Region

from npu_tui.text import clip, width as display_width
from npu_tui.tui.cells import Column
from npu_tui.tui.grid import PAGE_ROWS, GridQuery, GridView, PagedTable
from npu_tui.tui.screens.export import ask_export
from tui_support import async_test, settle

N = 5000
# Row i: name "op_<i % 7>", dur (i * 37) % 1000; one name that looks like markup and carries ESC.
NASTY = "[bold]red\x1b[31m"
VIEW = """CREATE VIEW rows_view AS
SELECT i, CASE WHEN i = 3 THEN '[bold]red' || chr(27) || '[31m' ELSE 'op_' || (i % 7) END AS name,
       (i * 37) % 1000 AS dur FROM t"""
COLUMNS = (Column("i", "i", "int"), Column("name", "name"), Column("dur", "dur", "int"))


def make_con():
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT range::INTEGER AS i FROM range({N})")
    con.execute(VIEW)
    return con


class GridApp(App):
    def __init__(self, con):
        super().__init__()
        self.con = con
        self.shown_sql = []

    def compose(self):
        yield GridView(GridQuery("Test", "rows_view", COLUMNS, sort="i", descending=False))

    def on_mount(self):
        self.query_one(GridView).set_source(self.con)
        self.query_one(PagedTable).focus()

    def on_paged_table_show_sql(self, msg):
        self.shown_sql.append(msg.sql)

    def on_paged_table_export_requested(self, msg):
        ask_export(self, msg.table)


def line_text(table, y):
    return "".join(seg.text for seg in table.render_line(y))


@async_test
async def test_page_down_reads_one_page_and_shows_the_next_window():
    app = GridApp(make_con())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        table = app.query_one(PagedTable)
        assert table.total == N
        visible = table.visible_rows
        await pilot.press("pagedown")
        await pilot.pause()
        assert table.cursor_row == visible
        assert int(table.scroll_offset.y) == visible
        # The first line under the header is row `visible`, whose dur is (visible * 37) % 1000.
        assert line_text(table, 1).split()[:3] == [f"{visible:,}", "op_" + str(visible % 7),
                                                   f"{(visible * 37) % 1000:,}"]
        await pilot.press("end")
        await pilot.pause()
        assert table.cursor_row == N - 1
        # Rows come from DuckDB by the page: the end of the table needed one more page, not all rows.
        assert table.page_reads <= 2
        assert len(table._pages) * PAGE_ROWS < N


@async_test
async def test_cursor_move_repaints_only_the_two_changed_lines():
    app = GridApp(make_con())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        table = app.query_one(PagedTable)
        regions = []
        original = table.refresh

        def spy(*regs, **kw):
            regions.extend(r for r in regs if isinstance(r, Region))
            if not regs:
                regions.append(None)
            return original(*regs, **kw)

        table.refresh = spy
        await pilot.press("down")
        table.refresh = original
        assert regions == [Region(0, 1, table.size.width, 1), Region(0, 2, table.size.width, 1)]


@async_test
async def test_filter_sort_and_literal_text():
    app = GridApp(make_con())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        table = app.query_one(PagedTable)
        # Markup and escape sequences in profile text are shown as text.
        assert "[bold]red\\x1b[31m" in line_text(table, 4)

        await pilot.press("slash", *"op_5")
        await settle(app, pilot)
        expected = [i for i in range(N) if i != 3 and i % 7 == 5]
        assert table.total == len(expected)
        await pilot.press("enter")  # closes the filter box, keeps the filter
        assert table.has_focus

        await pilot.press("right", "right", "s")  # sort by dur, largest first
        await settle(app, pilot)
        top = max(expected, key=lambda i: ((i * 37) % 1000, -i))
        assert table.row_dict(0)["dur"] == (top * 37) % 1000
        await pilot.press("s")  # again: ascending
        await settle(app, pilot)
        assert table.row_dict(0)["dur"] == min((i * 37) % 1000 for i in expected)

        await pilot.press("v")
        await pilot.pause()
        # The SQL handed to the console runs as shown and gives the same rows.
        rows = app.con.execute(app.shown_sql[-1]).fetchall()
        assert len(rows) == len(expected)
        assert rows[0][2] == table.row_dict(0)["dur"]


@async_test
async def test_a_reread_keeps_the_place_and_a_new_order_starts_at_the_top():
    app = GridApp(make_con())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        table = app.query_one(PagedTable)
        await pilot.press("pagedown", "pagedown", "down")
        await pilot.pause()
        row, top = table.cursor_row, int(table.scroll_offset.y)
        assert top > 0 and top < row < top + table.visible_rows

        # The rows under the query changed (as when the trace's phase rebuilds the views): read
        # again, where the user was.
        app.con.execute("DELETE FROM t WHERE i >= 4000")
        table.reload()
        await settle(app, pilot)
        assert table.total == 4000
        assert (table.cursor_row, int(table.scroll_offset.y)) == (row, top)
        assert line_text(table, 1 + row - top).split()[0] == f"{row:,}"

        # Fewer rows than the place: the cursor stops on the last, in view.
        app.con.execute(f"DELETE FROM t WHERE i >= {row - 5}")
        table.reload()
        await settle(app, pilot)
        assert table.cursor_row == row - 6
        assert int(table.scroll_offset.y) <= table.cursor_row < int(table.scroll_offset.y) + table.visible_rows

        # Another order: the old place means nothing in it.
        await pilot.press("s")
        await settle(app, pilot)
        assert (table.cursor_row, int(table.scroll_offset.y)) == (0, 0)


@async_test
async def test_a_long_name_keeps_both_ends_and_wide_characters_keep_the_columns():
    con = duckdb.connect()
    con.execute("""CREATE VIEW rows_view AS SELECT * FROM (VALUES
        (1, 'autograd::engine::evaluate_function: ConvolutionBackward0', 900),
        (2, '注意力算子融合注意力算子融合注意力算子融合', 800), (3, '融合', 700)) t(i, name, dur)""")
    app = GridApp(con)
    async with app.run_test(size=(40, 10)) as pilot:
        await settle(app, pilot)
        table = app.query_one(PagedTable)
        lines = [line_text(table, y).rstrip() for y in (1, 2, 3)]
        # The name column is cut in the middle: what kind of op (the head) and which (the tail).
        assert lines[0].split()[1].startswith("autograd::")
        assert lines[0].split()[1].endswith("Backward0")
        assert "…" in lines[0] and "…" in lines[1] and "…" not in lines[2]
        # A list (shapes) reads from its first item: cut at its end.
        assert clip("16384,12288;12288,3072", 12, middle=False) == "16384,12288…"
        # A wide character takes two columns: the numbers still end at one column on every line.
        ends = {display_width(line) for line in lines}
        assert ends == {display_width(line_text(table, 0).rstrip())}


@async_test
async def test_export_csv_and_markdown(tmp_path):
    app = GridApp(make_con())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        for name in ("out.csv", "out.md"):
            await pilot.press("e")
            await pilot.pause()
            box = app.screen.query_one("#export-path")
            box.value = str(tmp_path / name)
            await pilot.press("enter")
            await settle(app, pilot)
        with open(tmp_path / "out.csv", newline="") as f:
            rows = list(csv.reader(f))
        assert rows[0] == ["i", "name", "dur"]
        assert len(rows) == N + 1
        assert rows[1 + 10] == ["10", "op_3", str(370)]
        assert rows[1 + 3][1] == NASTY
        md = (tmp_path / "out.md").read_text().splitlines()
        assert md[0] == "| i | name | dur |"
        assert len(md) == N + 2
        # Profile text in Markdown is escaped as in the reports; the CSV keeps it exact.
        assert md[2 + 10] == "| 10 | op\\_3 | 370 |"


@async_test
async def test_copy_value_and_table_to_clipboard():
    app = GridApp(make_con())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "down", "right", "y")
        assert app.clipboard == "op_2"
        await pilot.press("Y")
        lines = app.clipboard.splitlines()
        assert lines[0] == "i\tname\tdur"
        assert len(lines) == N + 1
        assert lines[1 + 4] == "4\top_4\t148"


def test_tui_layer_imports_neither_torch_nor_pandas():
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys, npu_tui.tui.app, npu_tui.tui.screens.help, npu_tui.tui.screens.export; "
            "bad = [m for m in ('torch', 'pandas') if m in sys.modules]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1])
