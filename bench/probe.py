"""What one benchmark child process measures, printed as one JSON object on stdout.

    python bench/probe.py breakdown PROFILE   # a cold load, step by step (cache dir must be empty)
    python bench/probe.py queries PROFILE     # the panes' grid queries on a reopened profile
    python bench/probe.py timeline PROFILE    # the Timeline's redraws at 200 columns, reopened

Run by bench/run.py in a fresh interpreter each time, so every figure includes nothing an earlier
measurement left warm in the process.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUERY_RUNS = 5


def _timed(fn):
    t = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t


def breakdown(path: Path) -> dict:
    """The CLI's cold path (load, views, cache write, report) with each step timed on its own."""
    from npu_tui.analysis import build_report, ensure_views, load_rules
    from npu_tui.profile import load_profile

    profile, t_load = _timed(lambda: load_profile(path, cache=True))
    rules = load_rules()
    _, t_views = _timed(lambda: ensure_views(profile.con, rules))
    _, t_cache = _timed(profile.save_cache)
    report, t_report = _timed(lambda: build_report(profile, rules))
    files = profile.con.execute(
        "SELECT file, rows, skipped_rows, seconds FROM load_log WHERE rows > 0 ORDER BY seconds DESC"
    ).fetchall()
    return {
        "load_s": t_load, "install_views_s": t_views, "cache_write_s": t_cache,
        "build_report_s": t_report,
        "kernels": profile.con.execute("SELECT count(*) FROM kernels").fetchone()[0],
        "findings": len(report["findings"]),
        "files": [{"file": Path(f).name, "rank_dir": Path(f).parent.parent.name, "rows": r,
                   "skipped": s, "seconds": sec} for f, r, s, sec in files],
    }


def _grid_statements(cur, query) -> int:
    """What PagedTable does when a grid opens: materialise the sorted query, count, read a sample."""
    from npu_tui.tui.grid import SAMPLE_ROWS

    sql, params = query.effective()
    cur.execute(f"CREATE OR REPLACE TEMP TABLE _bench_grid AS {sql}", params)
    total = cur.execute("SELECT count(*) FROM _bench_grid").fetchone()[0]
    cur.execute("SELECT * FROM _bench_grid WHERE rowid < ?", [SAMPLE_ROWS]).fetchall()
    return total


def queries(path: Path) -> dict:
    """Median time of each pane query a user opens first, on a profile reopened from the cache."""
    from npu_tui.analysis import ensure_views, load_rules
    from npu_tui.profile import load_profile
    from npu_tui.tui.grid import GridQuery
    from npu_tui.tui.grids import operator_types, operators_of_type

    profile, t_open = _timed(lambda: load_profile(path, cache=True))
    _, t_views = _timed(lambda: ensure_views(profile.con, load_rules()))
    cur = profile.con.cursor()
    types = operator_types()
    # The type the Operators grid shows first (largest total time) is the one a user drills into.
    sql, params = types.query.effective()
    top_type = cur.execute(f"SELECT type FROM ({sql}) LIMIT 1", params).fetchone()[0]
    steps = [
        ("group by type", types.query),
        (f"drill to one type by shape ({top_type})", operators_of_type({"type": top_type}).query),
        ("stage rollup (stage_categories)", GridQuery("Stages", "stage_categories", (), sort="time_us")),
    ]
    out = {"open_s": t_open, "install_views_s": t_views, "queries": []}
    for label, query in steps:
        times, rows = [], 0
        for _ in range(QUERY_RUNS):
            rows, t = _timed(lambda: _grid_statements(cur, query))
            times.append(t)
        out["queries"].append({"query": label, "rows": rows, "median_s": statistics.median(times),
                               "first_s": times[0], "runs": QUERY_RUNS})
    return out


TIMELINE_COLUMNS, TIMELINE_ROWS = 200, 60
TIMELINE_STEPS = 8


def timeline(path: Path) -> dict:
    """The Timeline as the pane drives it, at 200 columns: its first open (the drawing table), the
    fit, then redraws, each the worker's query (``frame_for``) and the drawing (``draw``): zooming
    in around the middle (a new level each time), panning there (new columns each time), zooming
    back out (levels already computed) and panning half-way zoomed out (the dearest pan)."""
    from npu_tui.analysis import ensure_views, load_rules
    from npu_tui.analysis.timeline import Timeline
    from npu_tui.profile import load_profile
    from npu_tui.tui.timeline_draw import Viewport, draw, frame_for

    profile = load_profile(path, cache=True)
    ensure_views(profile.con, load_rules())
    tl, t_build = _timed(lambda: Timeline(profile.con.cursor()))
    lane = next(i for i, lane in enumerate(tl.lanes) if lane.kind == "stream")

    def redraw(v) -> float:
        return _timed(lambda: draw(frame_for(tl, v, TIMELINE_ROWS - 1), tl.lanes, TIMELINE_ROWS))[1]

    v = Viewport.fit(*tl.extent, TIMELINE_COLUMNS, lane=lane)
    fit = redraw(v)
    v = v.moved(TIMELINE_COLUMNS // 2)
    runs = {"zoom_in": [], "pan": [], "zoom_out": [], "pan_half": []}
    for _ in range(TIMELINE_STEPS):
        v = v.zoomed(1)
        runs["zoom_in"].append(redraw(v))
    for _ in range(TIMELINE_STEPS):
        v = v.panned(TIMELINE_COLUMNS // 4)
        runs["pan"].append(redraw(v))
    for _ in range(TIMELINE_STEPS - 1):
        v = v.zoomed(-1)
        runs["zoom_out"].append(redraw(v))
    for _ in range(TIMELINE_STEPS):
        v = v.panned(TIMELINE_COLUMNS // 4)
        runs["pan_half"].append(redraw(v))
    return {"build_s": t_build, "fit_s": fit, "lanes": len(tl.lanes), "columns": TIMELINE_COLUMNS, **runs}


def main() -> int:
    what, path = sys.argv[1], Path(sys.argv[2])
    result = {"breakdown": breakdown, "queries": queries, "timeline": timeline}[what](path)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
