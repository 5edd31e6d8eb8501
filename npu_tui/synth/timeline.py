"""Scheduling the pipeline onto each rank's host thread, compute stream and comm stream.

The host launches ops one after another (each costs launch time); a kernel starts when its stream
is free, its launch has reached the device, and, for consumers of a collective, when that
collective has finished. Short kernels therefore leave host-bound gaps (Free time) and long ones
queue up. A collective ends for every rank at the same time: the last rank's arrival plus the
transfer, so earlier ranks wait inside it. All times are integer ns; compute kernels start on even
ns and collectives on odd ns so no two kernels of a rank share a start (flows are keyed by it).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Dict, List, NamedTuple, Optional, Tuple

from .model import Call, Op, Range, effective_denoise_steps, pipeline_call
from .spec import Spec

EPOCH_NS = 1_736_408_883_704_643_212   # Jan 2025, like the real samples
COMPUTE_STREAM = 2
LAUNCH_LATENCY_NS = 6_000          # host dispatch to earliest device start
MIN_GAP_NS = 1_000                 # between back-to-back tasks of one stream
HOST_STEP_NS = 1_500               # Python overhead between two op launches
SCHEDULER_NS = 180_000             # host-side scheduler work before each DiT forward
STEP_GAP_NS = 400_000              # between one ProfilerStep's end and the next one's start
TASK_ID_BASE = 11_051


class Kernel(NamedTuple):
    op: Op
    name: str
    stage: str
    call: int           # index of the stage call (forward, decode, ...) on this rank
    step: int
    start: int
    dur: int
    wait: int           # since the previous task of the same stream ended (Wait Time)
    task_id: Optional[int]
    host_ts: int        # launching host op
    host_dur: int
    conn: int           # connection_id shared by the host launch and the device task
    peer_wait: int = 0  # collectives: time spent waiting for the other ranks
    transfer: int = 0   # collectives: transfer time


class HostRange(NamedTuple):
    name: str
    start: int
    dur: int


@dataclass
class RankState:
    host: int
    compute_free: int = 0
    comm_free: int = 0
    last_compute_end: int = 0
    last_comm_end: int = 0
    task: int = TASK_ID_BASE
    conn: int = 0
    comm_index: int = 0
    calls: Dict[str, int] = field(default_factory=dict)


@dataclass
class RankStep:
    """One rank's share of one profiler step."""

    step: int
    kernels: List[Kernel]
    ranges: List[HostRange]       # module ranges, in begin order
    profiler_step: HostRange      # ProfilerStep#N


class Timeline:
    """Generates the profiler steps of a spec one at a time, all ranks together."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.rng = random.Random(spec.seed)
        self.denoise_steps = effective_denoise_steps(spec)
        self.items = list(pipeline_call(spec, self.denoise_steps))   # the same every step
        self.states = [RankState(host=EPOCH_NS - 20_000_000 + 37_000 * r) for r in range(spec.ranks)]
        # Later ranks run a little slower, so the fast rank waits in collectives.
        self.speed = [1.0 + 0.03 * r for r in range(spec.ranks)]
        if spec.slow_rank is not None:
            self.speed[spec.slow_rank] *= spec.slow_factor

    def _jitter(self, ns: int, spread: float = 0.04) -> int:
        return max(1, int(ns * (1.0 + spread * (2.0 * self.rng.random() - 1.0))))

    def steps(self):
        for i in range(self.spec.profiler_steps):
            yield self._step(i + 1)

    def _step(self, step: int) -> List[RankStep]:
        states = self.states
        out = [RankStep(step, [], [], HostRange(f"ProfilerStep#{step}", st.host, 0)) for st in states]
        open_ranges: List[List[Tuple[str, int]]] = [[] for _ in states]
        stage, calls = "Other", [0] * len(states)
        for item in self.items:
            if isinstance(item, Call):
                stage = item.stage
                for r, st in enumerate(states):
                    calls[r] = st.calls.get(stage, 0)
                    st.calls[stage] = calls[r] + 1
                    # The pipeline reads a result back before each stage call (progress,
                    # scheduler state), so the host waits for the device and relaunches: the
                    # device idles meanwhile, which is the Free time of the step.
                    st.host = max(st.host, st.compute_free, st.comm_free)
                    st.host += self._jitter(SCHEDULER_NS if stage == "DiT" else SCHEDULER_NS // 3)
            elif isinstance(item, Range):
                for r, st in enumerate(states):
                    if item.begin:
                        open_ranges[r].append((item.name, st.host))
                    else:
                        name, begin = open_ranges[r].pop()
                        out[r].ranges.append(HostRange(name, begin, st.host - begin))
                    st.host += 2_000
            elif item.category == "Comm":
                self._collective(item, stage, calls, step, out)
            else:
                for r, st in enumerate(states):
                    out[r].kernels.append(self._compute(item, stage, calls[r], step, st, r))
        for r, st in enumerate(states):
            end = max(st.host, st.compute_free, st.comm_free) + 20_000   # synchronize at step end
            ps = out[r].profiler_step
            out[r].profiler_step = HostRange(ps.name, ps.start, end - ps.start)
            out[r].ranges.sort(key=lambda h: h.start)
            out[r].kernels.sort(key=lambda k: k.start)
        restart = max(o.profiler_step.start + o.profiler_step.dur for o in out) + STEP_GAP_NS
        for r, st in enumerate(states):
            st.host = restart + 37_000 * r
        return out

    def _launch(self, op: Op, st: RankState) -> Tuple[int, int]:
        ts, dur = st.host, self._jitter(op.launch_ns, 0.3)
        st.host += dur + self._jitter(HOST_STEP_NS, 0.5)
        st.conn += 1
        return ts, dur

    def _compute(self, op: Op, stage: str, call: int, step: int, st: RankState, r: int) -> Kernel:
        host_ts, host_dur = self._launch(op, st)
        start = max(st.compute_free + self._jitter(MIN_GAP_NS, 0.5),
                    host_ts + host_dur + LAUNCH_LATENCY_NS)
        if op.waits_comm:
            start = max(start, st.last_comm_end + self._jitter(MIN_GAP_NS, 0.5))
        start += start & 1
        dur = self._jitter(int(op.dur_ns * self.speed[r]))
        wait = start - st.compute_free if st.compute_free else 0
        st.compute_free = st.last_compute_end = start + dur
        task = st.task % 65536
        st.task += 1
        return Kernel(op, op.name, stage, call, step, start, dur, wait, task, host_ts, host_dur, st.conn)

    def _collective(self, op: Op, stage: str, calls: List[int], step: int, out: List[RankStep]) -> None:
        arrivals, launches = [], []
        for st in self.states:
            host_ts, host_dur = self._launch(op, st)
            arrive = max(st.comm_free, st.last_compute_end, host_ts + host_dur + LAUNCH_LATENCY_NS)
            arrive += self._jitter(MIN_GAP_NS, 0.5)
            arrive += 1 - (arrive & 1)
            arrivals.append(arrive)
            launches.append((host_ts, host_dur))
        transfer = self._jitter(op.dur_ns)
        end = max(arrivals) + 2_000 + transfer
        for r, st in enumerate(self.states):
            name = f"{op.name}_{576 + self.spec.ranks}_{st.comm_index}_1"
            st.comm_index += 1
            wait = arrivals[r] - st.comm_free if st.comm_free else 0
            st.comm_free = st.last_comm_end = end
            host_ts, host_dur = launches[r]
            out[r].kernels.append(Kernel(op, name, stage, calls[r], step, arrivals[r],
                                         end - arrivals[r], wait, None, host_ts, host_dur, st.conn,
                                         max(arrivals) - arrivals[r], transfer))
