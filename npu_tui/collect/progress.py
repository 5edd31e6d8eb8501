"""The line protocol between a collection child and its runner.

The child prints one line per event on stdout, ``@npu-tui {"phase": ..., ...}``; every other line is
the workload's own log. Phases: ``backend``, ``build``, ``warmup``, ``step``, ``export``, ``done``,
``error``. The runner adds ``parse`` itself once the child has finished.
"""

from __future__ import annotations

import json
import sys
from typing import Optional

PREFIX = "@npu-tui "

# Environment the runner sets for the child, so a plain command line that calls
# ``profile_steps`` writes into the run folder it was given.
ENV_OUT = "NPU_TUI_OUT"
ENV_STEPS = "NPU_TUI_STEPS"


def emit(phase: str, **fields) -> None:
    """Print one progress event; flushed at once so the runner sees it live."""
    sys.stdout.write(PREFIX + json.dumps({"phase": phase, **fields}) + "\n")
    sys.stdout.flush()


def parse(line: str) -> Optional[dict]:
    """The event a line carries, or None when it is an ordinary log line."""
    if not line.startswith(PREFIX):
        return None
    try:
        event = json.loads(line[len(PREFIX):])
    except ValueError:
        return None
    return event if isinstance(event, dict) and isinstance(event.get("phase"), str) else None
