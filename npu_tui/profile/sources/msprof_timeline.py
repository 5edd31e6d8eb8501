"""msprof's Chrome-trace timelines: ``msprof_*.json`` (all processes merged) and, in the older
``device_N/timeline/`` layout, the per-process splits ``task_time_*``, ``hccl_*``, ``step_trace_*``.
Timestamps are numbers: µs of the monotonic raw clock, not the epoch.

Processes, told apart by ``process_name``:
- ``Ascend Hardware``: device tasks per stream; the ones named after an operator are kernels (the
  rest carry their task type as name: NOTIFY_WAIT, MEMCPY_ASYNC...); ``Iteration N`` ranges
  (cat ``Iteration Time``) give the step.
- ``HCCL`` (``Communication`` in newer CANN): collective ops on the communication thread(s); the
  ``Plane N`` threads hold their notify/memcpy sub-tasks, which are not kernels.
- ``Overlap Analysis``: one lane per thread. Processes labelled CPU (``CANN``): host events.

Kernels are written only when no other source (op_summary_*.csv) gave any for the rank.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional, Tuple

import duckdb

from ..errors import SourceError
from ...text import rank_list
from .base import NOT_SPLIT, LoadResult, RankContext
from .chrome_trace import drop_staged_trace, stage_trace
from .op_summary import device_from_folder

KIND = "msprof_timeline"
FILE_NAMES = ()
MERGED_PREFIX = "msprof_"  # msprof_{time}.json, msprof_slice_N_{time}.json; older, msprof_{device}_{model}_{iter}.json
# As op_summary's EXPORT_NAME, of the merged timeline and of its splits (kind).
EXPORT_NAME = re.compile(r"^(?P<kind>msprof|task_time|hccl|step_trace)_(?:(?P<part>\d+(?:_\d+){0,2})_)?"
                         r"(?:slice_(?P<slice>\d+)_)?(?P<time>\d{8,})\.json$")
STAGE = "stg_msprof"
# The per-process files repeat what the merged file of the same device, model and iteration
# holds (task_time_0_2_5.json: msprof_0_2_5.json); without that file beside them, they are the
# iteration's only record.
SPLIT_PREFIXES = ("task_time_", "hccl_", "step_trace_")
# By their names too: one that cannot be read (or is empty) is said, not passed over. (The
# timeline's JSON alone: the summary folder's CSVs share the split prefixes, and msprof_tx_*.csv,
# the mstx markers' summary, the merged one.)
NAME_PATTERN = re.compile(r"^(?:msprof_.*|(?:task_time|hccl|step_trace)_\d+_\d+_\d+(?:_\d{8,})?)\.json$")
SPLIT_NOTE = "a split of {merged} beside it, which is loaded: not loaded too"
# A merged file that lost events (cut, or damaged), beside its iteration's splits: they hold that
# iteration whole but for its overlap lanes and host events, so they load in its place, not beside
# what it kept.
FOR_SPLITS = "not loaded for its splits beside it"
ITERATION = re.compile(r"_\d+_\d+_\d+\.json$")
# The device, model and iteration a file of the older layout is of, its export's time aside.
OF_ITERATION = re.compile(r"^(?:msprof|task_time|hccl|step_trace)_(\d+_\d+_\d+)(?:_\d{8,})?\.json$")


def _sibling(path: Path, prefix: str, names: List[str]) -> Optional[str]:
    """The file of ``prefix``'s kind of the same iteration as ``path``, among ``names``: by name,
    the export's time aside (msprof 6.3 and later write an export's files a second or two apart)."""
    m = OF_ITERATION.match(path.name)
    return next((n for n in sorted(names) if n.startswith(prefix) and m
                 and (o := OF_ITERATION.match(n)) is not None and o[1] == m[1]), None)

_ARRAY = re.compile(rb"^\s*\[\s*\{")
# msprof's processes, as their process_name metadata names them ({"args": {"name": ...}}): a name
# alone could be any event's (a record_function range named Communication).
_MSPROF_PROCESS = re.compile(rb'"args"\s*:\s*\{\s*"name"\s*:\s*"(Ascend Hardware|HCCL|Communication|Step Trace|'
                             rb'Overlap Analysis)"')
_TORCH_HOST = re.compile(rb'"cat"\s*:\s*"(cpu_op|python_function)"')
# torch_npu 5.0's trace_view.json is msprof's timeline first, its own events after (its
# trace_view_parser extends the list with them): its head reads as msprof's, its end shows torch's
# host events or its flows to the device.
_TORCH_END = re.compile(rb'"cat"\s*:\s*"(cpu_op|python_function|async_npu|async_task_queue|fwdbwd)"'
                        rb'|"name"\s*:\s*"torch_to_npu"')

EVENTS = """
CREATE OR REPLACE TEMP TABLE msp_event AS
SELECT e.*, p.pname, p.labels, t.tname
FROM stg_msprof e
LEFT JOIN (SELECT pid, any_value(args->>'name') FILTER (WHERE name = 'process_name') AS pname,
                  any_value(args->>'labels') FILTER (WHERE name = 'process_labels') AS labels
           FROM stg_msprof WHERE ph = 'M' GROUP BY pid) p USING (pid)
LEFT JOIN (SELECT pid, tid, any_value(args->>'name') AS tname FROM stg_msprof
           WHERE ph = 'M' AND name = 'thread_name' GROUP BY pid, tid) t USING (pid, tid)
WHERE e.ph = 'X' AND e.ts_ns IS NOT NULL AND e.dur_ns IS NOT NULL
"""

STEPS = """
CREATE OR REPLACE TEMP TABLE msp_step AS
SELECT int_or_null(args->>'Iteration ID') AS step, ts_ns AS lo, ts_ns + dur_ns AS hi
FROM msp_event WHERE cat = 'Iteration Time'
"""
STEP_COUNT = "SELECT count(*) FROM msp_step"
# A split loaded without its merged file has no Iteration ranges of its own: its iteration's
# step_trace_* split holds them.
SPLIT_STEPS = """
INSERT INTO msp_step
SELECT int_or_null(args->>'Iteration ID'), ts_ns, ts_ns + dur_ns
FROM stg_msprof_steps WHERE ph = 'X' AND cat = 'Iteration Time' AND ts_ns IS NOT NULL AND dur_ns IS NOT NULL
"""

# MindSpore names are scopes ("Default/network/.../Cast-op239"): the type is the last segment
# without its "-opN" suffix; other names go through type_from_name.
KERNELS = """
INSERT INTO kernels (rank, device_id, step, name, type, core, start_ns, dur_ns, stream_id, task_id,
                     source)
SELECT * FROM (
SELECT $rank, $device_id,
       (SELECT max(s.step) FROM msp_step s WHERE k.ts_ns >= s.lo AND k.ts_ns < s.hi) AS step,
       k.name,
       COALESCE(nullif(regexp_extract(k.name, '/([^/]+?)-op[0-9]+[^/]*$', 1), ''), type_from_name(k.name)),
       k.core, k.ts_ns, k.dur_ns, k.stream_id, k.task_id, 'msprof_timeline'
FROM (SELECT name, ts_ns, dur_ns,
             CASE WHEN comm_process(pname) THEN 'HCCL' ELSE clean_text(args->>'Task Type') END AS core,
             int_or_null(COALESCE(args->>'Stream Id', args->>'stream id')) AS stream_id,
             int_or_null(COALESCE(args->>'Task Id', args->>'task id')) AS task_id
      FROM msp_event
      WHERE name IS NOT NULL AND cat IS NULL
        AND ((pname = 'Ascend Hardware' AND name IS DISTINCT FROM (args->>'Task Type')
              AND NOT regexp_full_match(name, '[A-Z][A-Z0-9_]*'))
             OR (comm_process(pname) AND NOT starts_with(COALESCE(tname, ''), 'Plane')))) k)
WHERE {beside}
"""
# Beside op_summary's tasks (the kernels in the timeline's place), the timeline's that it does not
# hold: its comm ops where op_summary has none (older CANN writes it without), and the kernels of
# an iteration op_summary has no task of (its file for that iteration missing). Only where some of
# op_summary's tasks lie in the timeline's iterations: else the two are not one run's, or not on
# one clock, and the timeline's would be the same work again.
BESIDE = """
EXISTS (SELECT 1 FROM kernels o WHERE o.rank = $rank AND o.source = 'op_summary' AND o.step IS NOT NULL)
AND ((core = 'HCCL' AND NOT EXISTS (SELECT 1 FROM kernels o WHERE o.rank = $rank AND o.source = 'op_summary'
                                                          AND o.core IN ('HCCL', 'COMMUNICATION')))
     OR step NOT IN (SELECT o.step FROM kernels o WHERE o.rank = $rank AND o.source = 'op_summary'
                                                    AND o.step IS NOT NULL))
"""
# The iterations of this file none of op_summary's tasks is in: said (a comm op's is not missing).
LACKED = """
SELECT list(DISTINCT step ORDER BY step) FROM kernels WHERE rank = $rank AND source = 'msprof_timeline'
  AND step NOT IN (SELECT o.step FROM kernels o WHERE o.rank = $rank AND o.source = 'op_summary' AND o.step IS NOT NULL)
  AND step IN (SELECT step FROM msp_step)
"""

LANES = """
INSERT INTO overlap_lanes (rank, lane, start_ns, dur_ns)
SELECT $rank, COALESCE(tname, name), ts_ns, dur_ns FROM msp_event WHERE pname = 'Overlap Analysis'
"""

HOST = """
INSERT INTO host_events (rank, name, cat, start_ns, dur_ns, tid, args)
SELECT $rank, name, COALESCE(cat, pname), ts_ns, dur_ns, tid, args
FROM msp_event WHERE labels = 'CPU'
"""

OTHER_KERNELS = "SELECT count(*) FROM kernels WHERE rank = ? AND source <> 'msprof_timeline'"
# op_summary's tasks, which gave the rank's kernels in the timeline's place, carry no step: the
# timeline's Iteration ranges ({steps}) give it, as to its own (each iteration's file, those of its
# range; once the rank's files are in, every file's, give_steps).
OTHERS_STEPS = """
UPDATE kernels
SET step = (SELECT max(s.step) FROM {steps} s WHERE kernels.start_ns >= s.lo AND kernels.start_ns < s.hi)
WHERE rank = $rank AND source IN ('op_summary', 'msprof_timeline') AND step IS NULL
  AND EXISTS (SELECT 1 FROM {steps} s WHERE kernels.start_ns >= s.lo AND kernels.start_ns < s.hi)
"""
# Sources whose lanes and host events are the same run's, seen through torch_npu's exports.
RICHER = {"trace_view", "sqlite_export", "kineto"}
TEMP_TABLES = ("msp_event", "msp_step")


def give_steps(con: duckdb.DuckDBPyConnection, rank: int, iterations: List[Tuple[int, int, int]]) -> int:
    """Number the rank's msprof tasks a file's own Iteration ranges left without a step (a sliced
    timeline holds them in one slice, its kernels in all) by ``iterations``, every timeline file's
    ranges; returns how many got one."""
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE msp_steps (step INTEGER, lo BIGINT, hi BIGINT)")
        con.executemany("INSERT INTO msp_steps VALUES (?, ?, ?)", iterations)
        return con.execute(OTHERS_STEPS.format(steps="msp_steps"), {"rank": rank}).fetchone()[0]
    finally:
        con.execute("DROP TABLE IF EXISTS msp_steps")


def sniff(head: bytes) -> bool:
    return (bool(_ARRAY.match(head)) and bool(_MSPROF_PROCESS.search(head))
            and not _TORCH_HOST.search(head))


def torch_npus(end: bytes) -> bool:
    """Whether a file that sniffs as msprof's timeline is torch_npu's trace_view.json of 5.0, by
    its last bytes."""
    return bool(_TORCH_END.search(end))


def load_order(paths: List[Path]) -> List[Path]:
    """The merged files first: a split loads only where its merged file gave nothing."""
    return sorted(paths, key=lambda p: not p.name.startswith(MERGED_PREFIX))


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    others = sorted(ctx.devices_seen - {ctx.device_only}) if ctx.device_only is not None else []
    if others:  # (one device's folder beside an output merged over more: op_summary's rows tell)
        raise SourceError(f"{NOT_SPLIT}: merged over devices {', '.join(map(str, [ctx.device_only, *others]))} "
                          "(op_summary's Device_id), and its rows do not say their device; left out")
    prefix = next((p for p in SPLIT_PREFIXES if path.name.startswith(p)), None)
    suffix = path.name[len(prefix):] if prefix else ""
    names = [p.name for p in ctx.files.get(KIND, [])]
    merged = prefix and (_sibling(path, MERGED_PREFIX, names) or MERGED_PREFIX + suffix)
    merging = any(n.startswith(MERGED_PREFIX) for n in names)
    # Per iteration (_device_model_iteration), only its own merged file covers a split; named
    # otherwise, any merged file beside it does, as its iteration cannot be told.
    own = merged if merged in names else "the merged msprof_*.json"
    covering = {merged} if merged in names else (
        {n for n in names if n.startswith(MERGED_PREFIX)} if merged and not ITERATION.search(merged) else set())
    if covering & ctx.gave:
        return LoadResult(rows=0, note=SPLIT_NOTE.format(merged=own))
    in_place = None
    if covering:
        # It failed, and its error names the splits that give what they can in its place (health).
        in_place = f"in place of {own}, which gave nothing"
    elif merged and merging and prefix == "task_time_":
        # In place of its iteration's missing merged file (the others have theirs), said once, by
        # the split that gives the kernels: not the Overlap Analysis nor the host (CANN) events,
        # which only the merged file has.
        in_place = (f"in place of {merged}, which is missing: that iteration's overlap lanes and host events (only "
                    "in it) are missing")
    if ctx.device_id is None:
        ctx.device_id = device_from_folder(ctx.root)
    staged = stage_trace(con, path, STAGE, salvage=ctx.salvage)
    splits_beside = path.name.startswith(MERGED_PREFIX) and any(
        p + path.name[len(MERGED_PREFIX):] in names for p in ("task_time_", "hccl_"))
    if splits_beside and staged.damaged:
        drop_staged_trace(con, STAGE)
        return LoadResult(rows=0, skipped=staged.lost, note=f"{'cut short' if staged.cut else 'damaged'}, {FOR_SPLITS}")
    try:
        con.execute(EVENTS)
        con.execute(STEPS)
        steps = prefix and path.with_name(_sibling(path, "step_trace_", names) or "step_trace_" + suffix)
        if steps and steps != path and steps.is_file() and not con.execute(STEP_COUNT).fetchone()[0]:
            try:
                stage_trace(con, steps, "stg_msprof_steps")
                con.execute(SPLIT_STEPS)
            except (SourceError, OSError, duckdb.Error):
                pass  # a damaged or unreadable step_trace_*: the kernels load, without their step
            finally:
                drop_staged_trace(con, "stg_msprof_steps")
        params = {"rank": ctx.rank}
        rows, lacked = 0, None
        if con.execute(OTHER_KERNELS, [ctx.rank]).fetchone()[0] == 0:
            rows += con.execute(KERNELS.format(beside="true"), {**params, "device_id": ctx.device_id}).fetchone()[0]
        else:
            if con.execute(STEP_COUNT).fetchone()[0]:
                con.execute(OTHERS_STEPS.format(steps="msp_step"), params)
            rows += con.execute(KERNELS.format(beside=BESIDE), {**params, "device_id": ctx.device_id}).fetchone()[0]
            lacked = con.execute(LACKED, params).fetchone()[0]
        if not ctx.loaded & RICHER:
            for sql in (LANES, HOST):
                rows += con.execute(sql, params).fetchone()[0]
        lacked = lacked and (f"op_summary holds no task of {rank_list(lacked, 'iteration')}: "
                             f"{'its' if len(lacked) == 1 else 'their'} kernels loaded from here")
        ctx.iterations += con.execute("SELECT step, lo, hi FROM msp_step WHERE step IS NOT NULL").fetchall()
        note = "; ".join(filter(None, [staged.note, rows and in_place, lacked]))
        return LoadResult(rows=rows, skipped=staged.lost + staged.untimed, note=note)
    finally:
        for t in TEMP_TABLES:
            con.execute(f"DROP TABLE IF EXISTS {t}")
        drop_staged_trace(con, STAGE)
