"""The collection recipe of design.md §9, for one callable that runs one step of the workload.

2 warm-up steps, each followed by a device synchronize, run before the profiler starts so
compilation and first-touch allocation stay out of the trace. Then at least 5 profiled steps, each
synchronized and closed by ``prof.step()``, so every step carries a ``ProfilerStep#N`` range.

With torch_npu: the Ascend PyTorch Profiler with CPU + NPU activities, shapes and memory, no
stacks, Level1 (so kernel_details.csv carries Type and Accelerator Core), written by
``tensorboard_trace_handler`` as a full ``*_ascend_pt`` folder. Without it: ``torch.profiler`` on the
CPU (plus CUDA when present), written as a Kineto trace. Either way npu-tui loads the output like
any other profile.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ContextManager, Optional, Union

from . import progress

WARMUP_STEPS = 2
MIN_STEPS = 5
DEFAULT_OUT = "./prof_out"
CANN_SET_ENV = "source /usr/local/Ascend/ascend-toolkit/set_env.sh"
# set_env.sh exports these; torch_npu cannot load its libraries without them.
CANN_ENV_VARS = ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH")


class RecipeError(Exception):
    """The recipe cannot run as asked; the message says why in one line."""


@dataclass
class Backend:
    name: str  # "torch_npu", "cuda" or "cpu"
    device: str  # where the demo puts its tensors: "npu", "cuda" or "cpu"
    synchronize: Callable[[], None]
    profiler: Callable[[Path, int], ContextManager]


def _active_schedule(schedule, steps: int):
    # Warm-up already ran outside the profiler, so every scheduled step is recorded; torch warns
    # about a schedule without warm-up, which here is deliberate.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*warmup.*")
        return schedule(wait=0, warmup=0, active=steps, repeat=1)


def _npu_backend(torch_npu) -> Backend:
    p = torch_npu.profiler

    def profiler(out: Path, steps: int):
        experimental = p._ExperimentalConfig(
            profiler_level=p.ProfilerLevel.Level1,
            aic_metrics=p.AiCMetrics.PipeUtilization,
        )
        return p.profile(
            activities=[p.ProfilerActivity.CPU, p.ProfilerActivity.NPU],
            schedule=_active_schedule(p.schedule, steps),
            on_trace_ready=p.tensorboard_trace_handler(str(out)),
            record_shapes=True,
            profile_memory=True,
            with_stack=False,
            experimental_config=experimental,
        )

    return Backend("torch_npu", "npu", torch_npu.npu.synchronize, profiler)


def _torch_backend(torch) -> Backend:
    tp = torch.profiler
    cuda = torch.cuda.is_available()
    activities = [tp.ProfilerActivity.CPU] + ([tp.ProfilerActivity.CUDA] if cuda else [])

    def profiler(out: Path, steps: int):
        return tp.profile(
            activities=activities,
            schedule=_active_schedule(tp.schedule, steps),
            on_trace_ready=tp.tensorboard_trace_handler(str(out)),
            record_shapes=True,
            profile_memory=True,
            with_stack=False,
        )

    device = "cuda" if cuda else "cpu"
    return Backend(device, device, torch.cuda.synchronize if cuda else (lambda: None), profiler)


def select_backend() -> Backend:
    """torch_npu when it is installed (the CANN environment must be sourced), else torch."""
    if importlib.util.find_spec("torch_npu") is not None:
        if not any(os.environ.get(v) for v in CANN_ENV_VARS):
            raise RecipeError(f"torch_npu is installed but the CANN environment is not set: "
                              f"run `{CANN_SET_ENV}` first")
        try:
            torch_npu = importlib.import_module("torch_npu")
        except (ImportError, OSError) as e:
            reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise RecipeError(f"torch_npu failed to import ({reason}); "
                              f"is the CANN environment sourced? `{CANN_SET_ENV}`") from e
        return _npu_backend(torch_npu)
    try:
        torch = importlib.import_module("torch")
    except ImportError as e:
        raise RecipeError("collection needs PyTorch: pip install 'npu-tui[collect]'") from e
    return _torch_backend(torch)


def _steps(steps: Optional[int]) -> int:
    n = steps if steps is not None else int(os.environ.get(progress.ENV_STEPS, MIN_STEPS))
    if n < MIN_STEPS:
        raise RecipeError(f"at least {MIN_STEPS} profiled steps are needed, not {n}")
    return n


def profile_steps(step: Callable[[], object], out: Union[str, Path, None] = None,
                  steps: Optional[int] = None, backend: Optional[Backend] = None) -> Path:
    """Run ``step`` under the recipe and return the folder the profiler wrote into.

    ``out`` and ``steps`` default to what ``npu-tui collect`` passes in the environment, so a script
    run as ``npu-tui collect --cmd "python script.py"`` needs no arguments here.
    """
    n = _steps(steps)
    out = Path(out or os.environ.get(progress.ENV_OUT) or DEFAULT_OUT)
    out.mkdir(parents=True, exist_ok=True)
    backend = backend or select_backend()
    progress.emit("backend", name=backend.name)
    for i in range(WARMUP_STEPS):
        progress.emit("warmup", step=i + 1, of=WARMUP_STEPS)
        step()
        backend.synchronize()
    with backend.profiler(out, n) as prof:
        for i in range(n):
            progress.emit("step", step=i + 1, of=n)
            step()
            backend.synchronize()
            if i == n - 1:
                # The last prof.step() ends the schedule, which stops the profiler and writes out.
                progress.emit("export")
            prof.step()
    progress.emit("done", out=str(out))
    return out
