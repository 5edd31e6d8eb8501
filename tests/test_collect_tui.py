"""The collection log and Diff panes: a run that fails (in a small app), and in the real app `c`
repeating the open run and comparing it with it, and escape cancelling a run."""

import asyncio
import json
import sys
import textwrap
import time
from dataclasses import asdict
from pathlib import Path

from rich.console import Console
from textual.app import App
from textual.widgets import RichLog, TabbedContent

from npu_tui.analysis.diff import compare
from npu_tui.collect import CollectSpec
from npu_tui.collect import runner
from npu_tui.tui.panes.collect import CollectLog
from npu_tui.tui.screens.collect_confirm import SHOWN_S, CollectConfirm
from npu_tui.tui.panes.diff import DiffView
from npu_tui.tui.app import NpuTuiApp
from npu_tui.tui.panes.diff import diff_renderable
from test_collect_runner import _alive
from test_diff import _runs
from tui_support import async_test, screen_text, settle

SIZE = (110, 30)


class Harness(App):
    def __init__(self):
        super().__init__()
        self.finished = []

    def compose(self):
        yield CollectLog(id="log")
        yield DiffView(id="diff")

    def on_collect_log_finished(self, msg):
        self.finished.append(msg)


async def _until(pilot, cond, timeout=60.0):
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        await pilot.pause(0.05)


def _log_text(app) -> str:
    return "\n".join(line.text for line in app.query_one(RichLog).lines)


def _workload(tmp_path, body):
    f = tmp_path / "workload.py"
    f.write_text(textwrap.dedent(body))
    return f


@async_test
async def test_failing_workload_shows_why_and_app_stays(tmp_path):
    wl = _workload(tmp_path, """
        def build():
            def step():
                raise ValueError("latent shape mismatch")
            return step
    """)
    app = Harness()
    async with app.run_test(size=SIZE) as pilot:
        log = app.query_one(CollectLog)
        assert log.start(CollectSpec(workload=str(wl)), tmp_path / "prof")
        await _until(pilot, lambda: app.finished)
        (msg,) = app.finished
        assert msg.result.status == "failed" and msg.session is None and msg.diff is None
        assert msg.result.error == "ValueError: latent shape mismatch"
        assert log.status.startswith("failed: ValueError: latent shape mismatch")
        assert 'raise ValueError("latent shape mismatch")' in _log_text(app)
        assert not log.running and app.is_running


# A stand-in for a profiled workload: speaks the child's progress protocol and writes a Kineto trace
# of the given step durations, without torch, so a collection takes a fraction of a second.
FAKE_WORKLOAD = """
import json, os, sys, time
from pathlib import Path
from npu_tui.collect.progress import emit

step_us, pause = json.loads(sys.argv[1]), float(sys.argv[2])
emit("backend", name="fake")
emit("build")
for i in (1, 2):
    emit("warmup", step=i, of=2)
    time.sleep(pause)
events, t = [], 0
for i, dur in enumerate(step_us, 1):
    emit("step", step=i, of=len(step_us))
    print(f"step {i} ran", flush=True)
    time.sleep(pause)
    events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "ts": t,
                   "dur": dur, "pid": 1, "tid": 1})
    t += dur + 10
emit("export")
Path(os.environ["NPU_TUI_OUT"], "host.1.pt.trace.json").write_text(json.dumps({"traceEvents": events}))
emit("done")
"""


def _steps_run(root: Path, step_us, spec: CollectSpec) -> Path:
    """A finished run of ``spec`` holding a Kineto trace with these step durations."""
    d = runner.new_run_dir(root)
    events, t = [], 0
    for i, dur in enumerate(step_us):
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "ts": t,
                       "dur": dur, "pid": 1, "tid": 1})
        t += dur + 10
    (d / "host.1.pt.trace.json").write_text(json.dumps({"traceEvents": events}))
    runner._write_record(d, {"status": "ok", "workload": asdict(spec)})
    return d


def _fake_spec(tmp_path, step_us, pause: float) -> CollectSpec:
    script = tmp_path / "fake_workload.py"
    script.write_text(FAKE_WORKLOAD)
    return CollectSpec(command=[sys.executable, str(script), json.dumps(step_us), str(pause)])


def _notes(app):
    return [n.message for n in app._notifications]


@async_test
async def test_c_collects_the_open_run_again_and_shows_the_diff(tmp_path, monkeypatch):
    root = tmp_path / "prof"
    spec = _fake_spec(tmp_path, [30000, 30100, 29900, 30200, 29800], pause=0.05)
    earlier = _steps_run(root, [40000, 40200, 39800, 40100, 39900], spec)
    before = {p.name: p.read_bytes() for p in earlier.iterdir()}
    statuses = []
    shown = CollectLog._status
    monkeypatch.setattr(CollectLog, "_status", lambda self, text: (statuses.append(text), shown(self, text)))
    app = NpuTuiApp(earlier)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.profile is not None
        await pilot.press("c")
        assert isinstance(app.screen, CollectConfirm)  # nothing runs before enter
        assert "collect" not in app.panes.built
        await pilot.pause(SHOWN_S)  # (an enter sooner is taken for one typed ahead)
        await pilot.press("enter")
        await pilot.pause()
        log = app.query_one(CollectLog)
        assert app.query_one(TabbedContent).active == "collect"
        await _until(pilot, lambda: statuses[-1].startswith("collected"))
        await settle(app, pilot)
        # The live status went through the recipe's phases.
        assert ["warm-up 1 of 2 (not profiled)", "warm-up 2 of 2 (not profiled)"] + \
            [f"profiled step {i} of 5" for i in range(1, 6)] == [s for s in statuses if " of " in s]
        assert "step 3 ran" in _log_text(app)
        (new,) = [d for d in runner.list_runs(root) if d != earlier]
        assert log.status == f"collected ({new})", log.status
        assert app.path == new and app.profile.path == new
        diff = app.query_one(DiffView).diff
        assert (diff["base"]["path"], diff["new"]["path"]) == (str(earlier), str(new))
        await pilot.press("9")
        await pilot.pause()
        # Mean step 40000 us before, 30000 us after (the durations above).
        line = "faster: step 40.000 ms -> 30.000 ms (-10.000 ms, -25.0%)"
        assert line in screen_text(app)
        assert any(line in n for n in _notes(app))
    assert {p.name: p.read_bytes() for p in earlier.iterdir()} == before


@async_test
async def test_escape_cancels_the_collection_and_kills_the_child(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "CANCEL_GRACE_S", 0.5)
    spec = _fake_spec(tmp_path, [30000] * 5, pause=0.5)
    earlier = _steps_run(tmp_path / "prof", [40000, 40200, 39800, 40100, 39900], spec)
    app = NpuTuiApp(earlier)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        profile = app.profile
        await pilot.press("c")
        await pilot.pause(SHOWN_S)
        await pilot.press("enter")
        await pilot.pause()
        log = app.query_one(CollectLog)
        await _until(pilot, lambda: log.status.startswith("warm-up"))
        pid = log._collection.pid
        await pilot.press("1", "escape")  # escape elsewhere is the way back, never a cancel
        await pilot.pause(0.3)
        assert log.running
        await pilot.press("8", "escape")
        await _until(pilot, lambda: not log.running)
        assert log.status.startswith("cancelled")
        assert app.profile is profile and app.path == earlier
        assert any("Collection cancelled" in n for n in _notes(app))
        end = time.monotonic() + 5
        while _alive(pid) and time.monotonic() < end:
            await asyncio.sleep(0.05)
        assert not _alive(pid)


def test_diff_renderable_shows_verdict_findings_and_operators():
    base, new = _runs()
    new.step_us = [90.0, 91.0, 89.0, 92.0, 88.0]
    console = Console(width=120, record=True, color_system=None)
    console.print(diff_renderable(compare(base, new)))
    text = console.export_text()
    assert "faster: step 0.100 ms -> 0.090 ms (-0.010 ms, -10.0%)" in text
    assert "▲ appeared vector_high DiT, rank 0" in text
    assert "▼ cleared  fa_high DiT, ranks 0, 1, worst 1" in text
    assert "still    matmul_high DiT, ranks 0, 1, worst 0: 60.0% → 55.0%" in text
    # Operator A per step: 500 µs / 5 steps before, 200 µs / 5 steps after.
    assert any(line.split()[:4] == ["A", "100.0us", "40.0us", "-60.0us"] for line in text.splitlines())
    assert "INCOMPLETE" not in text
    new.report["health"].append({"severity": "error", "file": "/runs/new/trace_view.json"})
    console.print(diff_renderable(compare(base, new)))
    assert "INCOMPLETE: the new run: 1 file could not be loaded" in console.export_text()
