"""Writing a whole profile for a Spec, and its truth file beside it."""

from __future__ import annotations

import gc
import json
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, List, Optional

from .files import KernelDetails, MemoryRecord, Summaries, TraceView
from .spec import Spec
from .timeline import EPOCH_NS, Timeline
from .truth import Overlap, TruthBuilder

HOST = "diffusion-node"


def truth_path(out: Path) -> Path:
    """Where the truth of the profile at ``out`` is written: beside it, never inside."""
    return out.parent / f"{out.name}.truth.json"


def _rank_dir_name(rank: int) -> str:
    pid = 3_096_504 + 1_000 * rank
    stamp = datetime.fromtimestamp(EPOCH_NS // 10**9, tz=timezone.utc).strftime("%Y%m%d%H%M%S")
    return f"{HOST}_{pid}_{stamp}{(EPOCH_NS // 10**6) % 1000 + rank:03d}_ascend_pt"


def _profiler_info(spec: Spec, rank: int, end_ns: int) -> Dict:
    return {
        "config": {
            "common_config": {
                "activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"],
                "schedule": {"wait": 0, "active": spec.profiler_steps, "warmup": 1, "repeat": 1,
                             "skip_first": 2},
                "record_shapes": True, "profile_memory": True, "with_stack": False,
                "with_flops": False, "with_modules": spec.markers,
            },
            "experimental_config": {
                "_profiler_level": spec.level,
                "_aic_metrics": ("ACL_AICORE_PIPE_UTILIZATION" if spec.level == "Level1"
                                 else "ACL_AICORE_NONE"),
                "_l2_cache": False, "_msprof_tx": False, "_data_simplification": True,
                "record_op_args": False, "_export_type": "text", "_op_attr": False,
                "_gc_detect_threshold": None,
            },
        },
        "start_info": {"syscnt_enable": True, "freq": 100, "start_cnt": 17238197612056,
                       "start_monotonic": 172163581670080},
        "end_info": {"collectionTimeEnd": end_ns, "MonotonicTimeEnd": 172164265133640},
        "rank_id": rank,
    }


METADATA = {"ENV_VARIABLES": {
    "ASCEND_GLOBAL_LOG_LEVEL": "", "HCCL_RDMA_TC": "", "HCCL_RDMA_SL": "", "ACLNN_CACHE_LIMIT": "",
    "HOST_CACHE_CAPACITY": "", "ASCEND_ENHANCE_ENABLE": "", "PYTORCH_NPU_ALLOC_CONF": "",
    "ASCEND_LAUNCH_BLOCKING": ""}}


def _prepare(out: Path) -> None:
    """Start from an empty folder; replace only what an earlier generation wrote."""
    if out.exists() and any(out.iterdir()):
        if not truth_path(out).is_file():
            raise FileExistsError(f"{out} is not empty and was not written by the generator")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


def generate(out: Path, spec: Spec, preset: Optional[str] = None) -> Dict:
    """Write the profile for ``spec`` at ``out`` and its truth at ``truth_path(out)``; return the truth.

    Layouts: ``cluster`` puts one ``{host}_{pid}_{time}_ascend_pt`` folder per rank in ``out``;
    ``rank`` makes ``out`` the rank folder; ``bare`` writes ``out/trace_view.json`` alone.
    """
    out = Path(out)
    _prepare(out)
    # Millions of small acyclic records: the cycle collector would rescan them over and over.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _generate(out, spec, preset)
    finally:
        if gc_was_enabled:
            gc.enable()


def _generate(out: Path, spec: Spec, preset: Optional[str]) -> Dict:
    timeline = Timeline(spec)
    truth = TruthBuilder(spec, preset, timeline.denoise_steps)
    roots: List[Path] = []
    traces, details, sums, memory = [], [], [], []
    for r in range(spec.ranks):
        root = out / _rank_dir_name(r) if spec.layout == "cluster" else out
        device = spec.first_device + r
        data = root if spec.layout == "bare" else root / "ASCEND_PROFILER_OUTPUT"
        data.mkdir(parents=True, exist_ok=True)
        roots.append(root)
        traces.append(TraceView(data / "trace_view.json", spec, r, device))
        if spec.layout != "bare":
            details.append(KernelDetails(data / "kernel_details.csv", spec, device))
            sums.append(Summaries(spec, device))
            memory.append(MemoryRecord(data, spec, device))
    end_ns = 0
    for rank_steps in timeline.steps():
        for r, rs in enumerate(rank_steps):
            overlap = Overlap(rs)
            truth.add(r, rs, overlap)
            traces[r].write(rs, overlap)
            if details:
                details[r].write(rs)
                sums[r].add(rs, overlap)
                memory[r].write(rs)
            end_ns = max(end_ns, rs.profiler_step.start + rs.profiler_step.dur)
    for w in traces + details + memory:
        w.close()
    if spec.layout != "bare":
        for r, root in enumerate(roots):
            sums[r].write(root / "ASCEND_PROFILER_OUTPUT", spec.level == "Level1")
            info = json.dumps(_profiler_info(spec, r, end_ns), indent=4) + "\n"
            (root / f"profiler_info_{r}.json").write_text(info, encoding="utf-8")
            (root / "profiler_metadata.json").write_text(json.dumps(METADATA, indent=4) + "\n",
                                                          encoding="utf-8")
    result = truth.result()
    for r, m in enumerate(memory):  # the peak the memory file holds: where and how high
        result["ranks"][r]["memory"] = m.peak
    truth_path(out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result
