"""The key grammar, as a user meets it: typing a query never reaches the app's keys, escape leaves
a field, then a drill level, then a filter; digits work at every depth; `/` and ctrl+f find kernels
by name; `c` starts nothing before its dialog is confirmed; a folder of profiles offers a picker."""

import shutil
from pathlib import Path

from textual import events
from textual.widgets import Input, OptionList, TabbedContent

from npu_tui.demo import PATH as DEMO
from npu_tui.tui.app import NpuTuiApp
from npu_tui.tui.drill import DrillScreen
from npu_tui.tui.grid import GridView, PagedTable
from npu_tui.tui.panes.console import SqlConsole
from npu_tui.tui.screens.collect_confirm import CollectConfirm
from npu_tui.tui.screens.find import FindScreen
from npu_tui.tui.screens.runs import PathPicker
from tui_support import async_test, screen_text, settle

SIZE = (120, 40)


def _active(app) -> str:
    return app.query_one(TabbedContent).active


def _table(app, pane) -> PagedTable:
    return app.query_one(f"#pane-{pane}").query_one(PagedTable)


@async_test
async def test_a_query_typed_in_the_console_runs_and_collects_nothing():
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("7")
        await settle(app, pilot)
        console = app.query_one(SqlConsole)
        assert console.editor.has_focus
        await pilot.press("ctrl+a", "ctrl+k")  # the welcome comment line, gone as a user clears it
        await pilot.press(*"select 40 + 2 as answer")  # holds c, 4, 2: app keys outside the editor
        await pilot.press("ctrl+r")
        await settle(app, pilot)
        assert console.grid.rows_shown == [(42,)]
        assert "42" in screen_text(app)
        assert "collect" not in app.panes.built and not isinstance(app.screen, CollectConfirm)
        assert _active(app) == "sql"
        await pilot.press("escape", "1")
        assert _active(app) == "overview"


@async_test
async def test_digits_switch_panes_from_inside_a_drill_down():
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("3", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, DrillScreen)
        await pilot.press("4")
        await settle(app, pilot)
        assert app.screen is app.screen_stack[0] and _active(app) == "comm"
        await pilot.press("3", "enter", "enter")  # two levels down
        await settle(app, pilot)
        assert len(app.screen_stack) == 3
        await pilot.press("2")
        assert app.screen is app.screen_stack[0] and _active(app) == "findings"


@async_test
async def test_slash_finds_an_operator_type_by_a_kernel_name_fragment_and_escape_clears_it():
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        await settle(app, pilot)
        table = _table(app, "operators")
        everything = table.total
        # A fragment of an operator's name that its type does not contain.
        op, kind = app.con.execute(
            "SELECT op, type FROM operator_shapes WHERE position(lower(type) IN lower(op)) = 0 "
            "ORDER BY total_us DESC LIMIT 1").fetchone()
        fragment = op[:max(4, len(op) // 2)]
        await pilot.press("slash", *fragment, "enter")
        await settle(app, pilot)
        kinds = [table.row_dict(i)["type"] for i in range(table.total)]
        assert kind in kinds and table.total < everything
        grid = app.query_one("#pane-operators").query_one(GridView)
        assert table.has_focus and not grid.query_one(Input).has_focus
        await pilot.press("escape")  # on the panes, escape then clears the filter
        await settle(app, pilot)
        assert table.filter_text == "" and table.total == everything


@async_test
async def test_escape_leaves_the_filter_box_then_the_drill_level():
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("3", "enter")
        await settle(app, pilot)
        level = app.screen
        await pilot.press("slash", "x")
        assert level.query_one(Input).has_focus
        await pilot.press("escape")
        assert app.screen is level and level.query_one(PagedTable).has_focus
        await pilot.press("escape")
        assert app.screen is app.screen_stack[0]


@async_test
async def test_ctrl_f_jumps_to_the_kernels_of_a_name():
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        name, op, n = app.con.execute(
            "SELECT name, op, kernels FROM kernel_names ORDER BY total_us LIMIT 1").fetchone()
        await pilot.press("ctrl+f")
        await settle(app, pilot)
        assert isinstance(app.screen, FindScreen)
        await pilot.press(*name, "enter")
        await settle(app, pilot)
        found = app.screen.query_one(PagedTable)
        assert found.total >= 1 and found.row_dict(0)["name"] == name
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, DrillScreen) and _active(app) == "operators"
        kernels = app.screen.query_one(PagedTable)
        assert {kernels.row_dict(i)["name"] for i in range(kernels.total)} >= {name}
        assert app.screen.crumbs[0] == "Operators" and op in app.screen.crumbs[-1]
        await pilot.press("escape", "escape")
        assert app.screen is app.screen_stack[0]


@async_test
async def test_c_asks_first_and_escape_starts_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("c")
        assert isinstance(app.screen, CollectConfirm)
        shown = " ".join(app.screen.query_one("#collect-confirm-text").content.plain.split())
        assert f"$ npu-tui collect --demo --out {tmp_path.resolve() / 'prof_out'} --steps 5" in shown
        assert f"{tmp_path.resolve() / 'prof_out' / 'run_<date>_<time>_NN'}" in shown
        assert "stays open until the new run has loaded" in shown
        assert "enter collects · escape cancels" in screen_text(app)
        await pilot.press("escape")
        await settle(app, pilot)
        assert app.screen is app.screen_stack[0]
        assert "collect" not in app.panes.built and not (tmp_path / "prof_out").exists()
        assert app.session.path == DEMO


@async_test
async def test_c_from_inside_the_profile_collects_beside_it(tmp_path, monkeypatch):
    """`cd prof && npu-tui .`: the demo was collected into ./prof_out, inside the folder read."""
    profile = shutil.copytree(DEMO, tmp_path / "profile")
    monkeypatch.chdir(profile)
    app = NpuTuiApp(Path("."))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("c")
        assert isinstance(app.screen, CollectConfirm)
        shown = " ".join(app.screen.query_one("#collect-confirm-text").content.plain.split())
        assert f"--out {tmp_path.resolve() / 'prof_out'} " in shown
        await pilot.press("escape")


@async_test
async def test_an_enter_typed_ahead_or_held_does_not_collect(tmp_path, monkeypatch):
    """Enter is the drill key: one typed with `c` before its question was drawn, or held down
    through `c`, collected (minutes of device work, the open profile replaced)."""
    from npu_tui.tui.screens import collect_confirm

    # (wide margins: on a loaded machine the keys a test presses together come apart by more than
    # a user's would)
    monkeypatch.setattr(collect_confirm, "SHOWN_S", 30.0)
    monkeypatch.setattr(collect_confirm, "QUIET_S", 10.0)
    monkeypatch.chdir(tmp_path)
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("c", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, CollectConfirm)
        await pilot.press("escape")
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        await pilot.press(*["enter", "escape"] * 3, "c", *["enter"] * 20)  # a held enter repeats
        await settle(app, pilot)
        assert isinstance(app.screen, CollectConfirm)
        assert "collect" not in app.panes.built and not (tmp_path / "prof_out").exists()


@async_test
async def test_app_keys_work_inside_a_drill_level(tmp_path, monkeypatch):
    """`c` and `h` open over a drill level, and escape comes back to it (they closed every level,
    so a cancelled collection lost the place); ctrl+f, which jumps to a type's kernels, closes them."""
    from npu_tui.tui.screens.health import HealthScreen

    monkeypatch.chdir(tmp_path)
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("3", "enter")
        await settle(app, pilot)
        await pilot.press("ctrl+f")
        assert isinstance(app.screen, FindScreen) and len(app.screen_stack) == 2
        await pilot.press("escape", "escape", "3", "enter", "c")
        assert isinstance(app.screen, CollectConfirm) and len(app.screen_stack) == 3
        await pilot.press("escape")
        assert isinstance(app.screen, DrillScreen)
        await pilot.press("h")
        assert isinstance(app.screen, HealthScreen) and len(app.screen_stack) == 3
        await pilot.press("escape")
        assert isinstance(app.screen, DrillScreen)
        await pilot.press("escape")
        assert app.screen is app.screen_stack[0]


@async_test
async def test_ranks_enter_opens_the_ranks_operators():
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("5")
        await settle(app, pilot)
        assert _table(app, "ranks").has_focus
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, DrillScreen) and app.screen.crumbs[-1] == "rank 0 · operators"
        ops = app.screen.query_one(PagedTable)
        want = app.con.execute("SELECT count(*) FROM rank_operators WHERE rank = 0").fetchone()[0]
        assert ops.total == want > 0


@async_test
async def test_a_folder_of_profiles_lists_them_to_pick(tmp_path):
    for name in ("a", "b"):
        shutil.copytree(DEMO, tmp_path / "runs" / name / "prof")
    app = NpuTuiApp(tmp_path / "runs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.session is None
        picker = app.query_one("#load-candidates", OptionList)
        assert picker.display and picker.has_focus and picker.option_count == 2
        assert "no profile here" in screen_text(app)
        await pilot.press("down", "enter")
        await settle(app, pilot)
        assert app.session is not None and Path(app.session.path) == tmp_path / "runs" / "b" / "prof"
        # p lists them again, the open one marked and under the cursor; another opens in its place.
        await pilot.press("p")
        assert isinstance(app.screen, PathPicker)
        listed = app.screen.query_one(OptionList)
        assert [listed.get_option_at_index(i).prompt.plain for i in range(listed.option_count)] == [
            str(tmp_path / "runs" / "a" / "prof"), str(tmp_path / "runs" / "b" / "prof") + "  (open)"]
        assert listed.highlighted == 1
        await pilot.press("up", "enter")
        await settle(app, pilot)
        assert Path(app.session.path) == tmp_path / "runs" / "a" / "prof"
        await pilot.press("p", "escape")  # and again, with the other marked; escape keeps it
        await settle(app, pilot)
        assert not isinstance(app.screen, PathPicker) and Path(app.session.path) == tmp_path / "runs" / "a" / "prof"


@async_test
async def test_p_offers_the_profile_beside_the_rank_folders(real, tmp_path):
    """A Kineto trace beside the rank folders is another profile: said, not loaded, and p opens it
    (it answered that the profile was picked from nowhere)."""
    job = tmp_path / "job"
    shutil.copytree(DEMO, job)
    trace = job / "sampled_rank-0.json.gz"
    shutil.copyfile(real / "kineto" / "hta-sampled-2rank" / trace.name, trace)
    app = NpuTuiApp(job)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert f"{trace.name}: another profile beside the rank folders" in screen_text(app)
        await pilot.press("p")
        assert isinstance(app.screen, PathPicker)
        listed = app.screen.query_one(OptionList)
        assert [listed.get_option_at_index(i).prompt.plain for i in range(listed.option_count)] == [
            f"{job}  (open)", str(trace)]
        await pilot.press("down", "enter")
        await settle(app, pilot)
        assert Path(app.session.path) == trace and app.session.formats == ["kineto"]
        await pilot.press("p")  # the same choice, from the trace
        listed = app.screen.query_one(OptionList)
        assert listed.option_count == 2 and listed.get_option_at_index(1).prompt.plain == f"{trace}  (open)"


@async_test
async def test_v_opens_the_sql_at_its_first_column():
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("3", "enter", "enter", "v")  # the kernels of one operator: a long ORDER BY
        await settle(app, pilot)
        editor = app.query_one(SqlConsole).editor
        assert editor.has_focus and editor.text.startswith('SELECT * FROM "kernel_instances"')
        assert max(len(line) for line in editor.text.splitlines()) > 80 and editor.scroll_offset.x == 0


@async_test
async def test_a_digit_switches_even_to_a_pane_built_on_the_way():
    # Building the Collect or Diff pane awaits its mount; the pane left behind must not take the
    # focus back (a focused widget activates its tab) and undo the switch.
    panes = {"1": "overview", "2": "findings", "3": "operators", "4": "comm", "5": "ranks", "6": "timeline",
             "8": "collect", "9": "diff"}
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        for key in "2829384958612":
            await pilot.press(key)
            await settle(app, pilot)
            assert _active(app) == panes[key], key


def _burst(app, *keys: str) -> None:
    """Queue keys as one read from a slow link delivers them: all before the app handles the first."""
    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


@async_test
async def test_a_key_right_after_escape_goes_where_escape_moved_the_focus():
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("7")
        await settle(app, pilot)
        console = app.query_one(SqlConsole)
        before = console.editor.text
        _burst(app, "escape", "1")
        await settle(app, pilot)
        assert console.editor.text == before and _active(app) == "overview"
        await pilot.press("3")
        await settle(app, pilot)
        table = _table(app, "operators")
        _burst(app, "slash", "x")  # the first letter of a filter typed straight after the slash
        await settle(app, pilot)
        grid = app.query_one("#pane-operators").query_one(GridView)
        assert grid.query_one(Input).value == "x"
        _burst(app, "escape", "2")  # escape leaves the box, then the digit is a pane key
        await settle(app, pilot)
        assert grid.query_one(Input).value == "x" and _active(app) == "findings"
        assert table.filter_text == "x"
        await pilot.press("3")
        await settle(app, pilot)
        _burst(app, "slash", "z", "enter", "4")  # the box opens selected: z replaces x; enter keeps it
        await settle(app, pilot)
        assert table.filter_text == "z" and _active(app) == "comm"


@async_test
async def test_an_enter_queued_before_the_question_was_drawn_does_not_collect(tmp_path, monkeypatch):
    """A key counts from when it arrived, not when it is handled: an enter that came with `c` and
    waited behind a stalled event loop (a slow link, a busy machine) is still one typed ahead."""
    import time

    from textual import events

    monkeypatch.chdir(tmp_path)
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("c")
        await settle(app, pilot)
        assert isinstance(app.screen, CollectConfirm)
        typed = events.Key("enter", "\r")
        typed.time = app.screen._shown - 0.05  # arrived before the question was drawn
        time.sleep(0.6)  # handled late
        app.post_message(typed)
        await settle(app, pilot)
        assert isinstance(app.screen, CollectConfirm)
        assert "collect" not in app.panes.built and not (tmp_path / "prof_out").exists()
