"""torch_npu's trace_view.json (ASCEND_PROFILER_OUTPUT/, or alone as what ``export_chrome_trace`` writes).

Processes are told apart by their ``process_name`` metadata (pids are arbitrary numbers):
- ``Ascend Hardware``: device tasks, one thread per stream. Tasks that ran an operator carry its name;
  the others are named by their task type (MEMCPY_ASYNC, EVENT_RECORD, SDMA, Notify Wait, Write Value),
  which is how kernel_details.csv leaves them out too.
- ``HCCL`` (``Communication`` in newer CANN): ``hcom_*`` collective ops on the communication thread,
  and their Notify/Memcpy sub-tasks on the Plane threads (not kernels).
- ``Overlap Analysis``: one thread per lane (Computing, Communication, ...).
- host processes (labelled CPU: ``Python``, ``CANN``): cpu ops, python functions, ``ProfilerStep#N``.

Kernels are written only when kernel_details.csv gave none for the rank (it has shapes and PMU
data). Their step is the ``ProfilerStep#N`` host range holding the launch (the earliest host end of a
flow arriving at the task), else the one holding the task's start. trace_view cannot tell AI_CORE from
AI_VECTOR_CORE kernels (both carry Task Type AI_CORE), so ``core`` is the task type as written
(older files write ``Other`` for every operator: core is NULL then); comm ops get ``HCCL``. ``type``
comes from the name (``type_from_name``): the events carry no operator type.

Flows: every ``f`` event on a device process joined to the ``s`` with the same (cat, id); host-to-host
flows (enqueue/dequeue, fwdbwd) are not host-to-device links and are left out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Tuple

import duckdb

from . import op_statistic
from .base import LoadResult, RankContext, kernels_fewer
from .chrome_trace import STEP_FROM, drop_staged_trace, stage_trace, trace_flavour

KIND = "trace_view"
FILE_NAMES = ("trace_view.json",)
STAGE = "stg_trace_view"

# Process and thread names are a few rows; tv_event joins them to the events as a view, because
# copying millions of staged events (args included) costs more than the few scans that read them.
PROCESSES = """
CREATE OR REPLACE TEMP TABLE tv_process AS
SELECT *, (labels = 'CPU' OR (labels IS NULL AND pname IN ('Python', 'CANN'))) AS host
FROM (SELECT pid,
             any_value(args->>'name') FILTER (WHERE name = 'process_name') AS pname,
             any_value(args->>'labels') FILTER (WHERE name = 'process_labels') AS labels
      FROM stg_trace_view WHERE ph = 'M' AND name IN ('process_name', 'process_labels')
      GROUP BY pid);
CREATE OR REPLACE TEMP TABLE tv_thread AS
SELECT pid, tid, any_value(args->>'name') AS tname FROM stg_trace_view
WHERE ph = 'M' AND name = 'thread_name' GROUP BY pid, tid;
CREATE OR REPLACE TEMP VIEW tv_event AS
SELECT e.*, p.pname, p.host, t.tname
FROM stg_trace_view e
LEFT JOIN tv_process p USING (pid)
LEFT JOIN tv_thread t USING (pid, tid)
WHERE e.ph <> 'M';
"""

# Each flow end joined to the start with the same (cat, id) nearest in time (ids can repeat over a
# long run). Device ends can precede their host start by a few µs of clock skew, so no ordering is assumed.
LINKS = """
CREATE OR REPLACE TEMP TABLE tv_link AS
SELECT f.cat, f.id, f.pid, f.tid, f.ts_ns AS device_ts_ns, arg_min(s.ts_ns, abs(f.ts_ns - s.ts_ns)) AS host_ts_ns,
       any_value(f.host) AS to_host
FROM (SELECT e.*, p.host FROM stg_trace_view e LEFT JOIN tv_process p USING (pid)
      WHERE e.ph = 'f' AND e.ts_ns IS NOT NULL) f
JOIN (SELECT * FROM stg_trace_view WHERE ph = 's' AND ts_ns IS NOT NULL) s ON f.cat = s.cat AND f.id = s.id
GROUP BY f.cat, f.id, f.pid, f.tid, f.ts_ns
"""

INSERT_FLOWS = """
INSERT INTO flows
SELECT $rank, id, cat, host_ts_ns, device_ts_ns FROM tv_link WHERE NOT coalesce(to_host, false)
"""

STEPS = """
CREATE OR REPLACE TEMP TABLE tv_step AS
SELECT profiler_step(name) AS step, ts_ns AS lo, ts_ns + dur_ns AS hi
FROM tv_event WHERE host AND ph = 'X' AND profiler_step(name) IS NOT NULL
  AND ts_ns IS NOT NULL AND dur_ns IS NOT NULL;
""" + STEP_FROM.format(steps="tv_step")

# Kernels of kernel_details.csv that came without a step (see give_steps), numbered as torch_npu
# numbers them: by the ProfilerStep range holding their launch, the flow's host end (else their own
# start).
STEPS_FROM_TRACE = "no Step Id column; each kernel's step is the trace's ProfilerStep range holding its launch"
LOADED_STEPS = """
CREATE OR REPLACE TEMP TABLE tv_step AS
SELECT profiler_step(name) AS step, start_ns AS lo, start_ns + dur_ns AS hi
FROM host_events WHERE rank = $rank AND dur_ns IS NOT NULL AND profiler_step(name) IS NOT NULL
"""

GIVE_STEPS = """
UPDATE kernels SET step = g.step
FROM (SELECT k.id, s.step
      FROM (SELECT k.rowid AS id, coalesce(f.launch_ns, k.start_ns) AS at_ns
            FROM kernels k
            LEFT JOIN (SELECT device_ts_ns, min(host_ts_ns) AS launch_ns FROM flows WHERE rank = $rank
                       GROUP BY device_ts_ns) f ON f.device_ts_ns = k.start_ns
            WHERE k.rank = $rank AND k.source = 'kernel_details') k
      ASOF JOIN tv_step_from s ON k.at_ns >= s.from_ns) g
WHERE kernels.rowid = g.id AND g.step IS NOT NULL
"""

# The device tasks that are kernels: those that ran an operator (named for it), and the HCCL
# plane's comm ops; kernel_details.csv holds the same ones. (A `->>` lookup beside a comparison or
# an AND stands in parentheses: DuckDB before 2.0, Python 3.9's and 3.10's, binds it looser.)
KERNEL_TASKS = """
e.ph = 'X' AND e.ts_ns IS NOT NULL AND e.dur_ns IS NOT NULL AND e.name IS NOT NULL
AND ((e.pname = 'Ascend Hardware'
      AND e.name IS DISTINCT FROM (e.args->>'Task Type')
      AND NOT regexp_full_match(e.name, '[A-Z][A-Z0-9_]*'))
     OR (comm_process(e.pname) AND e.name LIKE 'hcom\\_%' ESCAPE '\\'))
"""

INSERT_KERNELS = """
INSERT INTO kernels (rank, device_id, step, name, type, core, start_ns, dur_ns, stream_id, task_id, source)
SELECT $rank, $device_id, s.step, k.name, type_from_name(k.name), k.core, k.ts_ns, k.dur_ns, k.stream_id,
       k.task_id, 'trace_view'
FROM (
    SELECT e.name, e.ts_ns, e.dur_ns,
           CASE WHEN comm_process(e.pname) THEN 'HCCL'
                ELSE nullif(clean_text(e.args->>'Task Type'), 'Other') END AS core,
           CASE WHEN comm_process(e.pname) THEN int_or_null(e.args->>'stream id')
                ELSE int_or_null(coalesce(e.args->>'Stream Id', e.args->>'Physic Stream Id')) END AS stream_id,
           int_or_null(coalesce(e.args->>'Task Id', e.args->>'task id')) AS task_id,
           (SELECT min(l.host_ts_ns) FROM tv_link l
            WHERE l.pid = e.pid AND l.tid = e.tid AND l.device_ts_ns = e.ts_ns) AS launch_ns
    FROM tv_event e
    WHERE """ + KERNEL_TASKS + """
) k
ASOF LEFT JOIN tv_step_from s ON coalesce(k.launch_ns, k.ts_ns) >= s.from_ns
"""

# The kernels this trace runs after the last of kernel_details.csv's (RankContext.kernel_file_last_ns),
# beyond a microsecond: the HCCL plane's times are rounded 1 ns off the kernel file's.
AFTER_KERNEL_FILE = "SELECT count(*) FROM tv_event e WHERE e.ts_ns > $last + 1000 AND " + KERNEL_TASKS

INSERT_LANES = """
INSERT INTO overlap_lanes
SELECT $rank, coalesce(tname, name), ts_ns, dur_ns
FROM tv_event
WHERE pname = 'Overlap Analysis' AND ph = 'X' AND ts_ns IS NOT NULL AND dur_ns IS NOT NULL
"""

INSERT_HOST = """
INSERT INTO host_events
SELECT $rank, name, coalesce(cat, pname), ts_ns, dur_ns, tid, args
FROM tv_event WHERE host AND ph IN ('X', 'i', 'I') AND ts_ns IS NOT NULL
"""

# Events of a process the trace neither names nor labels CPU cannot be told host from device:
# counted, not loaded. torch_npu writes that metadata a third of the way into the file, so a trace
# cut before it has none.
UNNAMED = """
SELECT count(*) FROM stg_trace_view e LEFT JOIN tv_process p USING (pid)
WHERE e.ph IN ('X', 'i', 'I') AND p.pname IS NULL AND NOT coalesce(p.host, false)
"""

DEVICE_ID = """
SELECT min(CAST(regexp_extract(labels, 'NPU\\D*(\\d+)', 1) AS INTEGER))
FROM tv_process WHERE regexp_matches(labels, 'NPU\\D*\\d+')
"""

# The rank's trace data this file gives (and all it adds once kernel_details.csv gave the kernels,
# the case in which it waits for the background load: taken back out if that load is stopped).
TRACE_TABLES = ("overlap_lanes", "host_events", "flows")

TEMP_TABLES = ("tv_process", "tv_thread", "tv_link", "tv_step", "tv_step_from")


def sniff(head: bytes) -> bool:
    return trace_flavour(head) == KIND


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    staged = stage_trace(con, path, STAGE, salvage=ctx.salvage)
    try:
        con.execute(PROCESSES)
        con.execute(LINKS)
        params = {"rank": ctx.rank}
        rows = 0
        for sql in (INSERT_LANES, INSERT_HOST, INSERT_FLOWS):
            rows += _inserted(con, sql, params)
        ctx.settle()
        if ctx.device_id is None:
            ctx.device_id = con.execute(DEVICE_ID).fetchone()[0]
        after = 0
        if "kernel_details" not in ctx.loaded:
            con.execute(STEPS)
            rows += _inserted(con, INSERT_KERNELS, {**params, "device_id": ctx.device_id})
        elif ctx.kernel_file_last_ns is not None and not any(
                f.name in op_statistic.FILE_NAMES for f in ctx.files.get(op_statistic.KIND, ())):
            # A copy of kernel_details.csv cut at a line end reads as whole: only the tasks beside
            # it tell. (op_statistic.csv's counts say so where it is there, with the types short.)
            after = con.execute(AFTER_KERNEL_FILE, {"last": ctx.kernel_file_last_ns}).fetchone()[0]
        unnamed = con.execute(UNNAMED).fetchone()[0]
        note = "; ".join(filter(None, [staged.note, unnamed and (
            f"{unnamed:,} events of processes the trace does not name (no process_name metadata"
            f"{' before the cut' if staged.cut else ''}): not loaded"), after and (
            f"{kernels_fewer(after)}'s device tasks, which run on after its last row: "
            "rows missing from it that no reader can see")]))
        return LoadResult(rows=rows, skipped=staged.lost + staged.untimed + unnamed, note=note)
    finally:
        con.execute("DROP VIEW IF EXISTS tv_event")
        for t in TEMP_TABLES:
            con.execute(f"DROP TABLE IF EXISTS {t}")
        drop_staged_trace(con, STAGE)


def give_steps(con: duckdb.DuckDBPyConnection, rank: int) -> Tuple[int, int]:
    """Number the steps of the rank's kernels that kernel_details.csv gave without one (a file
    re-exported without Step Id), once its trace's host events and flows are in; returns how many
    got one, of how many."""
    try:
        con.execute(LOADED_STEPS, {"rank": rank})
        con.execute(STEP_FROM.format(steps="tv_step"))
        given = _inserted(con, GIVE_STEPS, {"rank": rank})
        return given, con.execute("SELECT count(*) FROM kernels WHERE rank = ? AND source = 'kernel_details'",
                                  [rank]).fetchone()[0]
    finally:
        for t in ("tv_step", "tv_step_from"):
            con.execute(f"DROP TABLE IF EXISTS {t}")


def _inserted(con, sql: str, params: dict) -> int:
    return con.execute(sql, params).fetchone()[0]
