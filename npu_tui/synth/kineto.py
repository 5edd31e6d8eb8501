"""A Kineto (PyTorch profiler) trace of any size, as ``tensorboard_trace_handler`` writes one on a
GPU: per kernel a ``cpu_op`` (with input shapes), the ``cudaLaunchKernel`` inside it, the kernel on
the device with the launch's correlation id and the ``ac2g`` flow between them, the steps as
``ProfilerStep#N`` ranges; one ``nccl`` all-reduce per step. Written as text, event by event, in
bounded memory, so a GB trace costs no more memory than a small one.

``write_kineto(path, kernels)`` returns the truth: kernel count, flows, and each step's device span.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Dict, IO

KERNELS = (  # (launching op, kernel name, duration µs)
    ("aten::mm", "ampere_sgemm_128x64_tn", 42.0),
    ("aten::add", "vectorized_elementwise_kernel<4, AddFunctor<float>>", 6.5),
    ("aten::_softmax", "softmax_warp_forward<float, float, float, 10, false>", 11.25),
    ("aten::gelu", "vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>", 7.75),
    ("aten::native_layer_norm", "vectorized_layer_norm_kernel<float, float>", 9.0),
)
BASE_NS = 1_700_000_000_000_000_000
LAUNCH_US = 4.0  # host time of one launch: the host runs ahead of the device
GAP_US = 1.0  # device idle between two kernels


def _event(out: IO[str], first: list, **e) -> None:
    out.write(("" if first[0] else ",\n") + json.dumps(e, separators=(",", ":")))
    first[0] = False


def write_kineto(path: Path, kernels: int, steps: int = 5, rank: int = 0, seed: int = 0) -> Dict:
    """Write the trace (gzip when ``path`` ends in .gz); return what it holds."""
    rnd = random.Random(seed)
    per_step = max(1, kernels // steps)
    opener = gzip.open if str(path).endswith(".gz") else open
    truth = {"kernels": 0, "flows": 0, "steps": {}}
    host_t, dev_t, corr = 10.0, 50.0, 1
    with opener(path, "wt", encoding="utf-8") as out:
        out.write('{"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": %d, "world_size": 2},\n'
                  '"baseTimeNanoseconds": %d,\n"traceEvents": [\n' % (rank, BASE_NS))
        first = [True]
        for step in range(steps):
            n = per_step if step < steps - 1 else kernels - per_step * (steps - 1)
            step_host, step_dev = host_t, None
            for i in range(n + 1):  # the step's kernels, then its all-reduce
                if i < n:
                    op, name, dur = KERNELS[rnd.randrange(len(KERNELS))]
                    cat = "kernel"
                else:
                    op, name, dur, cat = "nccl:all_reduce", "ncclKernel_AllReduce_RING_LL_Sum_float", 120.0, "kernel"
                dims = [[64, 128], [128, 256]] if op == "aten::mm" else [[64, 256]]
                _event(out, first, ph="X", cat="cpu_op", name=op, pid=1, tid=1, ts=host_t, dur=LAUNCH_US,
                       args={"Input Dims": dims, "Input type": ["float"] * len(dims)})
                _event(out, first, ph="X", cat="cuda_runtime", name="cudaLaunchKernel", pid=1, tid=1,
                       ts=host_t + 1.0, dur=2.0, args={"correlation": corr})
                start = max(dev_t, host_t + 3.0)
                _event(out, first, ph="X", cat=cat, name=name, pid=0, tid=7, ts=start, dur=dur,
                       args={"device": 0, "stream": 7, "correlation": corr})
                _event(out, first, ph="s", cat="ac2g", name="ac2g", id=corr, pid=1, tid=1, ts=host_t + 1.0)
                _event(out, first, ph="f", bp="e", cat="ac2g", name="ac2g", id=corr, pid=0, tid=7, ts=start)
                step_dev = start if step_dev is None else step_dev
                dev_t = start + dur + GAP_US
                host_t += LAUNCH_US + 0.5
                corr += 1
                truth["kernels"] += 1
                truth["flows"] += 1
            _event(out, first, ph="X", cat="user_annotation", name=f"ProfilerStep#{step}", pid=1, tid=1,
                   ts=step_host, dur=host_t - step_host)
            truth["steps"][step] = dev_t - GAP_US - step_dev
            host_t = max(host_t, dev_t) + 20.0  # the host waits for the device between steps
        out.write("\n]}\n")
    return truth
