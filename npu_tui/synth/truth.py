"""What the generated profile contains, computed from the timeline model (never from its files).

The truth file ``<name>.truth.json`` lies beside the profile it describes. All times are integer
nanoseconds on the profile's own clock (the files write them as µs with 3 decimals, so
``ns / 1000`` is exactly the value in the file). Fields:

- ``preset``: the preset name, or null; ``spec``: every Spec field; ``denoise_steps``: the number
  actually generated (differs from the spec when ``kernels`` was given); ``layout``; ``level``.
- ``ranks``: one object per rank, in rank order:
  - ``rank``, ``device_id``; ``kernel_count`` (rows of kernel_details.csv = compute and comm tasks
    of the Ascend Hardware and HCCL processes, without HCCL sub-tasks); ``kernel_time_ns``.
  - ``stages``: ``DiT``, ``VAE`` and ``Other``, each with
    - ``windows``: ``[start_ns, end_ns]`` per call of the stage (each DiT forward, each VAE decode,
      the latent init + text encoding of each pipeline call), first kernel start to last kernel
      end of that call. No kernel of another stage lies inside a window, and no kernel lies
      between two DiT windows of one pipeline call.
    - ``wall_ns``: sum of the window lengths; ``kernel_count``; ``kernel_time_ns``.
    - ``categories``: ``{FA, MatMul, Conv, Vector, Comm, Other}`` each ``{"time_ns", "count"}``,
      the category the model gave each kernel kind (design.md §5; AI_CPU kernels are Other).
    - ``comm_ns``: length of the union of comm kernels in the windows; ``exposed_comm_ns``: length
      of (union of comm - union of compute) inside the windows; compute = FA, MatMul, Conv, Vector
      and AI_CPU kernels.
    - ``step_time_ns``: the time the stage holds within the steps, each of its windows holding
      until the rank's next window starts (the first from the first step's start, the last to
      the last step's end), clipped to the steps' spans; ``exposed_step_ns``: the exposed comm
      inside that time. Their ratio is the exposed comm's share of the stage per step.
  - ``steps``: one object per profiler step (Step Id), the values of step_trace_time.csv in ns:
    ``computing_ns`` (union of compute), ``comm_ns`` (union of comm), ``comm_not_overlapped_ns``
    (comm minus compute), ``overlapped_ns`` (comm - not overlapped), ``stage_ns`` (first kernel
    start to last kernel end of the step), ``free_ns`` (stage - computing - not overlapped: the
    gaps with neither), ``bubble_ns`` (0), ``preparing_ns`` (ProfilerStep#N host start to the
    step's first kernel start), plus ``start_ns`` / ``end_ns`` of the stage span and
    ``kernel_count``.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Dict, List, Optional

from . import intervals as iv
from .spec import Spec
from .timeline import RankStep

STAGES = ("DiT", "VAE", "Other")
CATEGORIES = ("FA", "MatMul", "Conv", "Vector", "Comm", "Other")


class Overlap:
    """One rank-step's overlap lanes and step_trace values, from its kernels."""

    def __init__(self, rs: RankStep) -> None:
        ks = rs.kernels
        self.compute = iv.union((k.start, k.start + k.dur) for k in ks if k.op.compute)
        self.comm = iv.union((k.start, k.start + k.dur) for k in ks if k.op.category == "Comm")
        self.not_overlapped = iv.subtract(self.comm, self.compute)
        self.start = min(k.start for k in ks)
        self.end = max(k.start + k.dur for k in ks)
        self.free = iv.subtract([(self.start, self.end)], iv.union(self.compute + self.comm))
        computing, comm = iv.total(self.compute), iv.total(self.comm)
        cno = iv.total(self.not_overlapped)
        self.values = {
            "computing_ns": computing,
            "comm_not_overlapped_ns": cno,
            "overlapped_ns": comm - cno,
            "comm_ns": comm,
            "free_ns": (self.end - self.start) - computing - cno,
            "stage_ns": self.end - self.start,
            "bubble_ns": 0,
            "preparing_ns": self.start - rs.profiler_step.start,
        }


class TruthBuilder:
    def __init__(self, spec: Spec, preset: Optional[str], denoise_steps: int) -> None:
        self.spec, self.preset, self.denoise_steps = spec, preset, denoise_steps
        self.ranks: List[Dict] = [self._empty_rank(r) for r in range(spec.ranks)]
        self.windows = [{s: {} for s in STAGES} for _ in range(spec.ranks)]
        self.comm = [[] for _ in range(spec.ranks)]
        self.exposed = [[] for _ in range(spec.ranks)]

    def _empty_rank(self, r: int) -> Dict:
        stages = {
            s: {"windows": [], "wall_ns": 0, "kernel_count": 0, "kernel_time_ns": 0,
                "categories": {c: {"time_ns": 0, "count": 0} for c in CATEGORIES},
                "comm_ns": 0, "exposed_comm_ns": 0}
            for s in STAGES
        }
        return {"rank": r, "device_id": self.spec.first_device + r, "kernel_count": 0,
                "kernel_time_ns": 0, "stages": stages, "steps": []}

    def add(self, r: int, rs: RankStep, overlap: Overlap) -> None:
        rank = self.ranks[r]
        for k in rs.kernels:
            st = rank["stages"][k.stage]
            cat = st["categories"][k.op.category]
            cat["time_ns"] += k.dur
            cat["count"] += 1
            st["kernel_count"] += 1
            st["kernel_time_ns"] += k.dur
            w = self.windows[r][k.stage].setdefault((rs.step, k.call), [k.start, k.start + k.dur])
            w[0], w[1] = min(w[0], k.start), max(w[1], k.start + k.dur)
        rank["kernel_count"] += len(rs.kernels)
        rank["kernel_time_ns"] += sum(k.dur for k in rs.kernels)
        self.comm[r].extend(overlap.comm)
        self.exposed[r].extend(overlap.not_overlapped)
        rank["steps"].append({"step": rs.step, **overlap.values, "start_ns": overlap.start,
                              "end_ns": overlap.end, "kernel_count": len(rs.kernels)})

    def _held(self, r: int, steps) -> Dict[str, list]:
        """Each stage's spans: a window holds until the rank's next window starts."""
        wins = sorted((w[0], w[1], s) for s in STAGES for w in self.windows[r][s].values())
        held: Dict[str, list] = {s: [] for s in STAGES}
        for i, (a, b, s) in enumerate(wins):
            start = min(a, steps[0][0]) if i == 0 else a
            end = wins[i + 1][0] if i + 1 < len(wins) else max(b, steps[-1][1])
            held[s].append((start, end))
        return held

    def result(self) -> Dict:
        for r, rank in enumerate(self.ranks):
            comm, exposed = iv.union(self.comm[r]), iv.union(self.exposed[r])
            for s in STAGES:
                st = rank["stages"][s]
                wins = sorted(tuple(w) for w in self.windows[r][s].values())
                st["windows"] = [list(w) for w in wins]
                st["wall_ns"] = iv.total(wins)
                st["comm_ns"] = iv.total(iv.clip(comm, wins))
                st["exposed_comm_ns"] = iv.total(iv.clip(exposed, wins))
            steps = iv.union((st["start_ns"], st["end_ns"]) for st in rank["steps"])
            held = self._held(r, steps)
            for s in STAGES:
                st, time = rank["stages"][s], iv.clip(iv.union(held[s]), steps)
                st["step_time_ns"], st["exposed_step_ns"] = iv.total(time), iv.total(iv.clip(exposed, time))
        return {
            "preset": self.preset,
            "spec": asdict(self.spec),
            "denoise_steps": self.denoise_steps,
            "layout": self.spec.layout,
            "level": self.spec.level,
            "ranks": self.ranks,
        }
