"""Stage markers: ``with npu_tui.stage("DiT"):`` puts a host range the analysis finds exactly.

The range is a ``torch.profiler.record_function`` named ``npu_tui:stage:<name>``. Both profilers
record it: torch.profiler writes it as a user annotation in the Kineto trace, and torch_npu's
profiler writes it among the framework ranges of ``trace_view.json``. Outside a profiler it costs
next to nothing, so workloads may leave the markers in.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

STAGE_PREFIX = "npu_tui:stage:"


def marker_name(name: str) -> str:
    return STAGE_PREFIX + name


@contextmanager
def stage(name: str) -> Iterator[None]:
    import torch  # collection-only dependency, imported when a marker is first used

    with torch.profiler.record_function(marker_name(name)):
        yield
