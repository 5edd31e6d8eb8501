"""The Timeline pane driven by keys, as a user would: open it, zoom around the cursor, pan, jump to
the next exposed comm and to a step, select a range and check its totals against the kernels,
open its operators, and come from a finding with `t`."""

from collections import defaultdict
from pathlib import Path

import pytest
from textual.widgets import TabbedContent

from npu_tui.demo import PATH as DEMO
from npu_tui.tui.app import NpuTuiApp
from npu_tui.tui.commands import app_commands
from npu_tui.tui.drill import DrillGrid, DrillScreen
from npu_tui.tui.panes.console.schema_browser import SchemaBrowser
from npu_tui.tui.panes.timeline import TimelinePane, TimelineView
from npu_tui.tui.timeline_draw import LABEL, Viewport
from tui_support import async_test, screen_text, settle

SIZE = (120, 40)
ROOT = Path(__file__).resolve().parents[1]


async def _drawn(app, pilot):
    """Until the Timeline is built on the last report (the trace's phase rebuilds it) and drawn, at
    the height it has now (after a resize its handler may not have run yet when workers settle)."""
    view = app.query_one(TimelineView)

    def drawn():
        return view.frame is not None and view.frame.view == view.view and view.rows_asked == view.lane_rows

    for _ in range(100):
        await settle(app, pilot)
        if not app.trace_loading and drawn():
            break
    await pilot.pause()
    assert drawn()
    return view


async def _timeline(app, pilot):
    await settle(app, pilot)
    await pilot.press("6")
    return await _drawn(app, pilot)


async def _keys(app, pilot, *keys):
    await pilot.press(*keys)
    await settle(app, pilot)


def _offset(con, rank):
    return con.execute("SELECT min(start_ns) FROM kernels WHERE rank = ? AND step = (SELECT min(step) FROM kernels "
                       "WHERE rank = ?)", [rank, rank]).fetchone()[0]


@async_test
async def test_open_zoom_pan_and_jump():
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        view = await _timeline(app, pilot)
        assert view.has_focus
        v = view.view
        assert v.zoom == 0 and v.n == SIZE[0] - LABEL
        text = screen_text(app)
        for lane in ("r0  stage", "r1  stage", "computing", "exposed", "free", "stream 2"):
            assert lane in text
        assert "aligned by step start" in text

        # w zooms in around the cursor: the cursor's time stays at its column.
        await _keys(app, pilot, *["right"] * 30)
        col, t = view.view.cursor - view.view.b0, view.view.cursor_t
        await _keys(app, pilot, "w", "w")
        v = view.view
        assert v.zoom == 2 and v.w == v.fit_w // 4
        assert v.cursor - v.b0 == col and t <= v.cursor_t < t + v.fit_w
        assert view.frame.view == v  # drawn
        # d and a pan a quarter of the screen each way.
        await _keys(app, pilot, "d")
        assert view.view.b0 == v.b0 + v.n // 4
        await _keys(app, pilot, "a")
        assert view.view.b0 == v.b0
        # s zooms back out; 0 fits the run.
        await _keys(app, pilot, "s")
        assert view.view.zoom == 1
        await _keys(app, pilot, "0")
        assert view.view.zoom == 0 and view.view.b0 == view.view.lo // view.view.fit_w

        # n: the next stretch of comm no compute covers, from the profiler's lane read here.
        rank = view.lane.rank
        off = _offset(app.con, rank)
        after = view.view.cursor_t + view.view.w
        start = app.con.execute("SELECT min(start_ns) FROM overlap_lanes WHERE rank = ? AND lane = "
                                "'Communication(Not Overlapped)' AND start_ns - ? > ?", [rank, off, after]).fetchone()[0]
        await _keys(app, pilot, "n")
        assert view.view.cursor == (start - off) // view.view.w
        assert "exposed comm:" in screen_text(app)

        # ] frames the next step after the cursor: all of it in view, the cursor at its start.
        await _keys(app, pilot, "0")
        cursor, w = view.view.cursor, view.view.w
        steps = app.con.execute("SELECT step, start_ns - ?, end_ns - ? FROM step_windows WHERE rank = ? ORDER BY start_ns",
                                [off, off, rank]).fetchall()
        step, a, b = next(s for s in steps if s[1] // w > cursor)
        await _keys(app, pilot, "right_square_bracket")
        t0, t1 = view.view.visible
        assert view.view.zoom > 0 and t0 <= a and b <= t1 and view.view.cursor == a // view.view.w
        assert f"step {step}:" in screen_text(app)
        await _keys(app, pilot, "left_square_bracket")  # and [ the one before
        prev_step, a, b = steps[[s[0] for s in steps].index(step) - 1]
        assert view.view.cursor == a // view.view.w and f"step {prev_step}:" in screen_text(app)


@async_test
async def test_a_selected_range_sums_its_kernels_and_opens_their_operators():
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        view = await _timeline(app, pilot)
        await _keys(app, pilot, *["right"] * 10, "space", *["right"] * 25, "space")
        pane = app.query_one(TimelinePane)
        assert pane.query_one("#timeline-range").display and pane.summary is not None
        rank, a, b = view.range
        assert (b - a) == 26 * view.view.w
        off = _offset(app.con, rank)
        # The range's kernels, clipped to it, from the kernels table and the rules' categories.
        per_cat = defaultdict(lambda: [0, 0.0])
        for cat, ka, kb in app.con.execute(
                "SELECT category, start_ns, start_ns + dur_ns FROM kernel_categories WHERE rank = ? AND dur_ns > 0",
                [rank]).fetchall():
            inside = min(kb, b + off) - max(ka, a + off)
            if inside > 0:
                per_cat[cat][0] += 1
                per_cat[cat][1] += inside / 1e3
        shown = {r["part"]: (r["kernels"], r["time_us"]) for r in pane.summary.rows if r["kind"] == "category"}
        assert set(shown) == set(per_cat)
        for cat, (count, us) in per_cat.items():
            assert shown[cat][0] == count and shown[cat][1] == pytest.approx(us)
        panel = screen_text(app)
        assert f"rank {rank}" in panel and "exposed comm" in panel and "enter operators" in panel

        await _keys(app, pilot, "enter")
        assert isinstance(app.screen, DrillScreen)
        grid = app.screen.query_one(DrillGrid)
        assert grid.drill.query.view == "range_operators"
        sql, params = grid.drill.query.effective()
        rows = app.con.execute(f"SELECT sum(total_us), sum(count) FROM ({sql})", params).fetchone()
        assert rows[0] == pytest.approx(sum(us for _, us in per_cat.values()))
        assert rows[1] == sum(c for c, _ in per_cat.values())
        await _keys(app, pilot, "escape")  # back to the Timeline, the range still selected
        assert not isinstance(app.screen, DrillScreen) and view.range is not None
        await _keys(app, pilot, "escape")  # then escape drops it
        assert view.range is None and not pane.query_one("#timeline-range").display


@async_test
async def test_t_on_a_finding_opens_the_timeline_at_its_stage_and_rank():
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await _keys(app, pilot, "2")
        finding = app.query_one("#pane-findings").current
        assert finding["stage"]
        await _keys(app, pilot, "t")
        view = await _drawn(app, pilot)
        assert app.query_one(TabbedContent).active == "timeline"
        rank = finding["rank"]
        off = _offset(app.con, rank)
        a, b = app.con.execute("SELECT start_ns, end_ns FROM stage_windows WHERE rank = ? AND stage = ? "
                               "ORDER BY start_ns LIMIT 1", [rank, finding["stage"]]).fetchone()
        t0, t1 = view.view.visible
        assert view.lane.rank == rank and t0 <= a - off and b - off <= t1
        assert view.view.cursor == (a - off) // view.view.w
        assert f"{finding['stage']} 1:" in screen_text(app)


def test_the_palette_has_the_timeline_entries():
    titles = [c.title for c in app_commands(NpuTuiApp(DEMO))]
    for title in ("Timeline: show", "Timeline: fit the whole run", "Timeline: next exposed comm",
                  "Timeline: select a range", "Timeline: align ranks on the collective under the cursor"):
        assert title in titles


@async_test
async def test_the_console_lists_the_range_views_with_their_arguments():
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await _keys(app, pilot, "7")
        await settle(app, pilot, rounds=4)
        browser = app.query_one(SchemaBrowser)
        labels = [str(node.label) for node in browser.root.children]
        for name in ("timeline_range(r, t0, t1)", "range_operators(r, t0, t1)", "range_kernels(r, t0, t1)"):
            assert f"{name}  view with arguments" in labels
        node = browser.root.children[labels.index("timeline_range(r, t0, t1)  view with arguments")]
        assert str(node.children[0].label).startswith("timeline_range(r, t0, t1): what a Timeline selection holds")
        # after the views they are built from
        assert labels.index("timeline_spans  view") < labels.index("timeline_range(r, t0, t1)  view with arguments")


@async_test
async def test_a_timeline_built_before_its_first_layout_fits_the_width_it_gets():
    # The pane mounts and its build starts at once: a fast build (the demo from its cache) can be in
    # before the first layout, when the widget has no width. Fitted then, the run had 8 columns and
    # the resize after kept that scale: the demo's 2.6 s over 39.6 s at 120 columns.
    from textual.app import App
    from textual.containers import Container

    from npu_tui.session import Session

    session = Session.load(DEMO, cache=False)
    session.analyse()

    class Hidden(App):
        trace_loading = False  # what _drawn waits on in the real app

        def compose(self):
            with Container(id="box") as box:
                box.display = False
                yield TimelineView()

    app = Hidden()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TimelineView)
        view.load(session.profile.con, {})
        await settle(app, pilot)
        assert view.timeline is not None and view.size.width == 0  # built, not laid out
        view.show_at(1, "VAE")  # asked before it is placed: framed once it is
        app.query_one("#box").display = True
        view = await _drawn(app, pilot)
        assert view.view.n == SIZE[0] - LABEL
        fitted = Viewport.fit(*view.timeline.extent, view.view.n)
        assert view.view.fit_w == fitted.fit_w  # the whole run across the width
        vae = next(w for w in view.timeline.windows(1) if w.label == "VAE 1")
        v = view.view
        assert view.lane.rank == 1 and v.zoom > 0 and v.b0 * v.w <= vae.start_ns < vae.end_ns <= (v.b0 + v.n) * v.w


def test_a_short_kernel_stays_visible_zoomed_out(tmp_path):
    from npu_tui.analysis.timeline import Cell, Lane
    from npu_tui.tui.timeline_draw import Frame, draw

    view = Viewport.fit(0, 1_000_000_000, 50)  # 20 ms a column
    lane = Lane(0, 10, "stream 1", 1)
    two_us = Cell("Vector", 2_000, 1)
    cells = [None] * view.n
    cells[7] = two_us
    cells[9] = Cell("FA", view.w, 3)  # a full column
    line = draw(Frame(view, {(0, 10): tuple(cells)}, {}), [lane], 2).plain.splitlines()[1]
    assert line[LABEL + 7] == "▁" and line[LABEL + 9] == "█" and line[LABEL + 8] == " "


@async_test
async def test_g_aligns_on_the_collective_under_the_cursor_and_back():
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        view = await _timeline(app, pilot)
        # the first comm stream lane of rank 0, the cursor on its first collective
        lane = next(i for i, lane in enumerate(view.lanes) if lane.kind == "stream" and lane.stream_id is None)
        await _keys(app, pilot, *["down"] * (lane - view.view.lane))
        assert view.lane.label == "no stream"
        await _keys(app, pilot, "n", "w", "w", "w")
        assert view.frame.under_cursor and view.frame.under_cursor["is_comm"]
        await _keys(app, pilot, "g")
        await _drawn(app, pilot)
        assert view.timeline.alignment.startswith("aligned on the end of hcom_")
        assert view.timeline.alignment in screen_text(app)
        await _keys(app, pilot, "g")
        await _drawn(app, pilot)
        assert view.timeline.alignment == "aligned by step start"


@async_test
async def test_one_rank_without_stream_ids_draws_and_takes_every_key():
    app = NpuTuiApp(ROOT / "fixtures" / "level0")
    async with app.run_test(size=(80, 24)) as pilot:
        view = await _timeline(app, pilot)
        assert {lane.rank for lane in view.lanes} == {0}
        for key in ("w", "d", "a", "s", "right", "left", "up", "down", "n", "right_square_bracket",
                    "left_square_bracket", "0", "space", "right", "space", "g", "escape"):
            await _keys(app, pilot, key)
        assert view.frame is not None and "r0  stage" in screen_text(app)


@async_test
async def test_the_lanes_scrolled_to_and_those_a_taller_terminal_shows_are_drawn():
    # A redraw buckets the ranks on screen only: rank 1 is drawn once scrolled to or made room for.
    app = NpuTuiApp(DEMO)
    async with app.run_test(size=(120, 16)) as pilot:
        view = await _timeline(app, pilot)
        shown = view.lanes[view.view.top:view.view.top + view.lane_rows]
        assert {lane.rank for lane in shown} == {0}
        assert {rank for rank, _ in view.frame.cells} == {0}
        assert "r1  stage" not in screen_text(app)

        first_of_1 = next(i for i, lane in enumerate(view.lanes) if lane.rank == 1)
        await _keys(app, pilot, *["down"] * (first_of_1 - view.view.lane + 1))
        view = await _drawn(app, pilot)
        assert view.lane.rank == 1 and 1 in {rank for rank, _ in view.frame.cells}
        assert any(view.frame.cells[1, 1])  # the profiler's Computing lane, through the run
        assert "r1  stage" in screen_text(app)

        # Made taller on the last lane, the lanes above come down into the room, no blank rows.
        await _keys(app, pilot, *["down"] * len(view.lanes))
        await pilot.resize_terminal(120, 24)
        view = await _drawn(app, pilot)
        assert view.view.top == max(0, len(view.lanes) - view.lane_rows)
        await pilot.resize_terminal(120, 16)
        await _keys(app, pilot, *["up"] * len(view.lanes))  # back to the top, rank 1 below the fold
        view = await _drawn(app, pilot)  # (its redraw can come after the keys settle, on a busy machine)
        assert {rank for rank, _ in view.frame.cells} == {0}
        await pilot.resize_terminal(120, 40)
        view = await _drawn(app, pilot)
        assert view.rows_asked == view.lane_rows and {rank for rank, _ in view.frame.cells} == {0, 1}
        assert "r1  stage" in screen_text(app)


@async_test
async def test_a_rank_not_loaded_whole_is_marked_on_its_lanes(rank1_cut):
    # Rank 1's kernel_details.csv cut mid-row: its lanes stop where what loaded stops. The Ranks and
    # Comm panes marked it; here it read as a whole rank that ran less.
    app = NpuTuiApp(rank1_cut)
    async with app.run_test(size=SIZE) as pilot:
        view = await _timeline(app, pilot)
        assert view.apart == {1: "not loaded whole"}
        labels = [line[:LABEL] for line in screen_text(app).splitlines()]
        assert any(label.startswith("r0  stage") for label in labels)
        assert any(label.startswith("r1✕ stage") for label in labels)
        assert view.lane.rank == 0 and "\n r0 " in screen_text(app) and "✕" not in screen_text(app).split("\n r0 ")[1][:40]
        await _keys(app, pilot, *["down"] * sum(lane.rank == 0 for lane in view.lanes))
        assert view.lane.rank == 1
        assert f"\n r1 {view.lane.label}: ✕ not loaded whole (h says why) · " in screen_text(app)
