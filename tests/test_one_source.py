"""One source for every number: the TUI reads named analysis views only, the slow rank is the same
everywhere, operators have one identity (HCCL run ids stripped) in panes, findings and diff, and the
diff's step times are the report's."""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from npu_tui.analysis.views import TABLE_MACROS, VIEW_DESCRIPTIONS, VIEW_ORDER
from npu_tui.demo import PATH as DEMO
from npu_tui.profile.schema import CANONICAL_TABLES
from npu_tui.session import open_session
from npu_tui.tui import grids
from npu_tui.tui.app import NpuTuiApp
from npu_tui.tui.grid import GridQuery
from npu_tui.tui.panes.ranks import slow_rank
from tui_support import async_test, settle

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "real"
LEVELS = REAL / "msinsight-pt-2rank-levels" / "text"
TUI = ROOT / "npu_tui" / "tui"
PROFILES = [ROOT / "fixtures" / name for name in ("bare_trace", "diffusion_1rank", "diffusion_2rank", "level0")] \
    + [DEMO] + [REAL / p for p in (
        "msinsight-pt-2rank-levels/text/level0", "msinsight-pt-2rank-levels/text/level1",
        "msinsight-pt-2rank-levels/text/level2", "msinsight-pt-2rank-levels/db/level1",
        "mindinsight-msprof-2dev-hccl", "kineto/hta-sampled-2rank", "kineto/hta-alexnet-1gpu",
        "mstt-advisor-fixtures/ut/advisor/compute_advice/data")]


def _strings(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def test_no_sql_under_tui_names_a_raw_table():
    raw = re.compile(r"\b(from|join)\s+(" + "|".join(CANONICAL_TABLES) + r")\b", re.I)
    found = [(str(p.relative_to(ROOT)), line, text[:60]) for p in TUI.rglob("*.py")
             for line, text in _strings(p) if raw.search(text)]
    assert found == []


def test_grids_are_specified_in_one_place():
    """GridQuery is built in grids.py only; the panes hold those specs, not queries of their own."""
    built = [str(p.relative_to(ROOT)) for p in TUI.rglob("*.py") if p.name not in ("grids.py", "grid.py")
             for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "GridQuery"]
    assert built == []


@pytest.fixture(scope="module")
def demo():
    return open_session(DEMO)


def _levels(demo):
    """Every grid and drill level the panes open, reached as a user reaches them, on the demo."""
    con = demo.con
    specs = [grids.COMM_OPS, grids.COMM_LINKS, grids.FIND]
    ranks = grids.ranks()
    specs += [ranks.query, ranks.child(_first(con, ranks.query)).query]
    for _, level in grids.found(_first(con, grids.FIND)):
        specs.append(level.query)
    types = grids.operator_types()
    specs.append(types.query)
    first = _first(con, types.query)
    shapes = types.child(first)
    specs.append(shapes.query)
    specs.append(shapes.child(_first(con, shapes.query)).query)
    for f in demo.findings:
        drill = grids.findings_drill(f)
        while drill is not None:  # finding → ranks → operators or gaps → kernels
            specs.append(drill.query)
            drill = drill.child(_first(con, drill.query)) if drill.child else None
    # a Timeline range: its operators, then their kernels in it
    lo, hi = con.execute("SELECT min(start_ns), max(end_ns) FROM kernel_stages WHERE rank = 0").fetchone()
    drill = grids.range_operators((0, lo, (lo + hi) // 2), "the first half")
    specs += [drill.query, drill.child(_first(con, drill.query)).query]
    return specs


def _first(con, query: GridQuery) -> dict:
    sql, params = query.effective()
    cur = con.execute(sql, params)
    names = [d[0] for d in cur.description]
    return dict(zip(names, cur.fetchone()))


def test_every_grid_reads_an_installed_view_the_schema_browser_describes(demo):
    specs = _levels(demo)
    assert {q.view for q in specs} == {"rank_times", "rank_operators", "comm_op_times", "comm_links", "kernel_names",
                                       "operator_types", "operator_shapes", "kernel_instances", "finding_ranks",
                                       "finding_operators", "range_operators", "range_kernels", "rank_waits"}
    for q in specs:
        assert (q.view in VIEW_ORDER or q.view in TABLE_MACROS) and VIEW_DESCRIPTIONS[q.view], q.view
        sql, params = q.effective()
        cur = demo.con.execute(sql, params)
        names = {d[0] for d in cur.description}
        rows = cur.fetchall()
        assert {c.key for c in q.columns} <= names, q.title
        assert {q.sort, *q.filter_on, q.highlight} - {""} <= names, q.title
        # What `v` opens is that view, and runs as shown.
        assert f'FROM "{q.view}"' in q.shown_sql()
        assert demo.con.execute(q.shown_sql()).fetchall() == rows


def test_the_ranks_free_time_holds_the_copies_the_overview_shows_apart(real):
    """The Ranks pane's free time per step is the step breakdown's (the profiler's Free, or the same
    from a trace's kernels), memory copies in it; the Overview's step account shows them apart:
    "free" read 334.18 ms on one and 334.01 ms (copies 163.5 us beside it) on the other."""
    from npu_tui.tui.grids import RANK_COLUMNS

    s = open_session(real / "kineto/hta-sampled-2rank")
    for rank, free in s.con.execute("SELECT rank, free_us FROM rank_times ORDER BY rank").fetchall():
        parts = dict(s.con.execute("SELECT part, sum(us_per_step) FROM step_account_mean WHERE rank = ? "
                                   "AND part IN ('free', 'copy') GROUP BY part", [rank]).fetchall())
        assert parts.get("copy", 0) > 0 and free == pytest.approx(parts["free"] + parts["copy"], rel=1e-3)
    assert [c.label for c in RANK_COLUMNS if c.key == "free_us"] == ["free+copy"]  # (per step, as its neighbours)


def test_the_exposed_wait_is_named_for_what_it_is_everywhere(real):
    """The step account splits exposed comm into transit, wait, synchronization and idle, so its
    wait is the wait less synchronization; communication.json's wait, the Comm pane's and the
    report's comm ops, holds it. Both read "wait" (5.94 ms on one pane, 0.31 ms on another)."""
    from npu_tui.analysis.render import render
    from npu_tui.tui.grids import COMM_OP_COLUMNS
    from npu_tui.tui.cells import fmt_us
    from npu_tui.tui.panes.findings import finding_detail
    from npu_tui.tui.panes.overview import account_text

    s = open_session(real / "msinsight-pt-2rank-levels/text/level1")
    wait = s.con.execute("SELECT sum(us_per_step) FROM step_account_mean WHERE rank = 0 AND detail = 'wait'"
                         ).fetchone()[0]
    sync = s.con.execute("SELECT sum(us_per_step) FROM step_account_mean WHERE rank = 0 "
                         "AND detail = 'synchronization'").fetchone()[0]
    assert 0 < wait < sync
    assert f"wait less sync {fmt_us(wait)}" in account_text(s.report).plain
    (comm,) = [f for f in s.findings if f["rule"] == "comm_exposed_high"]
    assert f"wait less sync {fmt_us(wait)}" in finding_detail(comm).plain
    assert f"wait less sync {wait / 1e3:,.3f} ms" in render(s.report, "text")
    assert [c.label for c in COMM_OP_COLUMNS if c.key in ("wait_ms", "sync_ms")] == ["wait ms", "of it sync ms"]


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: str(p.relative_to(p.parents[2])))
def test_the_slow_rank_is_the_same_everywhere(path):
    s = open_session(path)
    spread = s.con.execute("SELECT slow_rank FROM rank_spread WHERE measure = 'own_time'").fetchone()
    marked = [r for (r,) in s.con.execute("SELECT rank FROM rank_times WHERE slow").fetchall()]  # the grid
    plotted = slow_rank(s.report)  # the Ranks plot's "◀ most own time/step"
    imbalance = [f["rank"] for f in s.findings if f["rule"] == "rank_step_imbalance"]
    if len(s.ranks) < 2:
        assert spread is None and marked == [] and plotted is None and imbalance == []
        return
    # The slowest by the report's own step figures: computing and free, the waits aside.
    steps = {}
    for row in s.report["steps"]:
        if not row["outlier"]:
            steps.setdefault(row["rank"], []).append(row["computing_us"] + row["free_us"])
    slowest = max(steps, key=lambda r: sum(steps[r]) / len(steps[r]))
    assert spread == (slowest,) and marked == [slowest] and plotted == slowest
    assert imbalance in ([], [slowest])


@async_test
async def test_the_ranks_pane_marks_the_slow_rank_in_grid_and_plot():
    app = NpuTuiApp(LEVELS / "level1")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("5")
        await settle(app, pilot)
        table = app.query_one("#ranks-grid").table
        highlighted = [table.row_dict(i)["rank"] for i in range(table.total) if table.row_dict(i)["slow"]]
        plot = app.query_one("#ranks-plots").content.plain
        (line,) = [x for x in plot.splitlines() if "◀ most own time/step" in x]
        assert highlighted == [int(line.split()[1])] == [slow_rank(app.report)]


@async_test
async def test_the_comm_pane_lists_the_nccl_ops_the_comm_category_holds():
    path = REAL / "kineto" / "hta-sampled-2rank"
    app = NpuTuiApp(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("4")
        await settle(app, pilot)
        ops = app.query_one("#comm-ops").table
        rows = [ops.row_dict(i) for i in range(ops.total)]
        assert rows and all("nccl" in r["op_type"].lower() for r in rows)
        comm = {}
        for c in app.report["categories"]:
            if c["category"] == "Comm":
                comm[c["rank"]] = comm.get(c["rank"], 0.0) + c["time_us"]
        for rank, us in comm.items():
            assert sum(r["elapse_ms"] for r in rows if r["rank"] == rank) * 1e3 == pytest.approx(us, rel=1e-9)


def test_diff_pairs_hcom_allreduce_across_levels_and_uses_the_reports_step_times():
    base, new = open_session(LEVELS / "level0"), open_session(LEVELS / "level1")
    d = new.diff(base)
    ops = {o["op"]: o for o in d["operators"]}
    assert "hcom_allReduce" in ops and not [op for op in ops if "__" in op]
    allreduce = ops["hcom_allReduce"]
    assert allreduce["base_count"] > 0 and allreduce["new_count"] > 0
    # step_trace_time.csv, Step 50 (PROVENANCE.md): level0 rank 0 116251.25 us; level1 rank 0 136581.0 us.
    for session, key in ((base, "base_step_us"), (new, "new_step_us")):
        steps = {}
        for row in session.report["steps"]:
            steps[row["step"]] = max(steps.get(row["step"], 0.0), row["stage_us"])
        assert d["verdict"][key] == pytest.approx(sum(steps.values()) / len(steps), rel=1e-12)
    assert d["verdict"]["base_step_us"] == pytest.approx(116251.25)
    assert d["verdict"]["new_step_us"] == pytest.approx(136581.0)


def test_diff_text_names_the_rank_of_a_finding_without_a_stage():
    d = open_session(LEVELS / "level1").diff(open_session(LEVELS / "level0"))
    from npu_tui.analysis.diff import render

    text = render(d, "text")
    assert "None" not in text and "rank_comm_imbalance (rank 1)" in text
    assert "level0 (1 step)\n" in text  # (it had read "1 steps")


def test_the_python_api_from_a_fresh_process(tmp_path):
    code = ("import npu_tui; p = npu_tui.open({path!r}); df = p.sql('select count(*) n from kernels'); "
            "print(type(df).__module__.split('.')[0], int(df['n'][0]))")
    out = subprocess.run([sys.executable, "-c", code.format(path=str(LEVELS / "level1"))], cwd=tmp_path,
                         capture_output=True, text=True, check=True).stdout.split()
    # kernel_details.csv of rank 0 and rank 1 hold 191 rows each.
    assert out == ["pandas", "382"]


def test_the_python_api_reads_guards_and_compares():
    from npu_tui.query import QueryError

    p = open_session(LEVELS / "level1")
    kernels = p.table("kernels")
    assert len(kernels) == 382 and {"name", "dur_ns", "rank"} <= set(kernels.columns)
    cats = p.sql("SELECT category, sum(time_us) AS us FROM stage_categories GROUP BY 1 ORDER BY 2 DESC")
    assert cats["category"][0] == "Comm"
    assert p.findings == p.report["findings"] and p.findings
    assert json.loads(p.render("json"))["findings"][0]["rule"] == p.findings[0]["rule"]
    with pytest.raises(QueryError):
        p.sql("DELETE FROM kernels")
    with pytest.raises(QueryError):
        p.table("no_such_table")
    assert len(p.table("kernels")) == 382
    d = p.diff(LEVELS / "level0")
    assert d["new"]["path"] == str(p.path) and d["verdict"]["verdict"] == "undetermined"
