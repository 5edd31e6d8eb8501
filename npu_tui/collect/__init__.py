"""New data: the collection recipe (design.md §9), the demo workload and the subprocess runner.

The only package that uses torch / torch_npu, and only inside the collection child (or inside a
user's script), so importing it stays light. A workload is either

- a Python file defining ``build()``, which returns a callable running one step (one pipeline
  call): ``npu-tui collect my_workload.py``; or
- any command line whose script calls ``profile_steps(step)``:
  ``npu-tui collect --cmd "python run_pipeline.py --prompt cat"``.
"""

from .recipe import profile_steps
from .runner import (Collection, CollectError, CollectSpec, RunResult, list_runs, previous_run,
                     read_record, run_of)

__all__ = ["Collection", "CollectError", "CollectSpec", "RunResult", "list_runs", "previous_run",
           "profile_steps", "read_record", "run_of"]
