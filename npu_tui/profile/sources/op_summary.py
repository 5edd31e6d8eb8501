"""msprof's op_summary_*.csv (PROF_*/mindstudio_profiler_output/, device_N/summary/): one row per
device task with its operator, the msprof counterpart of kernel_details.csv."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import duckdb

from ..errors import SourceError
from .base import LoadResult, RankContext, csv_header
from .csvfile import col, drop_staged, stage_csv

KIND = "op_summary"
FILE_NAMES = ()
# So an empty or broken op_summary is reported rather than passed over.
NAME_PREFIXES = ("op_summary_",)
STAGE = "stg_op_summary"
REQUIRED = {"Op Name", "Task Start Time(us)", "Task Duration(us)"}
DEVICE_DIR = re.compile(r"^device_(\d+)$")

INSERT = """
INSERT INTO kernels (rank, device_id, name, type, core, start_ns, dur_ns, wait_ns, block_dim,
                     stream_id, task_id, input_shapes, input_dtypes, input_formats, output_shapes,
                     output_dtypes, source)
SELECT $rank, COALESCE(int_or_null({device_id}), $device_id), name,
       COALESCE(clean_text({type}), type_from_name(name)), clean_text({core}),
       start_ns, dur_ns, us_to_ns({wait}), int_or_null({block_dim}), int_or_null({stream_id}),
       int_or_null({task_id}), clean_text({in_shapes}), clean_text({in_dtypes}),
       clean_text({in_formats}), clean_text({out_shapes}), clean_text({out_dtypes}), 'op_summary'
FROM (SELECT *, clean_text({name}) AS name, us_to_ns({start}) AS start_ns, us_to_ns({dur}) AS dur_ns
      FROM {stage})
WHERE name IS NOT NULL AND start_ns IS NOT NULL AND dur_ns IS NOT NULL AND dur_ns >= 0
"""


def sniff(head: bytes) -> bool:
    return REQUIRED <= set(csv_header(head))


def device_from_folder(root: Path) -> Optional[int]:
    """msprof keeps one device per device_N folder: N, for the folder itself or a PROF_* folder
    holding exactly one."""
    m = DEVICE_DIR.match(root.name)
    if m:
        return int(m.group(1))
    try:
        names = [p.name for p in root.iterdir() if p.is_dir()]
    except OSError:
        return None
    found = [int(d.group(1)) for d in map(DEVICE_DIR.match, names) if d]
    return found[0] if len(found) == 1 else None


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    if ctx.device_id is None:
        ctx.device_id = device_from_folder(ctx.root)
    columns, rejected = stage_csv(con, path, STAGE)
    try:
        if not REQUIRED <= set(columns):
            raise SourceError("not an op_summary table: no Op Name / Task Start Time(us) / Task Duration(us)")
        total = con.execute(f"SELECT count(*) FROM {STAGE}").fetchone()[0]
        if total == 0 and rejected == 0:
            raise SourceError("header only, no task rows")
        sql = INSERT.format(
            stage=STAGE,
            device_id=col(columns, "Device_id", "Device ID"),
            name=col(columns, "Op Name"),
            type=col(columns, "OP Type", "Op Type"),
            core=col(columns, "Task Type"),
            start=col(columns, "Task Start Time(us)"),
            dur=col(columns, "Task Duration(us)"),
            wait=col(columns, "Task Wait Time(us)"),
            block_dim=col(columns, "Block Dim", "Block Num"),
            stream_id=col(columns, "Stream ID"),
            task_id=col(columns, "Task ID"),
            in_shapes=col(columns, "Input Shapes"),
            in_dtypes=col(columns, "Input Data Types"),
            in_formats=col(columns, "Input Formats"),
            out_shapes=col(columns, "Output Shapes"),
            out_dtypes=col(columns, "Output Data Types"),
        )
        rows = con.execute(sql, {"rank": ctx.rank, "device_id": ctx.device_id}).fetchone()[0]
        if ctx.device_id is None:
            ctx.device_id = con.execute(
                "SELECT any_value(device_id) FROM kernels WHERE rank = ?", [ctx.rank]
            ).fetchone()[0]
        return LoadResult(rows=rows, skipped=rejected + (total - rows))
    finally:
        drop_staged(con, STAGE)
