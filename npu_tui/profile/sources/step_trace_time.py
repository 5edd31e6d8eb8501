"""step_trace_time.csv: the profiler's own per-step breakdown, kept in µs as it reported them.

Newer versions put a ``Device_id`` column in front and some leave ``Step`` empty (no schedule) or
write it as text; every column is addressed by name. The peer analyser's cluster_step_trace_time.csv
(``Type``/``Index`` columns, one row per rank and per stage of a whole job) is not claimed: its rows
are other ranks' values, which the ranks' own files already give.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from ..errors import SourceError
from .base import LoadResult, RankContext, csv_header
from .csvfile import col, drop_staged, stage_csv

KIND = "step_trace_time"
FILE_NAMES = ("step_trace_time.csv",)
STAGE = "stg_step_trace_time"
REQUIRED = {"Computing", "Communication(Not Overlapped)"}
# Columns of the cluster-wide summary the peer analyser writes, never of a rank's own file.
CLUSTER_COLUMNS = {"Type", "Index"}

# A step written as "50", "50.0" or "step50"; NULL when the profile had no steps. A step the file
# gives twice keeps its first usable row (the staged rows keep the file's order): the analysis takes
# a step's row as the step, and two would add up to a step of twice its time (the others are
# skipped, counted and named).
ROWS = """
SELECT *, rowid AS st_row, us_num({computing}) AS st_computing,
       COALESCE(int32_or_null({device_id}), $device_id) AS st_device,
       step_of({step}) AS st_step,
       st_step IS NOT NULL AND row_number() OVER (
           PARTITION BY st_device, st_step, st_computing IS NULL ORDER BY rowid) > 1 AS st_again
FROM {table}
"""
# A figure given that does not read ("12us", "2,300", a spreadsheet's "1.42E+03"): its row is
# skipped, counted, where the cell had been kept NULL (a step without its Free). The cluster's copy
# of these files (cluster_step_trace_time.csv) has the same columns.
UNREAD_FIGURE = " OR ".join(f"text_not_us({{{c}}})" for c in (
    "comm_not_overlapped", "overlapped", "comm", "free", "stage", "bubble", "comm_excl_recv", "preparing"))
# A row of zeros is a step the device did nothing in: older torch_npu write one for each step
# scheduled (its span -1 - -1), newer leave it out. Averaged in, it passed for a step of 0 µs.
NOTHING_RAN = "every figure 0, a step the device did nothing in (older torch_npu write one for each step scheduled)"
NOTHING = ("st_computing = 0 AND coalesce(us_num({comm_not_overlapped}), 0) = 0 AND coalesce(us_num({free}), 0) = 0 "
           "AND coalesce(us_num({stage}), 0) = 0")
# Stage is the step as the profiler timed it, less its bubble (torch_npu: a pipeline's receives; 0
# elsewhere). MindSpore's is the span of the step's HCCL tasks instead (0 without them, on one
# device): its step is what the overlap lanes partition, Computing + Communication(Not Overlapped)
# + Free (an empty cell none of it), so its stage is that less the bubble, as torch_npu's.
INSERT = """
INSERT INTO step_trace
SELECT $rank, st_device, st_step,
       st_computing, us_num({comm_not_overlapped}), us_num({overlapped}), us_num({comm}), us_num({free}),
       CASE WHEN $mindspore THEN st_computing + coalesce(us_num({comm_not_overlapped}), 0)
                                 + coalesce(us_num({free}), 0) - coalesce(us_num({bubble}), 0)
            ELSE us_num({stage}) END,
       us_num({bubble}), us_num({comm_excl_recv}), us_num({preparing}), $source
-- st_ prefix: identifiers are case-insensitive, so `computing` would be the file's raw Computing text.
FROM (""" + ROWS + """)
WHERE st_computing IS NOT NULL AND NOT st_again AND ($mine IS NULL OR st_device IS NULL OR st_device = $mine)
  AND NOT (""" + UNREAD_FIGURE + """) AND NOT (""" + NOTHING + """)
"""
# (of the rows INSERT would take but for their zeros: not another device's, nor a step given again)
EMPTY = ("SELECT list(st_step ORDER BY st_row) FROM (" + ROWS + ") WHERE st_computing IS NOT NULL AND NOT st_again "
         "AND ($mine IS NULL OR st_device IS NULL OR st_device = $mine) AND " + NOTHING)
REPEATED = "SELECT list(DISTINCT st_step ORDER BY st_step) FROM (" + ROWS + ") WHERE st_computing IS NOT NULL AND st_again"
# A rank is one device: a file of several (merged by hand) keeps the rank's own (its profiler_info's
# where the file holds it, else the file's first), the others' rows another rank's, not loaded
# (loaded, the rank's every step counted once for each device).
DEVICES = ("SELECT list(DISTINCT st_device ORDER BY st_device) FILTER (st_device IS NOT NULL), "
           "arg_min(st_device, st_row) FILTER (st_device IS NOT NULL) FROM (" + ROWS + ")")


def sniff(head: bytes) -> bool:
    cols = set(csv_header(head))
    return REQUIRED <= cols and not CLUSTER_COLUMNS <= cols


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    columns, rejected, note = stage_csv(con, path, STAGE)
    try:
        if not REQUIRED <= set(columns):
            raise SourceError("not a step_trace_time table: no Computing / Communication(Not Overlapped)")
        if CLUSTER_COLUMNS <= set(columns):
            raise SourceError("cluster summary of all ranks, not one rank's steps")
        total = con.execute(f"SELECT count(*) FROM {STAGE}").fetchone()[0]
        if total == 0 and rejected == 0:
            raise SourceError("header only, no step rows")
        names = dict(
            table=STAGE,
            device_id=col(columns, "Device_id", "Device ID"),
            step=col(columns, "Step"),
            computing=col(columns, "Computing"),
            comm_not_overlapped=col(columns, "Communication(Not Overlapped)"),
            overlapped=col(columns, "Overlapped"),
            comm=col(columns, "Communication"),
            free=col(columns, "Free"),
            stage=col(columns, "Stage"),
            bubble=col(columns, "Bubble"),
            comm_excl_recv=col(columns, "Communication(Not Overlapped and Exclude Receive)"),
            preparing=col(columns, "Preparing"),
        )
        devices, first = con.execute(DEVICES.format(**names), {"device_id": ctx.device_id}).fetchone()
        mine = None
        if len(devices or ()) > 1:
            mine = ctx.device_id if ctx.device_id in devices else first
            others = ", ".join(str(d) for d in devices if d != mine)
            note = "; ".join(filter(None, [note, f"rows of device {others} beside this rank's device {mine} (a file "
                                                 "merged by hand?): another rank's, not loaded"]))
        sql = INSERT.format(**names)
        params = {"rank": ctx.rank, "device_id": ctx.device_id, "source": path.name, "mindspore": ctx.mindspore,
                  "mine": mine}
        rows = con.execute(sql, params).fetchone()[0]
        empty = con.execute(EMPTY.format(**names), {"device_id": ctx.device_id, "mine": mine}).fetchone()[0]
        if empty:
            steps = ", ".join("(no step)" if e is None else str(e) for e in empty)
            note = "; ".join(filter(None, [note, f"step {steps}: {NOTHING_RAN}: skipped"]))
        repeated = con.execute(REPEATED.format(**names), {"device_id": ctx.device_id}).fetchone()[0]
        if repeated:
            note = "; ".join(filter(None, [note, f"step {', '.join(map(str, repeated))} given again: the rows "
                                                 "after its first skipped"]))
        return LoadResult(rows=rows, skipped=rejected + (total - rows), note=note)
    finally:
        drop_staged(con, STAGE)
