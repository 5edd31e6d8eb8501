"""The §9 recipe on the torch_npu path, against a fake torch_npu that records every call."""

import json
import sys
from pathlib import Path

import pytest

from npu_tui.collect import recipe
from npu_tui.collect.recipe import RecipeError, profile_steps, select_backend

FAKE = Path(__file__).resolve().parent / "fake_torch_npu"


def _forget_torch_npu():
    for name in [m for m in sys.modules if m == "torch_npu" or m.startswith("torch_npu.")]:
        del sys.modules[name]


@pytest.fixture
def fake_npu(monkeypatch):
    _forget_torch_npu()
    monkeypatch.syspath_prepend(str(FAKE))
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", "/usr/local/Ascend/ascend-toolkit/latest")
    import torch_npu

    torch_npu.CALLS.clear()
    yield torch_npu
    _forget_torch_npu()


def _events(capsys):
    return [json.loads(line[len("@npu-tui "):]) for line in capsys.readouterr().out.splitlines()
            if line.startswith("@npu-tui ")]


def test_npu_recipe_arguments_and_order(fake_npu, tmp_path, capsys):
    calls = fake_npu.CALLS
    out = tmp_path / "run"

    written = profile_steps(lambda: calls.append(("workload.step", {})), out=out, steps=6)

    assert written == out
    by_name = {}
    for name, args in calls:
        by_name.setdefault(name, []).append(args)
    prof = by_name["profile"][0]
    P = fake_npu.profiler
    assert set(prof["activities"]) == {P.ProfilerActivity.CPU, P.ProfilerActivity.NPU}
    assert (prof["record_shapes"], prof["profile_memory"], prof["with_stack"]) == (True, True, False)
    assert by_name["schedule"] == [dict(wait=0, warmup=0, active=6, repeat=1, skip_first=0)]
    assert prof["schedule"].args == by_name["schedule"][0]
    assert by_name["tensorboard_trace_handler"][0]["dir_name"] == str(out)
    exp = prof["experimental_config"].kwargs
    assert (exp["profiler_level"], exp["aic_metrics"]) == (P.ProfilerLevel.Level1,
                                                           P.AiCMetrics.PipeUtilization)

    # 2 warm-up steps, each synchronized, before the profiler starts; then every profiled step
    # synchronized and closed by prof.step(); the trace is written once, by the 6th prof.step().
    order = [n for n, _ in calls if n in ("workload.step", "npu.synchronize", "profile.start",
                                          "profile.step", "profile.stop", "on_trace_ready")]
    assert order == (["workload.step", "npu.synchronize"] * 2 + ["profile.start"]
                     + ["workload.step", "npu.synchronize", "profile.step"] * 6
                     + ["on_trace_ready", "profile.stop"])
    ready = by_name["on_trace_ready"]
    assert len(ready) == 1 and ready[0]["recorded_steps"] == 6
    assert Path(ready[0]["dir"]).parent == out and Path(ready[0]["dir"]).name.endswith("_ascend_pt")

    events = _events(capsys)
    assert events[0] == {"phase": "backend", "name": "torch_npu"}
    assert [e["phase"] for e in events[1:]] == ["warmup"] * 2 + ["step"] * 6 + ["export", "done"]
    assert [e["step"] for e in events if e["phase"] == "step"] == [1, 2, 3, 4, 5, 6]


def test_fewer_than_five_steps_is_refused(fake_npu, tmp_path):
    with pytest.raises(RecipeError, match="at least 5"):
        profile_steps(lambda: None, out=tmp_path, steps=4)
    assert fake_npu.CALLS == []


def test_cann_environment_missing_says_what_to_source(fake_npu, monkeypatch):
    for var in recipe.CANN_ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(RecipeError, match="ascend-toolkit/set_env.sh"):
        select_backend()


def test_torch_npu_failing_to_import_names_the_cause(tmp_path, monkeypatch):
    _forget_torch_npu()
    pkg = tmp_path / "torch_npu"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        'raise ImportError("libhccl.so: cannot open shared object file: No such file or directory")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("ASCEND_HOME_PATH", "/nowhere")
    try:
        with pytest.raises(RecipeError) as err:
            select_backend()
    finally:
        _forget_torch_npu()
    assert "libhccl.so" in str(err.value) and "set_env.sh" in str(err.value)


def test_without_torch_npu_the_recipe_uses_torch_profiler():
    import torch

    assert select_backend().name == ("cuda" if torch.cuda.is_available() else "cpu")
