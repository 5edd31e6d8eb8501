"""npu-tui: a terminal explorer for Ascend NPU and PyTorch profiling output."""

__version__ = "0.1.0"


def stage(name: str):
    """``with npu_tui.stage("DiT"):`` marks a pipeline stage for the analysis (needs torch)."""
    from .collect.markers import stage as _stage

    return _stage(name)
