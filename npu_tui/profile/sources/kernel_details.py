"""kernel_details.csv: one row per device task, the best source of kernels when present."""

from __future__ import annotations

from pathlib import Path

import duckdb

from ..errors import SourceError
from .base import LoadResult, RankContext, csv_header
from .csvfile import col, drop_staged, stage_csv

KIND = "kernel_details"
FILE_NAMES = ("kernel_details.csv",)
STAGE = "stg_kernel_details"

INSERT = """
INSERT INTO kernels
SELECT $rank, COALESCE(int_or_null({device_id}), $device_id), int_or_null({step}), k_name,
       COALESCE(clean_text({type}), type_from_name(k_name)), clean_text({core}),
       k_start, k_dur, us_to_ns({wait}), int_or_null({block_dim}), int_or_null({stream_id}),
       int_or_null({task_id}), clean_text({in_shapes}), clean_text({in_dtypes}),
       clean_text({in_formats}), clean_text({out_shapes}), clean_text({out_dtypes}), 'kernel_details'
-- k_ prefixes: DuckDB identifiers are case-insensitive, so `name` would collide with `Name`.
FROM (SELECT *, clean_text({name}) AS k_name, us_to_ns({start}) AS k_start, us_to_ns({dur}) AS k_dur
      FROM {stage})
WHERE k_name IS NOT NULL AND k_start IS NOT NULL AND k_dur IS NOT NULL AND k_dur >= 0
"""


def sniff(head: bytes) -> bool:
    cols = set(csv_header(head))
    return {"Name", "Start Time(us)", "Duration(us)"} <= cols


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    columns, rejected = stage_csv(con, path, STAGE)
    try:
        if not {"Name", "Start Time(us)", "Duration(us)"} <= set(columns):
            raise SourceError("not a kernel_details table: no Name / Start Time(us) / Duration(us)")
        total = con.execute(f"SELECT count(*) FROM {STAGE}").fetchone()[0]
        sql = INSERT.format(
            stage=STAGE,
            device_id=col(columns, "Device_id", "Device ID"),
            step=col(columns, "Step Id"),
            name=col(columns, "Name"),
            type=col(columns, "Type"),
            core=col(columns, "Accelerator Core"),
            start=col(columns, "Start Time(us)"),
            dur=col(columns, "Duration(us)"),
            wait=col(columns, "Wait Time(us)"),
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
        if total == 0 and rejected == 0:
            raise SourceError("header only, no kernel rows")
        if ctx.device_id is None:
            ctx.device_id = con.execute(
                "SELECT any_value(device_id) FROM kernels WHERE rank = ?", [ctx.rank]
            ).fetchone()[0]
        return LoadResult(rows=rows, skipped=rejected + (total - rows))
    finally:
        drop_staged(con, STAGE)
