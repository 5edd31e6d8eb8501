"""PyTorch profiler (Kineto) traces: ``*.pt.trace.json[.gz]`` or any ``{"traceEvents": [...]}``.

- kernels: device events (``kernel``, ``gpu_memcpy``, ``gpu_memset``; older traces capitalise them),
  NCCL/RCCL kernels included, with the input shapes and dtypes of the op that launched them
  (``Input Dims`` / ``Input type`` of a trace recorded with ``record_shapes``; torch 1.8 wrote
  ``Input dims``). ``core`` is the device for kernels (CUDA; ROCm when the runtime calls are
  ``hip*``; XPU, PrivateUse1 or MLU by the runtime calls' category) and the category for copies and
  sets. ``type`` is the CPU op that launched the kernel: the runtime call with the same
  ``correlation``, then the innermost ``cpu_op`` open on its thread at that moment (External id does
  not link them: traces set it to the correlation). Without one, the name.
- flows: one per device event with a correlated runtime call (host = the call, device = the event);
  that is what Kineto's ``ac2g`` flow arrows draw, and sampled traces keep the correlation but drop
  the arrows.
- host_events: cpu ops, user annotations (``ProfilerStep#N``, record_function), python functions,
  runtime/driver calls.
- A CPU-only trace (torch.profiler on the CPU) has no device events: its outermost cpu ops per
  thread become the kernels, with core ``CPU``, and so do gloo's collectives (``gloo:*`` spans).
- memory_record: ``[memory]`` events (``profile_memory=True``), the allocator's totals after each
  allocation or free: device memory as component PTA, the CPU's as CPU.
- operator_memory: from the same events, each allocation with the op that made it and its release.
- device_memory: the capacity of the rank's device from ``deviceProperties`` (``totalGlobalMem``).
- device id from the device events' ``args.device``; the rank is read by discovery (``rank_hint``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import List, Optional, Tuple

import duckdb

from ..errors import EmptyTrace
from .base import MERGED_AS_ONE, LoadResult, RankContext
from .chrome_trace import STEP_FROM, drop_staged_trace, stage_trace, trace_flavour

KIND = "kineto"
FILE_NAMES = ()
# tensorboard_trace_handler's names, so a broken trace is reported rather than passed over.
NAME_PATTERN = re.compile(r"\.pt\.trace\.json(\.gz)?$")
STAGE = "stg_kineto"
# The events read: complete ones and instants. Flow arrows come from the correlation instead (a
# sampled trace drops them), so their 's'/'f' pairs, two for each kernel, are not staged.
PHASES = ("X", "i", "I")

_DISTRIBUTED = re.compile(rb'"distributedInfo"\s*:\s*(?=\{)')
# Its rank where the object does not parse (cut with the head): among keys before it, lists of flat
# objects (pg_config, which a sorted dump puts first).
_RANK = re.compile(rb'\{(?:[^{}]|\{[^{}]*\})*?"rank"\s*:\s*(\d+)')
# The process that took a trace: its host (newer torch writes host_name in the header) and the pid
# of its first host op (torch writes ph, cat, name, pid in that order).
_HOST = re.compile(rb'"host_name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_HOST_PID = re.compile(rb'"cat"\s*:\s*"(?:cpu_op|user_annotation|python_function)"\s*,\s*'
                       rb'"name"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*"pid"\s*:\s*(\d+)')

# Host calls that launch device work, by their runtime's category: CUDA's (ROCm's too), torch 1.x's
# spelling, Intel XPU's, a PrivateUse1 backend's (an out-of-tree device), Cambricon MLU's.
RUNTIMES = ("cuda_runtime", "runtime", "cuda_driver", "xpu_runtime", "xpu_driver", "privateuse1_runtime",
            "privateuse1_driver", "mlu_runtime")
# Device events: kernels, copies and sets (torch 1.x capitalised them; MLU names its own copies).
DEVICE = ("kernel", "gpu_memcpy", "memcpy", "gpu_memset", "memset", "mlu_memcpy", "mlu_memset")


def _listed(cats) -> str:
    return "(" + ", ".join(f"'{c}'" for c in cats) + ")"


EVENTS = """
-- a view, not a copy: the staged events are the trace's size in memory once already
-- (The legacy autograd profiler's export gives its events no category, and its process the name
-- "CPU functions": its ops, named in a namespace (aten::mm), and record_function's ranges, named as
-- one likes (ProfilerStep#N), as Kineto's categories would be.)
CREATE OR REPLACE TEMP VIEW kn_event AS
SELECT *, coalesce(lower(cat), CASE WHEN pid = 'CPU functions' THEN
                                   CASE WHEN contains(name, '::') THEN 'cpu_op' ELSE 'user_annotation' END
                               END) AS lcat
FROM stg_kineto WHERE ph IN ('X', 'i', 'I') AND ts_ns IS NOT NULL;
CREATE OR REPLACE TEMP TABLE kn_launch AS
SELECT args->>'correlation' AS corr, pid, tid, ts_ns
FROM kn_event
WHERE lcat IN """ + _listed(RUNTIMES) + """ AND (args->>'correlation') IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY args->>'correlation' ORDER BY ts_ns) = 1;
CREATE OR REPLACE TEMP TABLE kn_device AS
SELECT *, args->>'correlation' AS corr
FROM kn_event WHERE ph = 'X' AND dur_ns IS NOT NULL
  AND lcat IN """ + _listed(DEVICE) + """;
"""

# The innermost cpu_op open at each launch and each allocation. Ops on a thread nest, so the
# number of ops open at a moment is the depth of the innermost one, and that op is the last one
# to start at that depth before the moment: a running sum over start/end marks, then an ASOF join
# (no quadratic range join). One sweep for both kinds of point: it is most of the Kineto load.
LAUNCH_OPS = """
CREATE OR REPLACE TEMP TABLE kn_launch_op AS
WITH op AS (
    SELECT hash(pid, tid) AS thread, seq, ts_ns, ts_ns + dur_ns AS end_ns
    FROM kn_event WHERE lcat IN ('cpu_op', 'operator') AND ph = 'X' AND dur_ns > 0
), point AS (
    SELECT hash(pid, tid) AS thread, ts_ns, corr, NULL::BIGINT AS alloc FROM kn_launch
    UNION ALL SELECT hash(pid, tid), ts_ns, NULL, seq FROM kn_alloc
), mark AS (
    -- At equal times: ends (inner first), then starts (outer first), then points. An op and its
    -- child can share start and duration at µs resolution; the file lists the parent first.
    -- Only numbers go through the sweep (the op's seq); its name and shapes are joined after.
    SELECT thread, end_ns AS t, 0 AS kind, end_ns - ts_ns AS tie, -seq AS tie2, -1 AS delta,
           NULL::BIGINT AS op_seq, NULL AS corr, NULL::BIGINT AS alloc FROM op
    UNION ALL SELECT thread, ts_ns, 1, ts_ns - end_ns, seq, 1, seq, NULL, NULL FROM op
    UNION ALL SELECT thread, ts_ns, 2, 0, 0, 0, NULL, corr, alloc FROM point
), depth AS (
    -- One order over every thread, not a window per thread: each thread's marks sum to zero, so
    -- the count restarts by itself, and one partition per thread ran on one core (1.6M ops on a
    -- thread: 2.6 s against 2.1 s).
    SELECT *, sum(delta) OVER (ORDER BY thread, t, kind, tie, tie2 ROWS UNBOUNDED PRECEDING) AS depth FROM mark
), innermost AS (
    SELECT l.corr, l.alloc, o.op_seq
    FROM (SELECT * FROM depth WHERE kind = 2 AND depth > 0) l
    ASOF JOIN (SELECT * FROM depth WHERE kind = 1) o
      ON l.thread = o.thread AND l.depth = o.depth AND l.t >= o.t
), launch_op AS (
    SELECT i.corr, i.alloc, e.name AS op, coalesce(io[1], io[3]) AS dims, io[2] AS types
    FROM innermost i JOIN stg_kineto e ON e.seq = i.op_seq,
         LATERAL (SELECT json_extract(e.args, ['Input Dims', 'Input type', 'Input dims']) AS io)
), spelt AS (
    -- Shapes repeat (every step, every block): each distinct pair is spelt out once, which is
    -- most of this statement's time when done per launch. Ops recorded without shapes have
    -- NULL for both, matched as equal.
    SELECT dims, types, kineto_list(dims) AS input_shapes, kineto_list(types) AS input_dtypes
    FROM (SELECT DISTINCT dims, types FROM launch_op)
)
SELECT l.corr, l.alloc, l.op, s.input_shapes, s.input_dtypes
FROM launch_op l LEFT JOIN spelt s ON s.dims IS NOT DISTINCT FROM l.dims AND s.types IS NOT DISTINCT FROM l.types
"""

STEPS = """
CREATE OR REPLACE TEMP TABLE kn_step AS
SELECT profiler_step(name) AS step, ts_ns AS lo, ts_ns + dur_ns AS hi,
       -- the process that took the trace records its steps on the host (a GPU's copies of them are
       -- gpu_user_annotation, under the device's pid)
       CASE WHEN lcat IN ('user_annotation', 'cpu_op') THEN CAST(pid AS VARCHAR) END AS host_pid
FROM kn_event WHERE ph = 'X' AND dur_ns IS NOT NULL AND profiler_step(name) IS NOT NULL;
""" + STEP_FROM.format(steps="kn_step")

INSERT_KERNELS = """
INSERT INTO kernels (rank, device_id, step, name, type, core, start_ns, dur_ns, stream_id, input_shapes,
                     input_dtypes, source)
SELECT $rank, coalesce(int_or_null(d.args->>'device'), $device_id), s.step,
       d.name, coalesce(o.op, d.name),
       CASE WHEN d.lcat = 'kernel' THEN $runtime ELSE d.cat END,
       d.ts_ns, d.dur_ns, int_or_null(d.args->>'stream'), o.input_shapes, o.input_dtypes, 'kineto'
FROM kn_device d
LEFT JOIN kn_launch l USING (corr)
LEFT JOIN kn_launch_op o USING (corr)
ASOF LEFT JOIN kn_step_from s ON coalesce(l.ts_ns, d.ts_ns) >= s.from_ns
"""

# A CPU-only run has no device events: its outermost CPU ops are the work, so they stand in for
# kernels (core 'CPU', typed by their own name; the backward pass's by the autograd function
# each runs, `ConvolutionBackward0`). Nested ops are their children's time, not more.
# A gloo collective runs on gloo's own thread as a record_function span (`gloo:all_reduce`): that
# span is the communication, while the op that queued it (`c10d::allreduce_`) returns at once.
INSERT_CPU_KERNELS = """
INSERT INTO kernels (rank, device_id, step, name, type, core, start_ns, dur_ns, input_shapes, input_dtypes, source)
SELECT $rank, NULL, s.step, e.name, regexp_replace(e.name, '^autograd::engine::evaluate_function: ', ''), 'CPU',
       e.ts_ns, e.dur_ns, kineto_list(coalesce(e.args->'Input Dims', e.args->'Input dims')),
       kineto_list(e.args->'Input type'), 'kineto'
FROM (SELECT *, max(ts_ns + dur_ns) OVER (PARTITION BY pid, tid ORDER BY ts_ns, dur_ns DESC, seq
                                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
      FROM kn_event WHERE (lcat IN ('cpu_op', 'operator') OR lcat = 'user_annotation' AND starts_with(name, 'gloo:'))
                          AND ph = 'X' AND dur_ns > 0) e
ASOF LEFT JOIN kn_step_from s ON e.ts_ns >= s.from_ns
WHERE e.prev_end IS NULL OR e.ts_ns >= e.prev_end
"""

INSERT_FLOWS = """
INSERT INTO flows
SELECT $rank, d.corr, 'ac2g', l.ts_ns, d.ts_ns FROM kn_device d JOIN kn_launch l USING (corr)
"""

INSERT_HOST = """
INSERT INTO host_events
SELECT $rank, name, cat, ts_ns, dur_ns, tid, args
FROM kn_event
WHERE lcat IN """ + _listed(("cpu_op", "operator", "user_annotation", "python_function", "cpu_instant_event",
                               *RUNTIMES)) + """
"""

# ``[memory]`` events (a trace recorded with profile_memory: instants, which torch 2.13's Python
# exporter, use_python_export, writes as complete events with a dur): after each allocation or
# free, the allocator's totals in bytes. Device Type is c10's: 0 the CPU, others a device (1 CUDA,
# PrivateUse1 20 an NPU); device memory is the framework allocator's (PTA), the CPU's its own.
INSERT_MEMORY = """
INSERT INTO memory_record
SELECT $rank, CASE WHEN dtype = 0 THEN 'CPU' ELSE 'device:' || coalesce(int_or_null(args->>'Device Id'), 0) END,
       CASE WHEN dtype = 0 THEN 'CPU' ELSE 'PTA' END, ts_ns,
       TRY_CAST(args->>'Total Allocated' AS BIGINT), TRY_CAST(args->>'Total Reserved' AS BIGINT), NULL, NULL
FROM (SELECT *, int_or_null(args->>'Device Type') AS dtype FROM kn_event WHERE name = '[memory]')
WHERE TRY_CAST(args->>'Total Allocated' AS BIGINT) IS NOT NULL
"""

# Each allocation an operator made, as torch_npu's operator_memory.csv gives it: a ``[memory]``
# event with positive Bytes, released by the next event of the same address, a negative one; its
# operator (LAUNCH_OPS) is the innermost cpu_op open on its thread (one outside every op is no
# operator's). The device's allocations, or in a trace without any the CPU's (as memory_series
# takes them). A trace without [memory] events gets the table empty (LIMIT 0), unsearched.
ALLOCS = """
CREATE OR REPLACE TEMP TABLE kn_alloc AS
WITH mem AS (
    SELECT seq, pid, tid, ts_ns, dtype, coalesce(int_or_null(args->>'Device Id'), 0) AS did,
           args->>'Addr' AS addr, TRY_CAST(args->>'Bytes' AS BIGINT) AS bytes,
           TRY_CAST(args->>'Total Allocated' AS BIGINT) / 1048576.0 AS allocated_mb,
           -- the CPU's allocator records no reserve (its 0 is not one)
           CASE WHEN dtype <> 0 THEN TRY_CAST(args->>'Total Reserved' AS BIGINT) / 1048576.0 END AS reserved_mb
    FROM (SELECT *, int_or_null(args->>'Device Type') AS dtype FROM kn_event
          WHERE name = '[memory]')
    WHERE (args->>'Addr') IS NOT NULL
), kept AS (
    SELECT * FROM mem WHERE (dtype <> 0) = (SELECT bool_or(dtype <> 0) FROM mem)
), paired AS (
    SELECT *, lead(ts_ns) OVER w AS next_ns, lead(bytes) OVER w AS next_bytes,
           lead(allocated_mb) OVER w AS next_allocated_mb, lead(reserved_mb) OVER w AS next_reserved_mb
    FROM kept WINDOW w AS (PARTITION BY dtype, did, addr ORDER BY ts_ns, seq)
)
SELECT *, next_bytes < 0 AS released FROM paired WHERE bytes > 0
"""
INSERT_OPERATOR_MEMORY = """
INSERT INTO operator_memory (rank, device, name, size_bytes, alloc_ns, release_ns, duration_ns,
                             alloc_allocated_mb, alloc_reserved_mb, release_allocated_mb, release_reserved_mb)
SELECT $rank, CASE WHEN a.dtype = 0 THEN 'CPU' ELSE 'device:' || a.did END, o.op, a.bytes, a.ts_ns,
       CASE WHEN released THEN next_ns END, CASE WHEN released THEN next_ns - a.ts_ns END,
       a.allocated_mb, a.reserved_mb,
       CASE WHEN released THEN next_allocated_mb END, CASE WHEN released THEN next_reserved_mb END
FROM kn_alloc a JOIN kn_launch_op o ON o.alloc = a.seq
"""

# The kernels' core: the device the runtime calls drive (ROCm writes its hip* calls as CUDA's).
RUNTIME = """
SELECT CASE WHEN bool_or(name LIKE 'hip%') THEN 'ROCm' WHEN bool_or(starts_with(lcat, 'xpu_')) THEN 'XPU'
            WHEN bool_or(starts_with(lcat, 'privateuse1_')) THEN 'PrivateUse1'
            WHEN bool_or(starts_with(lcat, 'mlu_')) THEN 'MLU' ELSE 'CUDA' END
FROM kn_event WHERE lcat IN """ + _listed(RUNTIMES) + """
"""
DEVICE_ID = "SELECT min(int_or_null(args->>'device')) FROM kn_device"
CPU_OPS = "SELECT count(*) FROM kn_event WHERE lcat IN ('cpu_op', 'operator')"
# [memory] events that give no totals (an older torch's, which recorded each block's bytes alone):
# what is allocated at a moment cannot be told from them.
NO_TOTALS = ("its [memory] events give no allocator totals (an older torch recorded none): not loaded, the memory "
             "figures are missing")
UNTOTALLED = """
SELECT count(*) FROM kn_event WHERE name = '[memory]' AND TRY_CAST(args->>'Total Allocated' AS BIGINT) IS NULL
"""
DEVICE_KERNELS = "SELECT count(*) FROM kernels WHERE rank = $rank AND core <> 'CPU'"

TEMP_TABLES = ("kn_launch", "kn_device", "kn_alloc", "kn_launch_op", "kn_step", "kn_step_from")


def sniff(head: bytes) -> bool:
    return trace_flavour(head) == KIND


def rank_hint(text: bytes) -> Optional[int]:
    """``distributedInfo.rank`` when this part of the file (its head: torch writes it before the
    events) holds it, wherever the object puts it (a dump with sorted keys puts pg_config first)."""
    at = _DISTRIBUTED.search(text)
    if at is None:
        return None
    try:
        info, _ = json.JSONDecoder().raw_decode(text[at.end():].decode("utf-8", "replace"))
    except ValueError:
        m = _RANK.match(text, at.end())
        return int(m.group(1)) if m else None
    rank = info.get("rank")
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else None


def process_hint(head: bytes) -> Optional[Tuple[bytes, int]]:
    """(host, pid) of the process that took the trace, when the head of the file holds a host op
    (host b"" where torch wrote none): the traces of one process are the cycles of one worker,
    whatever their names."""
    m = _HOST_PID.search(head)
    if m is None:
        return None
    host = _HOST.search(head)
    return (host.group(1) if host else b"", int(m.group(1)))


def devices(listed: Optional[list]) -> Optional[List[Tuple[int, str, int]]]:
    """(id, name, bytes) of each device a trace's deviceProperties (``StagedTrace.devices``) lists
    that can be read here (with an id and a totalGlobalMem). An empty list is a run with no GPU;
    None is a trace without the list, or with no entry read here."""
    if listed is None:
        return None
    read = [(d["id"], str(d.get("name", "")), d["totalGlobalMem"]) for d in listed
            if isinstance(d, dict) and type(d.get("id")) is int and type(d.get("totalGlobalMem")) is int]
    return read if read or not listed else None


EMPTY_CYCLE = "an empty profiling cycle (no ops, no kernels): skipped"
OTHER_SESSION = "another profiling session of the same process"
# tensorboard_trace_handler names a trace "<worker>.<time in ms or ns>.pt.trace.json[.gz]"
WORKER_RE = re.compile(r"^(.+)\.(\d+)\.pt\.trace\.json(?:\.gz)?$")


def load_order(paths: List[Path]) -> List[Path]:
    """A worker's traces, the latest first (tensorboard_trace_handler names each for when it was
    written; others in name order): of two profiling sessions of one process, the later loads."""
    return sorted(paths, key=lambda p: (-written(p), p.name))


def written(path: Path) -> int:
    """When the trace was written (ns), by the time tensorboard_trace_handler puts in its name
    (time.time() in ms, or ns); -1 where its name has none."""
    m = WORKER_RE.match(path.name)
    t = int(m[2]) if m else -1
    return t * 10**6 if 0 <= t < 10**14 else t


SPAN = "SELECT min(ts_ns), max(ts_ns + coalesce(dur_ns, 0)) FROM kn_event"


def _other_session(path: Path, steps: List[int], ctx: RankContext) -> Optional[str]:
    """Why the trace is another profiling session's than the rank's traces loaded (each session
    numbers its steps from 0): it gives a step one of them gave; or, named for when it was written
    (those load the latest first), one at or above theirs, as a cycle written earlier numbers its
    steps below; or a trace loaded before it was an earlier session's already. None: the same one's."""
    if ctx.earlier_session:
        return f"written before {ctx.earlier_session}, not loaded either"
    # (not its own steps: a file loaded again after its commit failed)
    loaded = {st: p for st, p in ctx.trace_steps.items() if p != path}
    named = {st: p for st, p in loaded.items() if written(p) >= 0}
    clash = {loaded[st].name for st in steps if st in loaded}
    if not clash and steps and named and written(path) >= 0 and max(steps) >= min(named):
        clash = {p.name for p in named.values()}
    if not clash:
        return None
    ctx.earlier_session = path.name
    return (f"the loaded {' and '.join(sorted(clash))} number{'s' if len(clash) == 1 else ''} steps "
            f"{min(loaded)}–{max(loaded)}, it {steps[0]}–{steps[-1]}")


def _same_time(path: Path, span: Tuple[int, int], ctx: RankContext) -> Optional[str]:
    """The rank's trace already loaded that covers most of ``span`` or most of whose time ``span``
    covers (at least half of the shorter): the same events written again, not another cycle. (Not
    the file itself, loaded again after its commit failed.)"""
    lo, hi = span
    for other, other_lo, other_hi in ctx.trace_spans:
        if other != path and min(hi, other_hi) - max(lo, other_lo) >= min(hi - lo, other_hi - other_lo) / 2:
            return other.name
    return None


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    # A schedule that cycles can leave a last trace holding one empty ProfilerStep, or no events
    # at all, beside the worker's real ones.
    cycles = len(ctx.files.get(KIND, [])) > 1
    try:
        staged = stage_trace(con, path, STAGE, salvage=ctx.salvage, phases=PHASES)
    except EmptyTrace:
        if cycles:
            return LoadResult(rows=0, note=EMPTY_CYCLE)
        raise
    try:
        con.execute(EVENTS)
        span = con.execute(SPAN).fetchone()
        same = _same_time(path, span, ctx) if span[0] is not None else None
        if same:
            return LoadResult(rows=0, note=f"a copy of {same}'s events (the same process over the same time: "
                                           "another export of that trace): not loaded, or they would count twice")
        con.execute(STEPS)
        steps = [step for (step,) in con.execute("SELECT DISTINCT step FROM kn_step ORDER BY step").fetchall()]
        session = _other_session(path, steps, ctx)
        if session:
            return LoadResult(rows=0, note=f"{OTHER_SESSION} ({session}): not loaded, or the sessions' steps would "
                                           "merge; open it alone to see it")
        if ctx.device_id is None:
            ctx.device_id = con.execute(DEVICE_ID).fetchone()[0]
        world_size = staged.distributed_info.get("world_size")
        if isinstance(world_size, int) and 0 < world_size < 2**31:
            ctx.world_size = world_size
        rank = {"rank": ctx.rank}
        memory = con.execute(INSERT_MEMORY, rank).fetchone()[0]
        con.execute(ALLOCS if memory else ALLOCS + " LIMIT 0")
        con.execute(LAUNCH_OPS)
        # the steps of several processes' hosts: traces merged
        pids = con.execute("SELECT list(DISTINCT host_pid ORDER BY host_pid) FILTER (WHERE host_pid IS NOT NULL) "
                           "FROM kn_step").fetchone()[0] or []
        runtime = con.execute(RUNTIME).fetchone()[0]
        rows = con.execute(INSERT_KERNELS, {**rank, "device_id": ctx.device_id, "runtime": runtime}).fetchone()[0]
        if rows == 0 and cycles and not memory and not con.execute(CPU_OPS).fetchone()[0]:
            return LoadResult(rows=0, note=EMPTY_CYCLE)
        # A cut (or damaged) trace without device events is not a CPU-only run unless it says it
        # had no device (deviceProperties empty): its device events may have been still to come
        # (torch writes them after the CPU ops), so its CPU ops must not pass for kernels; nor
        # are they where another cycle of the same worker ran on the device.
        listed = devices(staged.devices)
        if (rows == 0 and (not staged.damaged or listed == [])
                and not con.execute(DEVICE_KERNELS, rank).fetchone()[0]):
            rows = con.execute(INSERT_CPU_KERNELS, rank).fetchone()[0]
        for sql in (INSERT_FLOWS, INSERT_HOST):
            rows += con.execute(sql, rank).fetchone()[0]
        rows += memory
        if memory:  # the same events again, by operator: not more rows of the file
            con.execute(INSERT_OPERATOR_MEMORY, rank)
        # the capacity of the device this rank ran on (all listed when it is not known)
        listed = [d for d in listed or () if ctx.device_id is None or d[0] == ctx.device_id]
        if listed:
            con.executemany("INSERT INTO device_memory VALUES (?, ?, ?, ?, 'kineto deviceProperties')",
                            [(ctx.rank, i, name, size / 2**20) for i, name, size in listed])
        untotalled = con.execute(UNTOTALLED).fetchone()[0]
        merged = len(pids) > 1 and (f"{MERGED_AS_ONE}: a trace of the steps of {len(pids)} processes (pids "
                                    f"{', '.join(pids)}: traces merged into one file?), not told apart here; its "
                                    "figures are the processes' together")
        note = "; ".join(filter(None, [merged, staged.note, untotalled and NO_TOTALS]))
        if span[0] is not None:
            ctx.trace_spans.append((path, *span))
        ctx.trace_steps.update(dict.fromkeys(steps, path))
        return LoadResult(rows=rows, skipped=staged.lost + staged.untimed + untotalled, note=note)
    finally:
        con.execute("DROP VIEW IF EXISTS kn_event")
        for t in TEMP_TABLES:
            con.execute(f"DROP TABLE IF EXISTS {t}")
        drop_staged_trace(con, STAGE)
