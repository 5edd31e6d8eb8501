"""Writing one rank's files in the shapes torch_npu writes them (checked against ../shared/real).

Plain string formatting and streaming writes, one profiler step at a time, so a million kernels
take seconds. Quirks kept on purpose: kernel_details.csv and step_trace_time.csv end lines with
CRLF, op_statistic.csv with LF; timestamps carry a trailing TAB; shapes are written with their
quotes inside the value (``\"\"\"1,4096;4096,3072\"\"\"``); `N/A` fills cells a task lacks;
trace_view.json is a bare array with string ``ts`` and numeric ``dur``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Tuple

from .model import Op
from .spec import Spec
from .timeline import Kernel, RankStep
from .truth import Overlap

MODEL_ID = 4294967295
GROUP = "17522688603477080586"
CLOCK_MHZ = 1800

L1_HEAD = (
    "Step Id,Device_id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,"
    "Start Time(us),Duration(us),Wait Time(us),Block Num,Mix Block Num,HF32 Eligible,Input Shapes,"
    "Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Context ID,"
    "aicore_time(us),aic_total_cycles,aic_mac_time(us),aic_mac_ratio,aic_scalar_time(us),"
    "aic_scalar_ratio,aic_mte1_time(us),aic_mte1_ratio,aic_mte2_time(us),aic_mte2_ratio,"
    "aic_fixpipe_time(us),aic_fixpipe_ratio,aic_icache_miss_rate,aiv_time(us),aiv_total_cycles,"
    "aiv_vec_time(us),aiv_vec_ratio,aiv_scalar_time(us),aiv_scalar_ratio,aiv_mte2_time(us),"
    "aiv_mte2_ratio,aiv_mte3_time(us),aiv_mte3_ratio,aiv_icache_miss_rate,cube_utilization(%)"
)
L0_HEAD = ("Step Id,Device_id,Name,Type,Accelerator Core,Start Time(us),Duration(us),"
           "Wait Time(us),Block Num")
L1_COMM_TAIL = ",".join(["N/A"] * (L1_HEAD.count(",") - 12))   # Mix Block Num .. the last column
STEP_HEAD = ("Device_id,Step,Computing,Communication(Not Overlapped),Overlapped,Communication,"
             "Free,Stage,Bubble,Communication(Not Overlapped and Exclude Receive),Preparing")
OPSTAT_HEAD = "OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)"
CHUNK = 20_000   # events buffered before a write
LANES = ("Computing", "Communication", "Communication(Not Overlapped)", "Free")
TASK_TYPES = {"AI_CORE": "AI_CORE", "AI_VECTOR_CORE": "AI_CORE", "MIX_AIC": "MIX_AIC",
              "AI_CPU": "AI_CPU"}
# Cube-side and vector-side pipe ratios (mac, scalar, mte1, mte2, fixpipe) / (vec, scalar, mte2, mte3).
CUBE_RATIOS = {"MatMul": (0.82, 0.04, 0.31, 0.46, 0.12), "FA": (0.58, 0.09, 0.22, 0.51, 0.08),
               "Conv": (0.74, 0.05, 0.35, 0.41, 0.15)}
VEC_RATIOS = {"FA": (0.41, 0.12, 0.33, 0.18), "Vector": (0.36, 0.08, 0.61, 0.47)}


def us(ns: int) -> str:
    """Integer ns as µs with exactly 3 decimals."""
    return "%d.%03d" % divmod(ns, 1000)


def _pmu(k: Kernel) -> str:
    """PMU cells for ACL_AICORE_PIPE_UTILIZATION, from the kind's nominal duration (<= the real one)."""
    busy = k.op.dur_ns * 0.9 / 1000.0
    cube, vec = CUBE_RATIOS.get(k.op.category), VEC_RATIOS.get(k.op.category)
    if cube is None and vec is None:
        return ",".join(["N/A"] * 25)
    cells = []
    if cube:
        cells += [f"{busy:.3f}", str(int(busy * CLOCK_MHZ))]
        for r in cube:
            cells += [f"{busy * r:.3f}", f"{r:.3f}"]
        cells.append("0.021")
    else:
        cells += ["0.0", "0"] + ["0.0"] * 10 + ["0.0"]
    if vec:
        cells += [f"{busy:.3f}", str(int(busy * CLOCK_MHZ))]
        for r in vec:
            cells += [f"{busy * r:.3f}", f"{r:.3f}"]
        cells.append("0.017")
    else:
        cells += ["0.0", "0"] + ["0.0"] * 8 + ["0.0"]
    cells.append(f"{cube[0] * 100:.3f}" if cube else "0")
    return ",".join(cells)


class KernelDetails:
    """kernel_details.csv, one row per compute or comm task."""

    def __init__(self, path: Path, spec: Spec, device: int) -> None:
        self.f = open(path, "w", encoding="utf-8", newline="")
        self.level1, self.device = spec.level == "Level1", device
        # Per kind: everything after Wait Time, which repeats. Keyed by id(); the value keeps the
        # kind alive so its id is not reused.
        self.tails: Dict[int, Tuple[Op, str]] = {}
        self.f.write((L1_HEAD if self.level1 else L0_HEAD) + "\r\n")

    def _tail(self, k: Kernel) -> str:
        hit = self.tails.get(id(k.op))
        if hit is not None:
            return hit[1]
        op = k.op
        if not self.level1:
            tail = "0"
        elif op.category == "Comm":
            tail = "0," + L1_COMM_TAIL
        else:
            tail = (f'{op.block},{op.mix_block},NO,"""{op.in_shapes}""",{op.in_dtypes},'
                    f'{op.in_formats},"""{op.out_shapes}""",{op.out_dtypes},{op.out_formats},'
                    f"N/A,{_pmu(k)}")
        self.tails[id(k.op)] = (op, tail)
        return tail

    def write(self, rs: RankStep) -> None:
        dev, out = self.device, []
        for k in rs.kernels:
            comm = k.op.category == "Comm"
            if self.level1:
                head = (f"{rs.step},{dev},{MODEL_ID},N/A,N/A,{k.name},{k.op.type},N/A,HCCL" if comm
                        else f"{rs.step},{dev},{MODEL_ID},{k.task_id},2,{k.name},{k.op.type},"
                             f"dynamic,{k.op.core}")
            else:
                head = f"{rs.step},{dev},{k.name},N/A,{'HCCL' if comm else 'N/A'}"
            out.append(f"{head},{us(k.start)}\t,{us(k.dur)},{us(k.wait)},{self._tail(k)}\r\n")
        self.f.write("".join(out))

    def close(self) -> None:
        self.f.close()


class MemoryRecord:
    """memory_record.csv and operator_memory.csv (``profile_memory=True``). After every 4th task,
    the framework allocator's (PTA) allocated, reserved and active MB and the whole process's (APP)
    reserved. Allocated is the weights plus the task's stage activations, rising through eight
    samples and falling back (a sawtooth): each rise is one allocation by the task's operator, all
    released together at the fall. The VAE decode's activations are the largest, so the peak is in
    the VAE. Reserved is what a caching allocator keeps: the largest allocation so far, rounded up
    to 512 MB. ``memory_leak_mb`` adds that much per DiT forward already run (``Kernel.call``).
    Times are the host's (the launch of the task), as the profiler stamps an allocation."""

    HEAD = "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),Stream Ptr,Device Type"
    OP_HEAD = ("Name,Size(KB),Allocation Time(us),Release Time(us),Active Release Time(us),Duration(us),"
               "Active Duration(us),Allocation Total Allocated(MB),Allocation Total Reserved(MB),"
               "Allocation Total Active(MB),Release Total Allocated(MB),Release Total Reserved(MB),"
               "Release Total Active(MB),Stream Ptr,Device Type")
    WEIGHTS_MB = 2400.0
    ACTIVATIONS_MB = {"DiT": 600.0, "VAE": 1800.0, "Other": 120.0}
    # the aten operator that allocates a category's output
    ALLOCATOR = {"MatMul": "aten::mm", "FA": "aten::_npu_flash_attention", "Conv": "aten::convolution",
                 "Vector": "aten::add", "Comm": "aten::empty_strided"}
    EVERY = 4

    def __init__(self, out_dir: Path, spec: Spec, device: int) -> None:
        self.f = open(out_dir / "memory_record.csv", "w", encoding="utf-8", newline="")
        self.f.write(self.HEAD + "\r\n")
        self.ops = open(out_dir / "operator_memory.csv", "w", encoding="utf-8", newline="")
        self.ops.write(self.OP_HEAD + "\r\n")
        self.device, self.samples, self.leak_mb = device, 0, spec.memory_leak_mb
        self.reserved, self.allocated = 0.0, None
        self.held: List[Tuple[str, float, int, float]] = []  # (op, MB, allocated at, total then)
        self.peak = {"allocated_mb": 0.0, "reserved_mb": 0.0, "stage": None, "ts_ns": None,
                     "dit_forward_peaks": []}

    def write(self, rs: RankStep) -> None:
        out, ops = [], []
        for i, k in enumerate(rs.kernels):
            if i % self.EVERY:
                continue
            step = self.samples % 8
            self.samples += 1
            allocated = self.WEIGHTS_MB + self.ACTIVATIONS_MB[k.stage] * step / 7
            if k.stage == "DiT":
                allocated += self.leak_mb * k.call  # a leak: kept from every forward before
            self.reserved = max(self.reserved, -(-allocated // 512) * 512)
            if allocated > self.peak["allocated_mb"]:
                self.peak.update(allocated_mb=allocated, stage=k.stage, ts_ns=k.host_ts)
            self.peak["reserved_mb"] = self.reserved
            if k.stage == "DiT":  # each DiT forward's own peak (Kernel.call numbers them)
                peaks = self.peak["dit_forward_peaks"]
                peaks.extend([None] * (k.call + 1 - len(peaks)))
                peaks[k.call] = max(peaks[k.call] or 0.0, allocated)
            if step == 0:  # the fall: what the rise allocated is released
                for name, mb, at, total in self.held:
                    ops.append(f"{name},{mb * 1024:.1f},{us(at)}\t,{us(k.host_ts)}\t,{us(k.host_ts)}\t,"
                               f"{us(k.host_ts - at)}\t,{us(k.host_ts - at)}\t,{total:.4f},{self.reserved:.1f},"
                               f"{total:.4f},{allocated:.4f},{self.reserved:.1f},{allocated:.4f},0,NPU:{self.device}\r\n")
                self.held = []
            elif self.allocated is not None and allocated > self.allocated:
                name = self.ALLOCATOR.get(k.op.category, "aten::empty_strided")
                self.held.append((name, allocated - self.allocated, k.host_ts, allocated))
            self.allocated = allocated
            ts = us(k.host_ts)  # the host allocates as it launches: host time, ahead of the device
            out.append(f"PTA,{ts}\t,{allocated:.4f},{self.reserved:.1f},{allocated:.4f},0,NPU:{self.device}\r\n")
            out.append(f"APP,{ts}\t,,{self.reserved + 300:.1f},,,NPU:{self.device}\r\n")
        self.f.write("".join(out))
        self.ops.write("".join(ops))

    def close(self) -> None:
        # still held when the profile ended: no release
        self.ops.write("".join(f"{name},{mb * 1024:.1f},{us(at)}\t,,,,,{total:.4f},{self.reserved:.1f},{total:.4f},"
                               f",,,0,NPU:{self.device}\r\n" for name, mb, at, total in self.held))
        self.f.close()
        self.ops.close()


class TraceView:
    """trace_view.json: host (Python, CANN), device (Ascend Hardware, HCCL) and Overlap Analysis."""

    def __init__(self, path: Path, spec: Spec, rank: int, device: int) -> None:
        self.f = open(path, "w", encoding="utf-8", newline="\n")
        self.spec = spec
        self.tid = 3_096_504 + 1_000 * rank
        base = 3_170_820_320 + 4_096 * rank
        self.py, self.cann, self.hw, self.hccl, self.ov = (
            self.tid, base, base + 192, base + 256, base + 512)
        self.python_id = 0
        self.first = True
        npu = f"NPU {device}"
        meta = [
            self._meta("process_name", self.py, 0, name="Python"),
            self._meta("process_labels", self.py, 0, labels="CPU"),
            self._meta("process_sort_index", self.py, 0, sort_index=0),
            self._meta("thread_name", self.py, self.tid, name=f"Thread {self.tid}"),
            self._meta("process_name", self.cann, 0, name="CANN"),
            self._meta("thread_name", self.cann, self.tid, name=f"Thread {self.tid}"),
            self._meta("process_labels", self.cann, 0, labels="CPU"),
            self._meta("process_sort_index", self.cann, 0, sort_index=7),
            self._meta("process_name", self.hw, 0, name="Ascend Hardware"),
            self._meta("thread_name", self.hw, 2, name="Stream 2"),
            self._meta("process_labels", self.hw, 0, labels=npu),
            self._meta("process_sort_index", self.hw, 0, sort_index=13),
            self._meta("process_name", self.hccl, 0, name="HCCL"),
            self._meta("thread_name", self.hccl, 0, name="Group 0 Communication"),
            self._meta("thread_name", self.hccl, 1, name="Plane 0"),
            self._meta("process_labels", self.hccl, 0, labels=npu),
            self._meta("process_sort_index", self.hccl, 0, sort_index=15),
            self._meta("process_name", self.ov, 0, name="Overlap Analysis"),
        ]
        meta += [self._meta("thread_name", self.ov, i, name=lane) for i, lane in enumerate(LANES)]
        meta += [self._meta("process_labels", self.ov, 0, labels=npu),
                 self._meta("process_sort_index", self.ov, 0, sort_index=23)]
        self.f.write("[\n")
        self._emit(meta)

    @staticmethod
    def _meta(what: str, pid: int, tid: int, **args) -> str:
        return json.dumps({"name": what, "pid": pid, "tid": tid, "args": args, "ph": "M"})

    def _emit(self, events: List[str]) -> None:
        if not events:
            return
        self.f.write(("" if self.first else ",\n") + ",\n".join(events))
        self.first = False

    def _x(self, name: str, pid: int, tid: int, ts: int, dur: int, cat: str = "", args: str = "") -> str:
        cat = f', "cat": "{cat}"' if cat else ""
        args = f', "args": {args}' if args else ""
        return (f'{{"ph": "X", "name": "{name}", "pid": {pid}, "tid": {tid}, "ts": "{us(ts)}", '
                f'"dur": {us(dur)}{cat}{args}}}')

    def _flow(self, ph: str, fid: int, pid: int, tid: int, ts: int) -> str:
        return (f'{{"ph": "{ph}", "bp": "e", "name": "torch_to_npu", "id": {fid}, "pid": {pid}, '
                f'"tid": {tid}, "ts": "{us(ts)}", "cat": "async_npu"}}')

    def write(self, rs: RankStep, overlap: Overlap) -> None:
        py, tid, ev = self.py, self.tid, []
        ps = rs.profiler_step
        ev.append(self._x(ps.name, py, tid, ps.start, ps.dur, "cpu_op",
                          '{"Sequence number": -1, "Fwd thread id": 0}'))
        for r in rs.ranges:
            self.python_id += 1
            ev.append(self._x(r.name, py, tid, r.start, r.dur, "python_function",
                              f'{{"Python id": {self.python_id}, "Python parent id": 0, '
                              f'"Python module id": 0}}'))
        for k in sorted(rs.kernels, key=lambda k: k.host_ts):
            ev.append(self._x(k.op.host, py, tid, k.host_ts, k.host_dur, "cpu_op",
                              '{"Sequence number": -1, "Fwd thread id": 0}'))
            ev.append(self._flow("s", k.start, py, tid, k.host_ts))
            launch = k.host_ts + k.host_dur // 2
            ev.append(self._x("Node@launch", self.cann, tid, launch, k.host_dur // 3, "",
                              f'{{"Thread Id": {tid}, "Mode": "launch", "level": "node", "id": "0", '
                              f'"item_id": "{k.name}", "connection_id": {k.conn}}}'))
            if len(ev) >= CHUNK:
                self._emit(ev)
                ev = []
        for k in rs.kernels:
            if k.op.category == "Comm":
                ev += self._comm(k)
                continue
            ev.append(self._x(k.name, self.hw, 2, k.start, k.dur, "",
                              f'{{"Model Id": {MODEL_ID}, "Task Type": "{TASK_TYPES[k.op.core]}", '
                              f'"Physic Stream Id": 2, "Task Id": {k.task_id}, "Batch Id": 0, '
                              f'"Subtask Id": 4294967295, "connection_id": {k.conn}}}'))
            ev.append(self._flow("f", k.start, self.hw, 2, k.start))
            if len(ev) >= CHUNK:
                self._emit(ev)
                ev = []
        lanes = (overlap.compute, overlap.comm, overlap.not_overlapped, overlap.free)
        for tid_, (lane, ivs) in enumerate(zip(LANES, lanes)):
            ev += [self._x(lane, self.ov, tid_, s, e - s) for s, e in ivs]
        self._emit(ev)

    def _comm(self, k: Kernel) -> List[str]:
        """The collective on its group lane, its flow, and the HCCL sub-tasks (not kernels)."""
        end = k.start + k.dur
        count = k.op.comm_bytes // 2
        ev = [self._x(k.name, self.hccl, 0, k.start, k.dur, "",
                      f'{{"connection_id": {k.conn}, "model id": {MODEL_ID}, "data_type": "BF16", '
                      f'"alg_type": "MESH-RING", "count": {count}}}'),
              self._flow("f", k.start, self.hccl, 0, k.start)]
        sub = '{{"task type": "{}", "transport type": "SDMA", "size(Byte)": {}, "link type": "HCCS"}}'
        wait_end = k.start + k.peer_wait + 2_000
        ev.append(self._x("Notify_Wait", self.hccl, 1, k.start, wait_end - k.start, "",
                          sub.format("Notify_Wait", 0)))
        copy_start = max(wait_end, end - k.transfer)
        ev.append(self._x("Memcpy", self.hccl, 1, copy_start, max(1, end - 600 - copy_start), "",
                          sub.format("Memcpy", k.op.comm_bytes)))
        ev.append(self._x("Notify_Record", self.hccl, 1, end - 520, 480, "",
                          sub.format("Notify_Record", 0)))
        return ev

    def close(self) -> None:
        self.f.write("\n]\n")
        self.f.close()


class Summaries:
    """step_trace_time.csv, op_statistic.csv, communication.json and communication_matrix.json."""

    def __init__(self, spec: Spec, device: int) -> None:
        self.spec, self.device = spec, device
        self.steps: List[str] = []
        self.ops: Dict[Tuple[str, str], List[int]] = {}
        self.comm: Dict[str, Dict] = {}
        self.matrix: Dict[str, Dict] = {}

    def add(self, rs: RankStep, overlap: Overlap) -> None:
        v = overlap.values
        self.steps.append(",".join([
            str(self.device), str(rs.step), us(v["computing_ns"]), us(v["comm_not_overlapped_ns"]),
            us(v["overlapped_ns"]), us(v["comm_ns"]), us(v["free_ns"]), us(v["stage_ns"]), "0",
            us(v["comm_not_overlapped_ns"]), us(v["preparing_ns"])]))
        comm = []
        for k in rs.kernels:
            if k.op.category == "Comm":
                comm.append(k)
                continue
            agg = self.ops.get((k.op.type, k.op.core))
            if agg is None:
                self.ops[(k.op.type, k.op.core)] = [1, k.dur, k.dur, k.dur]
            else:
                agg[0] += 1
                agg[1] += k.dur
                agg[2] = min(agg[2], k.dur)
                agg[3] = max(agg[3], k.dur)
        if comm:
            self.comm[f"step{rs.step}"] = {"p2p": {}, "collective": self._comm_ops(comm)}
            self.matrix[f"step{rs.step}"] = {"p2p": {}, "collective": self._matrix(comm)}

    @staticmethod
    def _bandwidth(size_mb: float, time_ms: float, dist: Dict) -> Dict:
        zero = {"Transit Size(MB)": 0, "Transit Time(ms)": 0, "Bandwidth(GB/s)": 0,
                "Large Packet Ratio": 0, "Size Distribution": {}}
        bw = round(size_mb / time_ms, 4) if time_ms else 0
        hccs = {"Transit Size(MB)": size_mb, "Transit Time(ms)": time_ms, "Bandwidth(GB/s)": bw,
                "Large Packet Ratio": 0.0, "Size Distribution": dist}
        return {"RDMA": zero, "HCCS": hccs, "PCIE": zero, "SDMA": dict(hccs, **{"Size Distribution": {}}),
                "SIO": zero}

    def _comm_ops(self, comm: List[Kernel]) -> Dict:
        out: Dict[str, Dict] = {}
        tot = {"elapse": 0, "transit": 0, "wait": 0, "size": 0}
        dist: Dict[str, List] = {}
        for k in comm:
            size_mb, transit_ms = k.op.comm_bytes / 1e6, k.transfer / 1e6
            wait_ms = k.peer_wait / 1e6
            out[f"{k.name}@{GROUP}"] = {
                "Communication Time Info": {
                    "Start Timestamp(us)": k.start / 1000.0,
                    "Elapse Time(ms)": k.dur / 1e6,
                    "Transit Time(ms)": transit_ms,
                    "Wait Time(ms)": wait_ms,
                    "Synchronization Time(ms)": wait_ms,
                    # neither moving data nor waiting for the peer (as the profiler counts it)
                    "Idle Time(ms)": (k.dur - k.transfer - k.peer_wait) / 1e6,
                    "Wait Time Ratio": round(wait_ms / (wait_ms + transit_ms), 4),
                    "Synchronization Time Ratio": round(wait_ms / (wait_ms + transit_ms), 4),
                },
                "Communication Bandwidth Info": self._bandwidth(
                    size_mb, transit_ms, {str(size_mb): [1, transit_ms]}),
            }
            tot["elapse"] += k.dur
            tot["transit"] += k.transfer
            tot["wait"] += k.peer_wait
            tot["size"] += k.op.comm_bytes
            d = dist.setdefault(str(size_mb), [0, 0.0])
            d[0] += 1
            d[1] += transit_ms
        wait_ms, transit_ms = tot["wait"] / 1e6, tot["transit"] / 1e6
        out["Total Op Info"] = {
            "Communication Time Info": {
                "Elapse Time(ms)": tot["elapse"] / 1e6, "Transit Time(ms)": transit_ms,
                "Wait Time(ms)": wait_ms, "Synchronization Time(ms)": wait_ms,
                "Idle Time(ms)": (tot["elapse"] - tot["transit"] - tot["wait"]) / 1e6,
                "Wait Time Ratio": round(wait_ms / (wait_ms + transit_ms), 4),
                "Synchronization Time Ratio": round(wait_ms / (wait_ms + transit_ms), 4),
            },
            "Communication Bandwidth Info": self._bandwidth(tot["size"] / 1e6, transit_ms, dist),
        }
        return out

    def _matrix(self, comm: List[Kernel]) -> Dict:
        """Per collective kind, this rank's links to every rank of the group (itself = LOCAL)."""
        out: Dict[str, Dict] = {}
        me, n = self.device - self.spec.first_device, self.spec.ranks
        for kind in sorted({k.op.type for k in comm}):
            ks = [k for k in comm if k.op.type == kind]
            size = sum(k.op.comm_bytes for k in ks) / 1e6 / max(1, n - 1)
            time_ms = sum(k.transfer for k in ks) / 1e6
            links = {}
            for dst in range(n):
                local = dst == me
                t = time_ms / 50 if local else time_ms * (4 if self.spec.slow_link == (me, dst) else 1)
                links[f"{me}-{dst}"] = {
                    "Transport Type": "LOCAL" if local else "HCCS",
                    "Transit Size(MB)": size, "Transit Time(ms)": t,
                    "Bandwidth(GB/s)": round(size / t, 4), "Op Name": ks[0].name,
                }
            key = kind[len("hcom_"):].rstrip("_").lower()
            out[f"{key}-total@{GROUP}"] = links
        return out

    def write(self, out_dir: Path, level1: bool) -> None:
        with open(out_dir / "step_trace_time.csv", "w", encoding="utf-8", newline="") as f:
            f.write(STEP_HEAD + "\r\n" + "".join(line + "\r\n" for line in self.steps))
        if not level1:
            return  # Level0 writes no op_statistic or communication files
        grand = sum(a[1] for a in self.ops.values()) or 1
        rows = sorted(self.ops.items(), key=lambda kv: (-kv[1][1], kv[0]))
        with open(out_dir / "op_statistic.csv", "w", encoding="utf-8", newline="") as f:
            f.write(OPSTAT_HEAD + "\n")
            for (typ, core), (n, tot, lo, hi) in rows:
                f.write(f"{typ},{core},{n},{us(tot)},{us(lo)},{tot / n / 1000:.3f},{us(hi)},"
                        f"{tot * 100 / grand:.3f}\n")
        if self.comm:
            for name, data in (("communication.json", self.comm),
                               ("communication_matrix.json", self.matrix)):
                (out_dir / name).write_text(json.dumps(data), encoding="utf-8")
