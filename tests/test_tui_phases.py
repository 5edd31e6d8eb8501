"""The app on generated profiles: the Overview fills before the trace is in and the stage method
turns to markers after; escape stops the trace load and keeps the first numbers; a profile reopened
from the cache has nothing left to load; data health on a damaged copy; 256 colours."""

import json
import re
import shutil
import threading
from pathlib import Path

import pytest
import textual.constants

from npu_tui.profile import Profile
from npu_tui.tui.app import NpuTuiApp
from npu_tui.tui.cells import fmt_us
from npu_tui.tui.screens.health import HealthScreen
from tui_support import async_test, screen_text, settle, terminal_output

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "diffusion_1rank"  # kernel_details.csv + trace_view.json with module markers
TRUTH = json.loads((ROOT / "fixtures" / "diffusion_1rank.truth.json").read_text())
SIZE = (100, 32)


def _copy(tmp_path) -> Path:
    dst = tmp_path / "prof"
    shutil.copytree(FIXTURE, dst)
    return dst


def _output_dir(profile: Path) -> Path:
    (rank,) = [d for d in profile.iterdir() if d.name.endswith("_ascend_pt")]
    return rank / "ASCEND_PROFILER_OUTPUT"


def _text(app, pane: str) -> str:
    return app.query_one(f"#overview-{pane}").content.plain


def _notes(app):
    return [n.message for n in app._notifications]


@pytest.fixture
def gate(monkeypatch):
    """Holds the deferred trace load until the test opens the gate (or escape cancels it)."""
    opened = threading.Event()
    started = threading.Event()
    real = Profile.load_pending

    def held(self, progress=None, cancelled=None):
        progress(0, 1, "rank 0: trace_view.json")
        started.set()
        while not opened.wait(0.02) and not cancelled():
            pass
        real(self, progress, cancelled)  # stopped: the real load stops at its first file

    monkeypatch.setattr(Profile, "load_pending", held)
    return opened, started


async def _until_trace_started(app, pilot, started):
    while not (started.is_set() and app.report is not None):
        await pilot.pause(0.02)
    await pilot.pause()


def _stage_lines(app):
    """{stage: (wall as shown, method)} from the Overview's stage section: a line for the rank that
    says how its stages were found, then one line per stage."""
    out, method = {}, None
    for line in _text(app, "stages").splitlines()[1:]:
        parts = line.split()
        if parts[0] == "rank":
            method = "signature" if "kernel signatures" in line else "markers" if "from markers" in line else line
        else:
            out[parts[0]] = (parts[2], method)
    return out


@async_test
async def test_overview_before_the_trace_then_markers(tmp_path, gate):
    opened, started = gate
    path = _copy(tmp_path)
    stages = TRUTH["ranks"][0]["stages"]
    walls = {name: fmt_us(s["wall_ns"] / 1e3) for name, s in stages.items()}
    steps = TRUTH["ranks"][0]["steps"]
    mean_step = fmt_us(sum(s["stage_ns"] for s in steps) / len(steps) / 1e3)

    app = NpuTuiApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await _until_trace_started(app, pilot, started)
        # Phase one: numbers from kernel_details.csv and step_trace_time.csv, stages from signatures.
        assert app.trace_loading and app.query_one("#trace-load").display
        assert "Loading trace: host events, flows (rank 0: trace_view.json)" in screen_text(app)
        assert f"{mean_step} (mean of 2)" in _text(app, "steps")
        assert {m for _, m in _stage_lines(app).values()} == {"signature"}
        assert app.con.execute("SELECT count(*) FROM host_events").fetchone()[0] == 0
        assert app.query_one("#overview-health").display is False  # a clean profile
        await pilot.press("7")  # the console, mounted when first shown, before the views are reinstalled

        opened.set()
        await settle(app, pilot)
        assert not app.trace_loading and not app.query_one("#trace-load").display
        assert _stage_lines(app) == {name: (walls[name], "markers") for name in ("DiT", "VAE", "Other")}
        # The console's schema list was read again once the views were reinstalled.
        schema = app.query_one("#sql-schema")
        assert {"stage_markers", "kernel_stages"} <= {n.data for n in schema.root.children}

    # Saved to the cache once complete: the second open has nothing deferred.
    again = NpuTuiApp(path)
    async with again.run_test(size=SIZE) as pilot:
        await settle(again, pilot)
        assert again.profile.pending == [] and not again.trace_loading
        assert {m for _, m in _stage_lines(again).values()} == {"markers"}


@async_test
async def test_the_trace_bar_keeps_its_percentage_at_80_columns(tmp_path, gate):
    """At 80×24 the label pushed the bar and its percentage off the line: the file name gives way."""
    opened, started = gate
    app = NpuTuiApp(_copy(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await _until_trace_started(app, pilot, started)
        (line,) = [row for row in screen_text(app).splitlines() if row.lstrip().startswith("Loading trace")]
        assert line.rstrip().endswith("0% escape stops") and "…" in line
        opened.set()
        await settle(app, pilot)


@async_test
async def test_escape_stops_the_trace_and_keeps_the_first_numbers(tmp_path, gate):
    opened, started = gate
    app = NpuTuiApp(_copy(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await _until_trace_started(app, pilot, started)
        profile, report, steps = app.profile, app.report, _text(app, "steps")
        await pilot.press("escape")
        await settle(app, pilot)
        assert not app.trace_loading and not app.query_one("#trace-load").display
        assert app.profile is profile and app.report is report and _text(app, "steps") == steps
        assert any(n.startswith("Trace not loaded") for n in _notes(app))
        # The Overview says so until the profile is loaded again, and nothing is cached as complete.
        assert app.query_one("#overview-health").display
        assert "trace_view.json: not loaded, its load was stopped" in screen_text(app)
        assert app.profile.pending and app.profile.store is not None
        # The first phase's data stays usable: the operators grid still answers.
        await pilot.press("3")
        await settle(app, pilot)
        assert app.query_one("#pane-operators").query_one("PagedTable").total > 0


@async_test
async def test_data_health_on_a_damaged_copy(tmp_path):
    path = _copy(tmp_path)
    out = _output_dir(path)
    with open(out / "kernel_details.csv", "a") as f:
        f.write("1,0,4294967295,1,2,broken_row\n")                                   # ragged
        f.write("1,0,4294967295,2,2,aclnnX,X,dynamic,AI_CORE,notatime,1.0\n")        # no start time
    (out / "op_statistic.csv").write_text("")
    app = NpuTuiApp(path)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        block = _text(app, "health").splitlines()
        # A file that exists and gave nothing: the run is incomplete, and that comes first.
        assert block[0] == "Incomplete: 1 file could not be loaded whole  2 problems · h shows all, with fixes"
        # The file that gave nothing comes first, then the rows lost.
        assert block[1].startswith("✗ rank 0: op_statistic.csv is empty")
        assert block[2].startswith("! rank 0: kernel_details.csv: 2 rows skipped")
        await pilot.press("h")
        await pilot.pause()
        assert isinstance(app.screen, HealthScreen)
        shown = screen_text(app)
        assert "fix: compare with the file the profiler wrote" in shown
        assert "fix: the profiler was killed before writing it" in shown
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HealthScreen)


SGR_256 = re.compile(r"\x1b\[[0-9;]*(?:38|48);5;\d+")
TRUECOLOR = re.compile(r"(?:38|48);2;\d+;\d+;\d+")


@async_test
async def test_overview_in_a_256_colour_terminal(monkeypatch):
    # What an SSH session into a plain xterm looks like: no COLORTERM, TERM=xterm-256color.
    for name in ("COLORTERM", "NO_COLOR", "TEXTUAL_COLOR_SYSTEM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setattr(textual.constants, "COLOR_SYSTEM", "auto")
    app = NpuTuiApp(FIXTURE)
    assert app.console.color_system == "256"
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        written = terminal_output(app)
        assert "Step account" in screen_text(app)
        assert len(SGR_256.findall(written)) > 20
        assert not TRUECOLOR.search(written)


@async_test
async def test_a_cache_that_fails_to_read_is_loaded_afresh_under_the_panes(tmp_path, monkeypatch):
    from test_profile_cache import _spoil_block_of

    from npu_tui.profile.cache import cache_dir

    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))
    path = _copy(tmp_path)
    first = NpuTuiApp(path)
    async with first.run_test(size=SIZE) as pilot:
        await settle(first, pilot)
        steps = _text(first, "steps")
    (cached,) = list(cache_dir().glob("*.duckdb"))
    # The analysis' mark unreadable (the panes get the tables before the analysis), and the
    # kernels (the analysis fails on them): the profile is loaded afresh from its files.
    _spoil_block_of(cached, "rules_installed")
    _spoil_block_of(cached, "kernels")
    again = NpuTuiApp(path)
    async with again.run_test(size=SIZE) as pilot:
        await settle(again, pilot)
        assert _text(again, "steps") == steps
        await pilot.press("3")
        await settle(again, pilot)
        grid = again.query_one("#pane-operators").query_one("PagedTable")
        assert grid.error == "" and grid.total > 0


@async_test
async def test_a_damaged_block_under_the_console_removes_the_cache_file(tmp_path, monkeypatch):
    """A block only the SQL console reads fails its checksum (as `npu-tui sql` meets it for real in
    test_profile_cache): the console shows DuckDB's words, the file is removed, and the app says
    r reloads from the profile's own files."""
    from npu_tui.profile.cache import cache_dir
    from npu_tui.query import QueryEngine, QueryError

    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))
    path = _copy(tmp_path)
    first = NpuTuiApp(path)
    async with first.run_test(size=SIZE) as pilot:
        await settle(first, pilot)
    assert len(list(cache_dir().glob("*.duckdb"))) == 1

    def damaged(self, sql, statement):
        raise QueryError("Corrupt database file: computed checksum 1 does not match stored checksum 2",
                         damaged=True)

    monkeypatch.setattr(QueryEngine, "run", damaged)
    again = NpuTuiApp(path)
    async with again.run_test(size=SIZE) as pilot:
        await settle(again, pilot)
        await pilot.press("7")
        await settle(again, pilot)
        console = again.query_one("SqlConsole")
        console.editor.focus()
        console.editor.text = "SELECT sum(seconds) FROM load_log"
        await pilot.press("ctrl+r")
        await settle(again, pilot, rounds=6)
        assert any("cache file is damaged and was removed" in n for n in _notes(again))
        assert list(cache_dir().glob("*.duckdb")) == []


@async_test
async def test_a_damaged_block_under_a_drill_removes_the_cache_file_and_r_reloads(tmp_path, monkeypatch):
    """A stored table only the kernel grids read (kernel_stages) fails its checksum under the
    Operators drill: the grid shows DuckDB's words, the cache file is removed and the app says so,
    and r loads the profile from its files, after which the same drill reads."""
    from test_profile_cache import _spoil_block_of

    from npu_tui.profile.cache import cache_dir

    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))
    path = _copy(tmp_path)
    first = NpuTuiApp(path)
    async with first.run_test(size=SIZE) as pilot:
        await settle(first, pilot)
    (cached,) = list(cache_dir().glob("*.duckdb"))
    _spoil_block_of(cached, "kernel_stages")

    def damage_notes(app):
        return [n for n in _notes(app) if "cache file is damaged and was removed" in n]

    again = NpuTuiApp(path)
    async with again.run_test(size=SIZE) as pilot:
        await settle(again, pilot)
        assert _notes(again) == []
        await pilot.press("3", "enter", "enter")
        await settle(again, pilot)
        assert "Corrupt database file" in again.current_table().error
        assert len(damage_notes(again)) == 1
        assert list(cache_dir().glob("*.duckdb")) == []
        await pilot.press("escape", "escape", "r")
        await settle(again, pilot, rounds=6)
        await pilot.press("3", "enter", "enter")
        await settle(again, pilot)
        grid = again.current_table()
        assert grid.error == "" and grid.total > 0


@async_test
async def test_a_reload_shown_on_a_pane_of_analysis_views_reads_them_once_installed(tmp_path, monkeypatch):
    """r on the Operators pane with no cache file to open (removed, or the profile changed): the
    grid read its view as the fresh load's tables were handed over, before the analysis installed
    it, and kept "operator_types does not exist"."""
    from npu_tui.profile.cache import cache_dir

    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))
    app = NpuTuiApp(_copy(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        await settle(app, pilot)
        total = app.current_table().total
        for f in cache_dir().glob("*.duckdb"):
            f.unlink()
        await pilot.press("r")
        await settle(app, pilot, rounds=6)
        grid = app.current_table()
        assert grid.error == "" and grid.total == total > 0
        assert len(app.session.ranks) == 1


@async_test
async def test_a_pane_chosen_on_the_no_profile_screen_is_ready_once_r_loads_one(tmp_path):
    """7 pressed while the folder held no profile, then the profile copied in and r: the SQL pane
    was shown empty (its console mounts only on a pane in view, and the panes were hidden)."""
    from npu_tui.tui.panes.console.editor import SqlEditor

    folder = tmp_path / "empty"
    folder.mkdir()
    app = NpuTuiApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert not app.panes.display
        await pilot.press("7")
        shutil.copytree(FIXTURE, folder, dirs_exist_ok=True)
        await pilot.press("r")
        await settle(app, pilot, rounds=6)
        assert app.panes.display and app.panes.active == "sql"
        assert isinstance(app.focused, SqlEditor)


async def _until_read(app, pilot):
    """The shown grid has read its query (settle would wait for the held trace load too)."""
    while app.current_table() is None or app.current_table().total is None:
        await pilot.pause(0.02)


@async_test
async def test_grids_read_before_the_trace_show_its_numbers_after_it(tmp_path, gate):
    """A grid read in phase one reads its view again once the trace is in, and keeps its place: the
    Memory pane's operators (each one's stage: from kernel signatures, then from the markers), and
    a drill level open above the panes."""
    opened, started = gate
    app = NpuTuiApp(_copy(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await _until_trace_started(app, pilot, started)
        await pilot.press("0")
        await _until_read(app, pilot)
        memory = app.current_table()
        query = "SELECT name, stage FROM memory_operators ORDER BY name"
        before = app.con.execute(query).fetchall()
        assert [memory.row_dict(i)["stage"] for i in range(memory.total)] != [None] * memory.total
        await pilot.press("3")
        await _until_read(app, pilot)
        types = app.current_table()
        types.move_cursor(2)
        await pilot.press("enter")  # a type's operators, a drill level above the panes
        await pilot.pause()
        await _until_read(app, pilot)
        level = app.current_table()
        assert level is not types
        level.move_cursor(1)

        opened.set()
        await settle(app, pilot, rounds=5)
        assert not app.trace_loading
        after = app.con.execute(query).fetchall()
        assert after != before  # the stages moved with the markers
        # The drill level read again (shown), and kept its row.
        assert app.current_table() is level and level.cursor_row == 1 and level.error == ""
        await pilot.press("escape")
        await settle(app, pilot)
        assert app.current_table() is types and types.cursor_row == 2 and types.error == ""
        await pilot.press("0")
        await settle(app, pilot)
        shown = sorted((memory.row_dict(i)["name"], memory.row_dict(i)["stage"]) for i in range(memory.total))
        assert shown == after
