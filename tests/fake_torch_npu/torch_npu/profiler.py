import enum
import json
import os
import subprocess
import sys

from . import CALLS


class ProfilerActivity(enum.Enum):
    CPU = "CPU"
    NPU = "NPU"


class ProfilerLevel:
    Level_none = "Level_none"
    Level0 = "Level0"
    Level1 = "Level1"
    Level2 = "Level2"


class AiCMetrics:
    AiCoreNone = "ACL_AICORE_NONE"
    PipeUtilization = "ACL_AICORE_PIPE_UTILIZATION"
    ArithmeticUtilization = "ACL_AICORE_ARITHMETIC_UTILIZATION"
    Memory = "ACL_AICORE_MEMORY_BANDWIDTH"
    MemoryL0 = "ACL_AICORE_L0B_AND_WIDTH"
    MemoryUB = "ACL_AICORE_MEMORY_UB"
    ResourceConflictRatio = "ACL_AICORE_RESOURCE_CONFLICT_RATIO"
    L2Cache = "ACL_AICORE_L2_CACHE"


class ExportType:
    Text = "text"
    Db = "db"


class _ExperimentalConfig:
    def __init__(self, export_type=ExportType.Text, profiler_level=ProfilerLevel.Level0,
                 msprof_tx=False, aic_metrics=AiCMetrics.AiCoreNone, l2_cache=False, op_attr=False,
                 data_simplification=True, record_op_args=False, gc_detect_threshold=None,
                 mstx=False):
        self.kwargs = dict(export_type=export_type, profiler_level=profiler_level,
                           msprof_tx=msprof_tx, aic_metrics=aic_metrics, l2_cache=l2_cache,
                           op_attr=op_attr, data_simplification=data_simplification,
                           record_op_args=record_op_args, gc_detect_threshold=gc_detect_threshold,
                           mstx=mstx)
        CALLS.append(("_ExperimentalConfig", self.kwargs))


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(wait, active, warmup=0, repeat=0, skip_first=0):
    args = dict(wait=wait, active=active, warmup=warmup, repeat=repeat, skip_first=skip_first)
    CALLS.append(("schedule", args))

    def action(step):
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    action.args = args
    return action


# The offline parse: ASCEND_PROFILER_OUTPUT with a kernel, then analyse.done, as torch_npu writes them.
PARSE = """
import os, sys, time
out = os.path.join(sys.argv[1], "ASCEND_PROFILER_OUTPUT")
time.sleep(float(sys.argv[2]))
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "kernel_details.csv"), "w") as f:
    f.write("Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us)\\r\\n")
    f.write("1,aclnnAdd_AddAiCore_Add,Add,AI_VECTOR_CORE,1736408883704700.001\\t,2.5\\r\\n")
open(os.path.join(out, "analyse.done"), "w").close()
"""


def tensorboard_trace_handler(dir_name=None, worker_name=None, analyse_flag=True, async_mode=False):
    # FAKE_TORCH_NPU_ASYNC_PARSE=<seconds>: the parse runs on in a process of its own, that long,
    # after the workload returns (what async_mode=True does).
    delay = os.environ.get("FAKE_TORCH_NPU_ASYNC_PARSE")
    async_mode = async_mode or delay is not None
    CALLS.append(("tensorboard_trace_handler",
                  dict(dir_name=dir_name, worker_name=worker_name, analyse_flag=analyse_flag,
                       async_mode=async_mode)))

    def handler(prof):
        folder = os.path.join(dir_name or ".", f"{worker_name or 'fake'}_{os.getpid()}_ascend_pt")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "profiler_info.json"), "w") as f:
            json.dump({"recorded_steps": prof.recorded_steps}, f)
        CALLS.append(("on_trace_ready", {"dir": folder, "recorded_steps": prof.recorded_steps}))
        # the raw data the parse reads
        os.makedirs(os.path.join(folder, "PROF_000001_20250101000000000_FAKEFAKEFAKEFAKE", "device_0"), exist_ok=True)
        if analyse_flag:
            parse = subprocess.Popen([sys.executable, "-c", PARSE, folder, delay or "0"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if not async_mode:
                parse.wait()

    return handler


class profile:
    def __init__(self, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None):
        CALLS.append(("profile", dict(activities=activities, schedule=schedule,
                                      on_trace_ready=on_trace_ready, record_shapes=record_shapes,
                                      profile_memory=profile_memory, with_stack=with_stack,
                                      with_flops=with_flops, with_modules=with_modules,
                                      experimental_config=experimental_config)))
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.recorded_steps = 0

    def __enter__(self):
        CALLS.append(("profile.start", {}))
        return self

    def __exit__(self, *exc):
        CALLS.append(("profile.stop", {}))
        return False

    def step(self):
        action = self.schedule(self.step_num)
        if action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self.recorded_steps += 1
        CALLS.append(("profile.step", {"step_num": self.step_num, "action": action.name}))
        if action is ProfilerAction.RECORD_AND_SAVE and self.on_trace_ready:
            self.on_trace_ready(self)
        self.step_num += 1
