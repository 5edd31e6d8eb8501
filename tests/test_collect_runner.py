"""The collection runner: run folders, records, failures, cancel with no stray processes."""

import json
import re
import shlex
import sys
import textwrap
import time
from pathlib import Path

import pytest

from npu_tui.collect import runner
from npu_tui.collect.runner import (Collection, CollectError, CollectSpec, list_runs, new_run_dir,
                                    previous_run, read_record)

FAKE = Path(__file__).resolve().parent / "fake_torch_npu"


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for a reaper (containers may lack one)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _gone(pid: int, within: float = 5.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _workload(tmp_path: Path, body: str) -> Path:
    f = tmp_path / "workload.py"
    f.write_text(textwrap.dedent(body))
    return f


def _earlier_ok_run(root: Path) -> Path:
    """A finished run as an earlier collection leaves it; later runs must not touch it."""
    d = new_run_dir(root)
    (d / "trace.pt.trace.json").write_text('{"traceEvents": []}')
    runner._write_record(d, {"status": "ok", "workload": {"demo": True}})
    return d


def _snapshot(d: Path) -> dict:
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in d.iterdir()}


def test_run_folders_are_new_every_time(tmp_path):
    dirs = [new_run_dir(tmp_path) for _ in range(3)]
    assert len(set(dirs)) == 3 and all(d.is_dir() for d in dirs)
    assert all(re.fullmatch(r"run_\d{8}_\d{6}_\d{2}", d.name) for d in dirs)


def test_spec_needs_exactly_one_workload_and_five_steps():
    with pytest.raises(CollectError):
        CollectSpec()
    with pytest.raises(CollectError):
        CollectSpec(demo=True, workload="w.py")
    with pytest.raises(CollectError, match="at least 5"):
        CollectSpec(demo=True, steps=3)


def test_command_line_workload_records_a_repeatable_command(tmp_path):
    script = tmp_path / "pipeline.py"
    script.write_text(textwrap.dedent("""
        import npu_tui
        from npu_tui.collect import profile_steps

        def step():
            with npu_tui.stage("DiT"):
                sum(range(1000))

        print("pipeline ready")
        profile_steps(step)
    """))
    spec = CollectSpec(command=[sys.executable, str(script)], steps=5, cwd=str(tmp_path))
    events = []
    result = Collection(spec, tmp_path / "prof", on_event=events.append).run()

    assert result.status == "ok", result.error
    assert result.backend == "cpu"
    traces = list(result.run_dir.glob("*.pt.trace.json"))
    assert len(traces) == 1
    names = [e["name"] for e in json.loads(traces[0].read_text())["traceEvents"] if "name" in e]
    assert names.count("npu_tui:stage:DiT") == 5
    assert sorted(n for n in names if n.startswith("ProfilerStep#")) == [f"ProfilerStep#{i}" for i in range(5)]
    assert {"phase": "log", "text": "pipeline ready"} in events
    assert "pipeline ready" in (result.run_dir / runner.LOG_FILE).read_text()

    record = read_record(result.run_dir)
    assert record["status"] == "ok" and record["returncode"] == 0
    assert record["command"] == ["npu-tui", "collect", "--cmd", shlex.join(spec.command),
                                 "--out", str(tmp_path / "prof"), "--steps", "5"]
    assert CollectSpec.from_record(record) == spec
    assert list_runs(tmp_path / "prof") == [result.run_dir]


def test_workload_that_raises_keeps_earlier_run_and_says_why(tmp_path):
    root = tmp_path / "prof"
    earlier = _earlier_ok_run(root)
    before = _snapshot(earlier)
    wl = _workload(tmp_path, """
        def build():
            def step():
                raise RuntimeError("out of memory in the VAE")
            return step
    """)
    result = Collection(CollectSpec(workload=str(wl)), root).run()

    assert result.status == "failed" and result.returncode == 1
    assert result.error == "RuntimeError: out of memory in the VAE"
    log = (result.run_dir / runner.LOG_FILE).read_text()
    assert "Traceback" in log and 'raise RuntimeError("out of memory in the VAE")' in log
    assert read_record(result.run_dir)["status"] == "failed"
    assert _snapshot(earlier) == before
    assert previous_run(root) == earlier


def test_workload_without_build_is_reported(tmp_path):
    wl = _workload(tmp_path, "STEPS = 3\n")
    result = Collection(CollectSpec(workload=str(wl)), tmp_path / "prof").run()
    assert (result.status, result.error) == ("failed", "workload.py defines no build() function")


def test_command_that_writes_no_profile_fails(tmp_path):
    spec = CollectSpec(command=[sys.executable, "-c", "print('forgot the profiler')"])
    result = Collection(spec, tmp_path / "prof").run()
    assert result.status == "failed" and "wrote no profile" in result.error


def test_cancel_kills_the_whole_process_group(tmp_path, monkeypatch):
    # The workload ignores SIGTERM (as some runtimes do) and starts a grandchild of its own.
    monkeypatch.setattr(runner, "CANCEL_GRACE_S", 0.5)
    pids = tmp_path / "pids"
    wl = _workload(tmp_path, f"""
        import os, signal, subprocess, time

        def build():
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            sleeper = subprocess.Popen(["sleep", "60"])
            open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{sleeper.pid}}")
            return lambda: time.sleep(0.2)
    """)
    root = tmp_path / "prof"
    earlier = _earlier_ok_run(root)
    before = _snapshot(earlier)
    col = Collection(CollectSpec(workload=str(wl)), root,
                     on_event=lambda e: e["phase"] == "warmup" and col.cancel())
    t0 = time.monotonic()
    result = col.run()

    assert result.status == "cancelled" and result.error == "cancelled"
    assert time.monotonic() - t0 < 30
    child, grandchild = map(int, pids.read_text().split())
    assert child == col.pid
    assert _gone(child) and _gone(grandchild)
    assert read_record(result.run_dir)["status"] == "cancelled"
    assert _snapshot(earlier) == before
    assert previous_run(root) == earlier


def test_workload_through_the_child_on_fake_torch_npu(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(FAKE))
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", "/usr/local/Ascend/ascend-toolkit/latest")
    # The fake registers no "npu" device, so the step stays on the CPU.
    wl = _workload(tmp_path, """
        import npu_tui

        def build():
            def step():
                with npu_tui.stage("DiT"):
                    sum(range(1000))
            return step
    """)
    phases = []
    result = Collection(CollectSpec(workload=str(wl), steps=5), tmp_path / "prof",
                        on_event=lambda e: phases.append(e["phase"])).run()

    assert result.status == "ok", result.error
    assert result.backend == "torch_npu"
    (rank_dir,) = result.run_dir.glob("*_ascend_pt")
    assert json.loads((rank_dir / "profiler_info.json").read_text()) == {"recorded_steps": 5}
    assert [p for p in phases if p != "log"] == (["build", "backend"] + ["warmup"] * 2
                                                 + ["step"] * 5 + ["export", "done"])


def test_missing_cann_environment_fails_before_building(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(FAKE))
    for var in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"):
        monkeypatch.delenv(var, raising=False)
    phases = []
    result = Collection(CollectSpec(demo=True), tmp_path / "prof",
                        on_event=lambda e: phases.append(e["phase"])).run()
    assert result.status == "failed"
    assert result.error == ("torch_npu is installed but the CANN environment is not set: "
                            "run `source /usr/local/Ascend/ascend-toolkit/set_env.sh` first")
    assert phases == ["error"]


def test_the_run_is_loaded_once_the_profilers_parse_has_finished(tmp_path, monkeypatch):
    """torch_npu's parse can run on after the workload returns (async_mode): the collection waits
    for it (and does not kill it with the workload's leftovers) before the run is loaded."""
    monkeypatch.setenv("PYTHONPATH", str(FAKE))
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", "/usr/local/Ascend/ascend-toolkit/latest")
    monkeypatch.setenv("FAKE_TORCH_NPU_ASYNC_PARSE", "1.5")
    wl = _workload(tmp_path, """
        def build():
            return lambda: sum(range(1000))
    """)
    phases = []
    result = Collection(CollectSpec(workload=str(wl), steps=5), tmp_path / "prof",
                        on_event=lambda e: phases.append(e["phase"])).run()
    assert result.status == "ok", result.error
    (rank_dir,) = result.run_dir.glob("*_ascend_pt")
    assert (rank_dir / "ASCEND_PROFILER_OUTPUT" / "analyse.done").is_file()
    assert "profiler_parse" in phases
    from npu_tui.profile import load_profile
    assert load_profile(result.run_dir).con.execute("SELECT count(*) FROM kernels").fetchone() == (1,)
