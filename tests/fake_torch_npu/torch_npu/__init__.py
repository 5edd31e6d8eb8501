"""A stand-in for torch_npu that records every call the collection recipe makes.

It mirrors the public API surface of torch_npu's profiler (signatures as documented for
``torch_npu.profiler.profile``, ``schedule``, ``tensorboard_trace_handler``, ``_ExperimentalConfig``
and ``torch_npu.npu.synchronize``), so a wrong keyword fails here as it would on a real device.
``CALLS`` holds (name, args) tuples in call order; the trace handler writes a
``{worker}_ascend_pt`` folder with a ``profiler_info.json`` the way the real one names its output.
"""

CALLS = []

from . import npu, profiler  # noqa: E402  (CALLS must exist first)
