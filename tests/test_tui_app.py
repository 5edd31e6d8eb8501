"""The app on real profiler output: every pane, the key paths, drill-down and back, palette, help,
cancel of a load. Numbers are checked against the profiler's own files."""

import csv
import re
import threading
from collections import Counter
from pathlib import Path

import pytest
from textual import events
from textual.widgets import OptionList, TabbedContent

import npu_tui.session
from npu_tui.profile import LoadCancelled
from npu_tui.tui.app import NpuTuiApp
from npu_tui.tui.drill import DrillScreen
from npu_tui.tui.grid import PagedTable
from npu_tui.tui.screens.help import HelpScreen, help_sections
from tui_support import async_test, settle

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "real"
LEVEL1 = REAL / "msinsight-pt-2rank-levels" / "text" / "level1"
SIZE = (100, 40)


def kernel_rows():
    rows = []
    for r in (0, 1):
        path = LEVEL1 / f"rank{r}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
        with open(path, newline="") as f:
            rows += [dict(row, rank=str(r)) for row in csv.DictReader(f)]
    return rows


def type_totals():
    """Σ Duration(us) per Type over both ranks, from the CSV itself."""
    totals = Counter()
    for r in kernel_rows():
        totals[r["Type"]] += float(r["Duration(us)"])
    return totals


def shapes(row):
    """Input Shapes as the loader keeps them: msprof's doubled quotes dropped, N/A as missing."""
    value = row["Input Shapes"].strip('"')
    return "" if value == "N/A" else value


def identity(name):
    """An operator's identity: its name without the per-call suffix (`hcom_allReduce__586_0_1`)."""
    return re.sub(r"(_+[0-9]+)+$|-op[0-9]+$", "", name) or name


_reports = {}


@pytest.fixture(autouse=True)
def report_once(monkeypatch):
    """Build each profile's report once for the whole module (the analysis has its own tests);
    every test still loads the profile and installs the views itself."""
    real_build = npu_tui.session.build_report

    def build(profile, rules, **options):
        key = str(profile.path)
        if key not in _reports:
            _reports[key] = real_build(profile, rules, **options)
        return _reports[key]

    monkeypatch.setattr(npu_tui.session, "build_report", build)


def main_table(app, pane):
    return app.query_one(f"#pane-{pane}").query_one(PagedTable)


@async_test
async def test_overview_shows_the_profilers_step_breakdown():
    app = NpuTuiApp(LEVEL1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.query_one("#loading").display is False
        steps = app.query_one("#overview-steps").content.plain
        # step_trace_time.csv, Step 50 (PROVENANCE.md): rank 0 computing 8873.756, not overlapped 101963.203,
        # free 25744.050, stage 136581.0; rank 1 stage 131912.5. The account's compute comes from the kernels
        # (8873.737 µs, the DSA tasks included as the profiler counts them).
        for shown in ("compute 8.87ms", "exposed comm 101.96ms", "free 25.74ms", "136.58ms", "131.91ms",
                      "agrees with step_trace_time.csv (within 0.1%)"):
            assert shown in steps
        assert "rank 0" in app.query_one("#overview-categories").content.plain
        assert "How stages were detected" in app.query_one("#overview-stages").content.plain


@async_test
async def test_operators_drill_to_kernel_instances_and_back():
    totals = type_totals()
    top_type = max(totals, key=totals.get)
    app = NpuTuiApp(LEVEL1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        table = main_table(app, "operators")
        assert table.has_focus
        assert table.total == len(totals)
        assert table.row_dict(0)["type"] == top_type
        assert table.row_dict(0)["total_us"] == pytest.approx(totals[top_type], rel=1e-9)

        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, DrillScreen)
        assert app.screen.crumbs == ("Operators", top_type)
        names = app.screen.query_one(PagedTable)
        rows = [r for r in kernel_rows() if r["Type"] == top_type]
        # One row per operator and shapes: HCCL's run ids and call indices are not part of the name.
        groups = Counter((identity(r["Name"]), shapes(r)) for r in rows)
        assert names.total == len(groups)

        await pilot.press("enter")
        await settle(app, pilot)
        first = names.row_dict(0)
        instances = app.screen.query_one(PagedTable)
        assert app.screen.crumbs[:2] == ("Operators", top_type)
        assert instances.total == groups[(first["op"], first["input_shapes"] or "")]
        assert "›" in app.screen.query_one(".breadcrumb").content.plain

        await pilot.press("escape", "escape")
        await pilot.pause()
        assert not isinstance(app.screen, DrillScreen)
        assert main_table(app, "operators").has_focus


@async_test
async def test_findings_open_the_operators_behind_them():
    app = NpuTuiApp(LEVEL1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        findings = app.query_one("#pane-findings").findings
        if not findings:
            pytest.fail("the level1 sample should fire at least one finding (comm is 75% of its step)")
        f = findings[0]
        detail = app.query_one("#findings-detail").content.plain
        assert f["direction"] in detail
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, DrillScreen)
        # First the ranks it fired on, the most affected first: the finding's own list.
        ranks = app.screen.query_one(PagedTable)
        assert [ranks.row_dict(i)["rank"] for i in range(ranks.total)] == f["ranks"]
        assert ranks.row_dict(0)["rank"] == f["rank"]
        await pilot.press("enter")
        await settle(app, pilot)
        ops = app.screen.query_one(PagedTable)
        shown = [ops.row_dict(i) for i in range(ops.total)]
        assert shown
        # The evidence's top operators are the drill's largest rows.
        assert [(o["type"], o["op"]) for o in f["evidence"]["top_operators"]] == \
            [(o["type"], o["op"]) for o in shown[:len(f["evidence"]["top_operators"])]]
        # Every row is the finding's rank's kernels of one operator and shapes: the CSV's own rows.
        for row in shown:
            same = [r for r in kernel_rows() if r["rank"] == str(f["rank"]) and r["Type"] == row["type"]
                    and identity(r["Name"]) == row["op"] and shapes(r) == (row["input_shapes"] or "")]
            assert row["count"] == len(same)
            assert row["total_us"] == pytest.approx(sum(float(r["Duration(us)"]) for r in same), rel=1e-9)
        first = shown[0]
        await pilot.press("enter")
        await settle(app, pilot)
        assert len(app.screen_stack) == 4
        # The instances are the finding's rank's only: as many as the CSV of that rank holds.
        instances = app.screen.query_one(PagedTable)
        same = [r for r in kernel_rows() if r["rank"] == str(f["rank"]) and identity(r["Name"]) == first["op"]
                and r["Type"] == first["type"] and shapes(r) == (first["input_shapes"] or "")]
        assert instances.total == len(same)
        assert {instances.row_dict(i)["rank"] for i in range(instances.total)} == {f["rank"]}
        await pilot.press("escape", "escape", "escape")
        await pilot.pause()
        assert isinstance(app.query_one("#findings-list"), OptionList)
        assert app.query_one(TabbedContent).active == "findings"


@async_test
async def test_ranks_and_comm_panes():
    app = NpuTuiApp(LEVEL1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("5")
        ranks = main_table(app, "ranks")
        assert ranks.total == 2
        # Rank 0's step (136,581.0 us) is longer than rank 1's (131,912.5 us), spent waiting for it:
        # by own time (Computing + Free: 34,617.8 against 35,553.6 us) rank 1 is the slow one.
        assert ranks.row_dict(0)["slow"] is False and ranks.row_dict(1)["slow"] is True
        assert "◀ most own time/step" in app.query_one("#ranks-plots").content.plain
        await pilot.press("4")
        ops = app.query_one("#comm-ops").table
        assert ops.total > 0
        assert app.query_one("#comm-links").table.total is not None


@async_test
async def test_a_narrow_drill_keeps_the_operator_not_its_type():
    """At 80 columns a rank's operators had kept the type column whole and cut the operator to
    eight cells ("hco…duce"): the operator names the row."""
    app = NpuTuiApp(LEVEL1)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("5", "enter")
        await settle(app, pilot)
        table = app.screen.query_one(PagedTable)
        header, first = ("".join(s.text for s in table.render_line(y)) for y in (0, 1))
        assert header.split()[:2] == ["type", "operator"]
        assert first.split()[1] == "hcom_allReduce" and first.split()[0].startswith("hco") and "…" in first.split()[0]


@async_test
async def test_filter_sort_export_and_sql_from_the_operators_pane(tmp_path):
    totals = type_totals()
    app = NpuTuiApp(LEVEL1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("3", "slash", *"conv")
        await settle(app, pilot)
        table = main_table(app, "operators")
        # A type matches by its name or by one of its operators' names.
        matching = {r["Type"] for r in kernel_rows() if "conv" in r["Type"].lower() or "conv" in identity(r["Name"]).lower()}
        assert matching > {t for t in totals if "conv" in t.lower()}
        assert table.total == len(matching)
        await pilot.press("enter", "right", "s")  # sort by count, largest first
        await settle(app, pilot)
        counts = Counter(r["Type"] for r in kernel_rows() if r["Type"] in matching)
        assert table.row_dict(0)["count"] == max(counts.values())

        await pilot.press("e")
        await pilot.pause()
        app.screen.query_one("#export-path").value = str(tmp_path / "ops.md")
        await pilot.press("enter")
        await settle(app, pilot)
        lines = (tmp_path / "ops.md").read_text().splitlines()
        assert len(lines) == 2 + len(counts)

        await pilot.press("v")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "sql"


@pytest.mark.parametrize("where", ["rank0_ascend_pt", "rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"])
@async_test
async def test_an_export_opened_from_inside_the_profile_is_offered_beside_it(real, tmp_path, monkeypatch, where):
    """`npu-tui .` in a rank folder, or in its output folder (opened as its rank, whose
    profiler_info is read too): e offered to write the table into the folder read."""
    import shutil

    job = tmp_path / "job"
    shutil.copytree(real / "msinsight-pt-2rank-levels/text/level1", job)
    monkeypatch.chdir(job / where)
    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))
    app = NpuTuiApp(Path("."))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("3", "e")
        await pilot.pause()
        offered = Path(app.screen.query_one("#export-path").value)
        assert offered.parent == job and offered.name.startswith("npu-tui-operators-")


@async_test
async def test_an_export_never_replaces_a_profile_file_and_asks_before_replacing_another(real, tmp_path, monkeypatch):
    """In the output folder, `e` then a profiler file's name (relative: the working folder) wrote the
    table over op_statistic.csv; the SQL console's ctrl+o too, and both replaced any file without a
    word. Inside the profile nothing is written and the dialog says why; a file elsewhere that
    exists is replaced only on a second enter."""
    import hashlib
    import shutil

    from npu_tui.tui.panes.console import SqlConsole
    from npu_tui.tui.panes.console.dialogs import ExportScreen as SqlExportScreen

    job = tmp_path / "job"
    shutil.copytree(real / "msinsight-pt-2rank-levels/text/level1", job)
    out = job / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    monkeypatch.chdir(out)
    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in job.rglob("*") if p.is_file()}
    elsewhere = tmp_path / "mine.csv"
    elsewhere.write_text("keep\n")
    app = NpuTuiApp(job)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("3", "e")
        await pilot.pause()
        app.screen.query_one("#export-path").value = "op_statistic.csv"
        await pilot.press("enter")
        await settle(app, pilot)
        assert "never writes into" in str(app.screen.query_one("#export-problem").render())
        app.screen.query_one("#export-path").value = str(elsewhere)
        await pilot.press("enter")
        await settle(app, pilot)
        assert "exists: enter again" in str(app.screen.query_one("#export-problem").render())
        assert elsewhere.read_text() == "keep\n"
        await pilot.press("enter")
        await settle(app, pilot)
        assert elsewhere.read_text().startswith("type,")

        await pilot.press("7")
        await settle(app, pilot)
        app.query_one(SqlConsole).load_sql("SELECT 1 AS x")
        await pilot.press("ctrl+r")
        await settle(app, pilot)
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert isinstance(app.screen, SqlExportScreen)
        app.screen.query_one("#export-path").value = "kernel_details.csv"
        await pilot.press("enter")
        await settle(app, pilot)
        assert "never writes into" in str(app.screen.query_one("#sql-export-problem").render())
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in job.rglob("*") if p.is_file()} == before


@async_test
async def test_help_lists_every_key_and_palette_runs_actions():
    app = NpuTuiApp(LEVEL1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("3")  # the Operators table: help lists the app's keys and the table's
        await settle(app, pilot)
        sections = help_sections(app)
        assert [title for title, _ in sections] == ["Everywhere", "Tables"]
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = app.screen.query_one("#help-text").content.plain
        lines = {line.strip() for line in text.splitlines()}
        for _, keys in sections:
            for key, desc in keys:
                assert f"{key:<16}{desc}".strip() in lines
        # The key grammar of design.md §8, as the footer spells the keys.
        shown = {line.split()[0] for line in lines if line}
        assert {"⏎", "/", "s", "e", "v", "?", "q", "r", "esc", "1", "7"} <= shown
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)

        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Collect: run again", "Collect: cancel", "Collect: show", "Diff: show",
                "Data health: show all"} <= titles
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Operators: sort by count")
        await pilot.pause(0.3)
        # A double press, both enters in before either is handled: each selected the command and
        # dismissed the palette (the second: a ScreenStackError that ended the app).
        for _ in range(2):
            app.post_message(events.Key("enter", "\r"))
        await settle(app, pilot)
        assert app.is_running and app.screen is app.screen_stack[0]
        assert app.query_one(TabbedContent).active == "operators"
        table = main_table(app, "operators")
        assert table.query.sort == "count"
        counts = Counter(r["Type"] for r in kernel_rows())
        assert table.row_dict(0)["count"] == max(counts.values())


@async_test
async def test_escape_cancels_a_load(monkeypatch):
    started = []

    def slow_load(path, con=None, progress=None, cancelled=None, **options):
        progress(1, 10, "rank 0: kernel_details.csv")
        started.append(True)
        while not cancelled():
            pass
        raise LoadCancelled()

    monkeypatch.setattr(npu_tui.session, "load_profile", slow_load)
    app = NpuTuiApp(LEVEL1)
    async with app.run_test(size=SIZE) as pilot:
        while not started:
            await pilot.pause(0.01)
        await pilot.pause()
        assert "kernel_details.csv" in str(app.query_one("#load-label").content)
        await pilot.press("escape")
        await settle(app, pilot)
        assert app.loading is False
        assert "cancelled" in str(app.query_one("#load-label").content).lower()
        assert app.query_one("#panes").display is False
        # Over: no bar standing still, and no escape offered that does nothing.
        assert app.query_one("#load-bar").display is False
        assert str(app.query_one("#load-hint").content) == "r reloads · q quits"


@async_test
async def test_escape_while_the_panes_wait_for_the_analysis_leaves_it_running(monkeypatch, tmp_path):
    """The tables are on screen and the analysis runs: escape there (to leave a drill, say) stopped
    it, and every pane said "analysing…" for good, with a clean health line."""
    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path))  # a fresh load: tables first, then the analysis
    gate, held = threading.Event(), threading.Event()
    real = npu_tui.session.Session.analyse

    def analyse(self, *args, **kwargs):
        held.set()
        gate.wait(10)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(npu_tui.session.Session, "analyse", analyse)
    app = NpuTuiApp(LEVEL1)
    async with app.run_test(size=SIZE) as pilot:
        while not (held.is_set() and app.query_one("#panes").display):
            await pilot.pause(0.01)
        assert "analysing…" in app.query_one("#overview-steps").content.plain
        await pilot.press("escape")
        await pilot.pause()
        gate.set()
        await settle(app, pilot)
        assert app.report is not None and app.loading is False
        assert "analysing…" not in app.query_one("#overview-steps").content.plain
        assert not [n for n in app._notifications if "cancel" in n.message.lower()]


@async_test
async def test_unreadable_path_says_why():
    app = NpuTuiApp(REAL / "PROVENANCE.md")
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.profile is None
        assert "PROVENANCE.md" in str(app.query_one("#load-label").content)


@async_test
async def test_a_rank_not_loaded_whole_is_marked_on_the_overview_operators_and_memory_panes(real, rank1_cut):
    # Rank 1's kernel_details.csv cut mid-row: the Operators totals hold part of its kernels and its
    # memory peaks are placed in stages by what loaded; the Overview's step account, stage bars,
    # memory and stage lines gave its figures beside rank 0's: all read as if every rank were whole.
    from tui_support import screen_text

    app = NpuTuiApp(rank1_cut)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        overview = app.query_one("OverviewPane").report
        from npu_tui.tui.panes.overview import account_text, categories_text, memory_text, stages_text
        for text, mark in ((account_text(overview), "✕"), (memory_text(overview), "✕ not loaded whole"),
                           (stages_text(overview), "✕ not loaded whole")):
            ranks = [line for line in text.plain.splitlines() if line.startswith("rank ")]
            assert [line.endswith(mark) for line in ranks] == [False, True]
        assert "✕ not compared with the other ranks: rank 1 (not loaded whole) (h says why)" in \
            account_text(overview).plain
        bars = [line for line in categories_text(overview).plain.splitlines() if line.startswith("rank ")]
        assert {line[:7] for line in bars} == {"rank 0 ", "rank 1✕"}
        await pilot.press("3")
        await settle(app, pilot)
        assert "✕ rank 1 not loaded whole: these totals hold what of it loaded (h says why)" in screen_text(app)
        await pilot.press("0")
        await settle(app, pilot)
        lines = screen_text(app).splitlines()
        assert any(line.strip().startswith("rank 1") and line.rstrip().endswith("✕ not loaded whole") for line in lines)
        assert any(line.strip() == "✕ not compared with the other ranks (h says why)" for line in lines)
    whole = NpuTuiApp(real / "msinsight-pt-2rank-levels/text/level1")
    async with whole.run_test(size=(80, 24)) as pilot:
        await settle(whole, pilot)
        for key in ("3", "0"):
            await pilot.press(key)
            await settle(whole, pilot)
            assert "✕" not in screen_text(whole)
