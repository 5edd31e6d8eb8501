"""The shared loader of per-task CSVs (kernel_details.csv, msprof's op_summary_*.csv) into kernels.

Each format names its columns differently, and versions rename them (``Block Dim`` -> ``Block
Num``), so a format is a mapping from our field to the names it may carry, first present wins.
Fields are typed while reading, so the other columns (some 30 PMU counters) are never converted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

import duckdb

from ..errors import SourceError
from .base import LoadResult, RankContext
from .csvfile import col, drop_staged, stage_csv

Columns = Dict[str, Tuple[str, ...]]

# Named alike in kernel_details.csv and op_summary_*.csv.
COMMON: Columns = {
    "device_id": ("Device_id", "Device ID"),
    "block_dim": ("Block Dim", "Block Num"),
    "stream_id": ("Stream ID",),
    "task_id": ("Task ID",),
    "in_shapes": ("Input Shapes",),
    "in_dtypes": ("Input Data Types",),
    "in_formats": ("Input Formats",),
    "out_shapes": ("Output Shapes",),
    "out_dtypes": ("Output Data Types",),
}

# k_ prefixes: DuckDB identifiers are case-insensitive, so `name` would collide with a `Name` column.
TYPED = """
clean_text({name}) AS k_name,
coalesce(ts_to_ns({start}), CASE WHEN int_or_null({start_ns}) >= 0 THEN int_or_null({start_ns}) END) AS k_start,
us_to_ns({dur}) AS k_dur,
int32_or_null({device_id}) AS k_device, step_of({step}) AS k_step, clean_text({type}) AS k_type,
clean_text({core}) AS k_core, us_to_ns({wait}) AS k_wait, int32_or_null({block_dim}) AS k_block,
int_or_null({stream_id}) AS k_stream, int_or_null({task_id}) AS k_task,
clean_text({in_shapes}) AS k_in_shapes, clean_text({in_dtypes}) AS k_in_dtypes,
clean_text({in_formats}) AS k_in_formats, clean_text({out_shapes}) AS k_out_shapes,
clean_text({out_dtypes}) AS k_out_dtypes
"""

# A file merged over several devices ($only) is split by its device column between the ranks of
# $split: a row of another of them is another rank's, neither loaded nor skipped here. Rows that
# name no device, of a device no rank is (its device_N folder not here), and the rows the reader
# rejected, are counted once, by the first rank's ($first).
COUNT = """
SELECT count(*) FILTER (WHERE $only IS NULL OR k_device = $only
                        OR (k_device IS NULL OR NOT list_contains($split, k_device)) AND $only = $first),
       count(*)
FROM {stage}
"""
DEVICES = "SELECT DISTINCT k_device FROM {stage} WHERE k_device IS NOT NULL ORDER BY k_device"
INSERT = """
INSERT INTO kernels
SELECT $rank, COALESCE(k_device, $device_id), k_step, k_name, COALESCE(k_type, type_from_name(k_name)),
       k_core, k_start, k_dur, k_wait, k_block, k_stream, k_task, k_in_shapes, k_in_dtypes,
       k_in_formats, k_out_shapes, k_out_dtypes, $source
FROM {stage}
WHERE k_name IS NOT NULL AND k_start IS NOT NULL AND k_dur IS NOT NULL AND k_dur >= 0
  AND ($only IS NULL OR k_device = $only)
"""

MERGED_DEVICES = "holds the tasks of devices"
DEVICE_NOT_HERE = "whose device_N folder is not here to make a rank of"

# start: a start in µs; start_ns, in ns (older msprof's op_summary, "Task Start Time").
FIELDS = ("name", "start", "start_ns", "dur", "device_id", "step", "type", "core", "wait", "block_dim",
          "stream_id", "task_id", "in_shapes", "in_dtypes", "in_formats", "out_shapes", "out_dtypes")
# Each one of these fields, or another in its group.
REQUIRED = (("name",), ("start", "start_ns"), ("dur",))


def load_task_csv(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext, columns: Columns,
                  source: str, stage: str) -> LoadResult:
    """Rows with a name, a start and a non-negative duration become kernels; the rest are counted."""

    def typed(header) -> str:
        missing = [columns[g[0]][0] for g in REQUIRED if all(col(header, *columns.get(f, ())) == "NULL" for f in g)]
        if missing:
            raise SourceError(f"not a {source} table: no {' / '.join(missing)}")
        return TYPED.format(**{f: col(header, *columns.get(f, ())) for f in FIELDS})

    try:
        _, rejected, note = stage_csv(con, path, stage, select=typed)
        devices = [d for (d,) in con.execute(DEVICES.format(stage=stage)).fetchall()]
        if ctx.devices_split == (ctx.device_only,) and len(devices) == 1 and ctx.device_only not in devices:
            # one device's folder, and a file of one other device (a visible device renumbered): its
            ctx.device_only = ctx.device_id = devices[0]
            ctx.devices_split = (ctx.device_only,)
        only = {"only": ctx.device_only}
        first = min(ctx.devices_split, default=None)
        total, in_file = con.execute(COUNT.format(stage=stage), {
            **only, "split": list(ctx.devices_split), "first": first}).fetchone()
        counts_rest = ctx.device_only is None or ctx.device_only == first
        rejected, note = (rejected, note) if counts_rest else (0, "")
        if in_file == 0 and rejected == 0:
            raise SourceError("header only, no task rows")
        ctx.devices_seen.update(devices)
        note = "; ".join(filter(None, [note, counts_rest and _devices_note(devices, ctx)]))
        rows = con.execute(INSERT.format(stage=stage), {
            "rank": ctx.rank, "device_id": ctx.device_id, "source": source, **only}).fetchone()[0]
        if ctx.device_id is None:
            ctx.device_id = con.execute(
                "SELECT any_value(device_id) FROM kernels WHERE rank = ?", [ctx.rank]
            ).fetchone()[0]
        return LoadResult(rows=rows, skipped=rejected + (total - rows), note=note)
    finally:
        drop_staged(con, stage)


def _devices_note(devices: List[int], ctx: RankContext) -> str:
    """What the file's device column says that its ranks do not: tasks of several devices loaded
    as one rank (no device_N folders here to tell the ranks), or rows of a device that is no rank
    (its device_N folder not here), skipped."""
    if ctx.device_only is None:
        if len(devices) < 2:
            return ""
        return (f"{MERGED_DEVICES} {', '.join(map(str, devices))} (its Device_id column), and nothing here makes "
                "each its own rank (msprof's device_N folders): loaded as one rank, its figures the devices' together")
    gone = [d for d in devices if d not in ctx.devices_split]
    if not gone:
        return ""
    return f"the rows of device{'s' if len(gone) > 1 else ''} {', '.join(map(str, gone))}, {DEVICE_NOT_HERE}"
