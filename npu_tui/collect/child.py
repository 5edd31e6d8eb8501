"""The collection child: ``python -m npu_tui.collect.child (--demo | --workload FILE) --out DIR``.

Runs in its own process (and process group) so a crash or a cancel cannot take the caller down.
A workload file defines ``build()``, which returns a callable running one step.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Callable, List, Optional

from . import progress
from .recipe import MIN_STEPS, RecipeError, profile_steps, select_backend


class WorkloadError(Exception):
    """The workload file does not follow the contract."""


def load_build(path: Path) -> Callable[[], Callable[[], object]]:
    if not path.is_file():
        raise WorkloadError(f"workload file not found: {path}")
    # The workload may import modules that sit beside it.
    sys.path.insert(0, str(path.parent.resolve()))
    spec = importlib.util.spec_from_file_location("npu_tui_workload", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    build = getattr(module, "build", None)
    if not callable(build):
        raise WorkloadError(f"{path.name} defines no build() function")
    return build


def _run(args) -> None:
    # The profiler first: a missing CANN environment is reported before the workload is built.
    backend = select_backend()
    progress.emit("build")
    if args.demo:
        from .demo_workload import build

        step = build(backend.device)
    else:
        step = load_build(Path(args.workload))()
    if not callable(step):
        raise WorkloadError(f"build() returned {type(step).__name__}, not a callable running one step")
    profile_steps(step, out=args.out, steps=args.steps, backend=backend)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m npu_tui.collect.child")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--demo", action="store_true")
    what.add_argument("--workload", metavar="FILE")
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=MIN_STEPS)
    args = p.parse_args(argv)
    try:
        _run(args)
    except (RecipeError, WorkloadError) as e:
        progress.emit("error", message=str(e))
        return 1
    except Exception as e:  # the workload's own failure: keep the traceback in the log
        traceback.print_exc()
        sys.stderr.flush()
        progress.emit("error", message=f"{type(e).__name__}: {e}".strip().splitlines()[0])
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
