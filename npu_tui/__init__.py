"""npu-tui: a terminal explorer for Ascend NPU and PyTorch profiling output."""

__version__ = "0.1.0"
