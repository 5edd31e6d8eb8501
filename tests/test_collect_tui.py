"""The collection log and Diff panes in a small app: a run that fails, one cancelled by escape,
one that succeeds and is compared with the run before."""

import asyncio
import json
import textwrap
import time
from pathlib import Path

from rich.console import Console
from textual.app import App
from textual.widgets import RichLog

from npu_tui.analysis.diff import compare
from npu_tui.collect import CollectSpec
from npu_tui.collect import runner
from npu_tui.tui.collect import CollectLog, DiffView
from npu_tui.tui.collect.diff_view import diff_renderable
from test_collect_runner import _alive
from test_diff import _runs
from tui_support import async_test

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
        assert msg.result.status == "failed" and msg.profile is None and msg.diff is None
        assert msg.result.error == "ValueError: latent shape mismatch"
        assert log.status.startswith("failed: ValueError: latent shape mismatch")
        assert 'raise ValueError("latent shape mismatch")' in _log_text(app)
        assert not log.running and app.is_running


@async_test
async def test_escape_cancels_and_kills_the_child(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "CANCEL_GRACE_S", 0.5)
    wl = _workload(tmp_path, """
        import time

        def build():
            return lambda: time.sleep(0.3)
    """)
    app = Harness()
    async with app.run_test(size=SIZE) as pilot:
        log = app.query_one(CollectLog)
        log.start(CollectSpec(workload=str(wl)), tmp_path / "prof")
        await _until(pilot, lambda: log.status.startswith("warm-up"))
        pid = log._collection.pid
        app.query_one(RichLog).focus()
        await pilot.press("escape")
        await _until(pilot, lambda: app.finished)
        assert app.finished[0].result.status == "cancelled"
        assert log.status.startswith("cancelled")
        end = time.monotonic() + 5
        while _alive(pid) and time.monotonic() < end:
            await asyncio.sleep(0.05)
        assert not _alive(pid)


def _earlier_run(root: Path, step_us) -> Path:
    """A finished run holding a small hand-written Kineto trace with these step durations."""
    d = runner.new_run_dir(root)
    events, t = [], 0
    for i, dur in enumerate(step_us):
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "ts": t,
                       "dur": dur, "pid": 1, "tid": 1})
        t += dur + 10
    (d / "host.1.pt.trace.json").write_text(json.dumps({"traceEvents": events}))
    runner._write_record(d, {"status": "ok", "workload": {"demo": True}})
    return d


@async_test
async def test_successful_run_is_loaded_and_compared(tmp_path):
    root = tmp_path / "prof"
    earlier = _earlier_run(root, [40000, 40200, 39800, 40100, 39900])
    app = Harness()
    async with app.run_test(size=SIZE) as pilot:
        log = app.query_one(CollectLog)
        log.start(CollectSpec(demo=True), root)
        await _until(pilot, lambda: app.finished, timeout=90)
        (msg,) = app.finished
        assert msg.result.status == "ok", msg.result.error or msg.error
        assert msg.error == "" and msg.profile is not None and msg.report is not None
        d = msg.diff
        assert d["base"]["path"] == str(earlier) and d["new"]["path"] == str(msg.result.run_dir)
        assert (d["base"]["steps"], d["new"]["steps"]) == (5, 5)
        assert d["verdict"]["base_step_us"] == 40000.0
        assert log.status == f"collected ({msg.result.run_dir})"
        view = app.query_one(DiffView)
        view.show(d)
        await pilot.pause()
        assert view.diff is d


def test_diff_renderable_shows_verdict_findings_and_operators():
    base, new = _runs()
    new.step_us = [90.0, 91.0, 89.0, 92.0, 88.0]
    console = Console(width=120, record=True, color_system=None)
    console.print(diff_renderable(compare(base, new)))
    text = console.export_text()
    assert "faster: step 0.100 ms -> 0.090 ms (-0.010 ms, -10.0%)" in text
    assert "▲ appeared vector_high rank 0 DiT" in text
    assert "▼ cleared  fa_high rank 1 DiT" in text
    assert "still    matmul_high rank 0 DiT: 0.600 → 0.550" in text
    # Operator A per step: 500 µs / 5 steps before, 200 µs / 5 steps after.
    assert any(line.split()[:4] == ["A", "100.0us", "40.0us", "-60.0us"] for line in text.splitlines())
