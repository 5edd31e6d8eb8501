"""End to end on the CPU: two real collections of the demo with torch.profiler, load, report, diff."""

import io
import json
import statistics
from contextlib import redirect_stdout

import pytest

from npu_tui.analysis import build_report, install_views, load_rules
from npu_tui.cli import main
from npu_tui.collect import list_runs, read_record
from npu_tui.profile import load_profile


# A CPU-only Kineto trace has no device events, and the Kineto loader writes none of its CPU ops
# to `kernels` yet, so stages and categories come out empty; these tests pass once it does.


def _trace(run_dir):
    """The trace's events, with ``ts`` made absolute: torch writes it relative to
    ``baseTimeNanoseconds``."""
    (trace,) = run_dir.glob("*.pt.trace.json")
    doc = json.loads(trace.read_text())
    base_us = doc.get("baseTimeNanoseconds", 0) / 1e3
    return [{**e, "ts": e["ts"] + base_us} if "ts" in e else e for e in doc["traceEvents"]]


def _ranges(events, name):
    """(start µs, end µs) of every complete event with this name, straight from the trace file."""
    return [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") == name and e.get("ph") == "X"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("prof")
    outputs = []
    for _ in range(2):
        buf = io.StringIO()
        with redirect_stdout(buf):
            rc = main(["collect", "--demo", "--out", str(root)])
        assert rc == 0
        outputs.append(buf.getvalue())
    return root, list_runs(root, "ok"), outputs


def test_two_collections_make_two_recorded_runs(runs):
    root, dirs, _ = runs
    assert len(dirs) == 2 and dirs[0] != dirs[1]
    for d in dirs:
        rec = read_record(d)
        assert rec["backend"] == "cpu" and rec["returncode"] == 0
        assert rec["command"] == ["npu-tui", "collect", "--demo", "--out", str(root), "--steps", "5"]
        names = [e.get("name") for e in _trace(d)]
        assert sorted(n for n in names if n.startswith("ProfilerStep#")) == [f"ProfilerStep#{i}" for i in range(5)]
        assert names.count("npu_tui:stage:DiT") == 5 and names.count("npu_tui:stage:VAE") == 5


def test_report_finds_dit_and_vae_through_the_markers(runs):
    _, dirs, _ = runs
    rules = load_rules()
    profile = load_profile(dirs[0])
    install_views(profile.con, rules)
    report = build_report(profile, rules)
    events = _trace(dirs[0])

    stages = {s["stage"]: s for s in report["stages"]}
    assert {"DiT", "VAE"} <= set(stages)
    for name in ("DiT", "VAE"):
        s = stages[name]
        marks = _ranges(events, f"npu_tui:stage:{name}")
        assert s["method"] == "markers"
        # The stage lies inside its markers, and is busy for no longer than they last (1 µs
        # slack: a double holding 1.8e15 µs is exact to about 0.25 µs).
        assert s["start_us"] >= min(a for a, _ in marks) - 1.0
        assert s["end_us"] <= max(b for _, b in marks) + 1.0
        assert 0 < s["kernel_time_us"] and s["wall_us"] <= sum(b - a for a, b in marks) + 1.0

    cats = report["categories"]
    for name in ("DiT", "VAE"):
        rows = [c for c in cats if c["stage"] == name and c["time_us"] > 0]
        assert rows, f"no categories in {name}"
        assert sum(c["share"] for c in rows) == pytest.approx(1.0)
    present = {(c["stage"], c["category"]) for c in cats if c["time_us"] > 0}
    # What the demo runs: the DiT's patch-embed conv, linears and SDPA; the VAE's convs, norms
    # and its attention block.
    assert {("DiT", "Conv"), ("DiT", "MatMul"), ("DiT", "FA"), ("VAE", "Conv"), ("VAE", "Vector"),
            ("VAE", "FA")} <= present


def test_second_collection_is_compared_with_the_first(runs, capsys):
    _, dirs, outputs = runs
    assert "Verdict:" not in outputs[0]
    assert "Verdict: " in outputs[1] and str(dirs[0]) in outputs[1] and str(dirs[1]) in outputs[1]

    assert main(["diff", str(dirs[0]), str(dirs[1]), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [d[k]["steps"] + d[k]["left_out"] for k in ("base", "new")] == [5, 5]
    # From `dur` itself: end - start of absolute float µs (~1.7e15) is quantised to 0.25 µs.
    events = _trace(dirs[0])
    base_steps = [e["dur"] for i in range(5) for e in events
                  if e.get("name") == f"ProfilerStep#{i}" and e.get("ph") == "X"]
    # A loaded machine can make the first steps warm-up outliers (over warmup_factor x the median): left out.
    median, factor = statistics.median(base_steps), load_rules().data["steps"]["warmup_factor"]
    while base_steps and base_steps[0] > factor * median:
        base_steps.pop(0)
    v = d["verdict"]
    assert v["verdict"] in ("faster", "slower", "within noise")
    assert d["base"]["steps"] == len(base_steps)
    assert v["base_step_us"] == pytest.approx(statistics.fmean(base_steps), rel=1e-6)
    assert v["noise_us"] > 0


def test_diff_has_stage_and_operator_rows(runs, capsys):
    _, dirs, _ = runs
    assert main(["diff", str(dirs[0]), str(dirs[1]), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {("DiT", 0), ("VAE", 0)} <= {(s["stage"], s["rank"]) for s in d["stages"]}
    assert d["operators"] and all(o["base_us"] or o["new_us"] for o in d["operators"])


def test_the_folder_of_runs_opens_its_newest_run(runs, capsys):
    """`collect --demo --out D` then `report D` / `npu-tui D`: the usage line works on its own output."""
    root, dirs, _ = runs
    assert main(["report", str(root), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["complete"]
    assert f"opened the newest complete one, {dirs[-1].name}" in captured.err
    assert main(["report", str(root), "--run", dirs[0].name, "--format", "json"]) == 0
    assert f"run {dirs[0].name} of {root}" in capsys.readouterr().err
    assert main(["report", str(root), "--run", "run_nope"]) == 2
    assert "no run run_nope; the runs are" in capsys.readouterr().err


def test_the_app_on_a_folder_of_runs_shows_the_newest_and_picks_another(runs):
    import asyncio

    from textual.widgets import OptionList

    from npu_tui.tui.app import NpuTuiApp
    from npu_tui.tui.screens.runs import PathPicker
    from tui_support import settle

    root, dirs, _ = runs

    async def journey():
        app = NpuTuiApp(root)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(app, pilot)
            assert app.session.path == dirs[-1] and dirs[-1].name in app.sub_title
            assert app.panes.active == "overview" and app.report["findings"] is not None
            await pilot.press("p")
            assert isinstance(app.screen, PathPicker)
            picker = app.screen.query_one(OptionList)
            assert [picker.get_option_at_index(i).prompt.plain.split()[0] for i in range(picker.option_count)] \
                == [d.name for d in reversed(dirs)]
            await pilot.press("down", "enter")
            await settle(app, pilot)
            assert app.session.path == dirs[0]

    asyncio.run(journey())
