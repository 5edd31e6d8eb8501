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

# Typed while reading, so the ~30 PMU columns are never converted. k_ prefixes: DuckDB identifiers
# are case-insensitive, so `name` would collide with the file's `Name`.
TYPED = """
clean_text({name}) AS k_name, us_to_ns({start}) AS k_start, us_to_ns({dur}) AS k_dur,
int_or_null({device_id}) AS k_device, int_or_null({step}) AS k_step, clean_text({type}) AS k_type,
clean_text({core}) AS k_core, us_to_ns({wait}) AS k_wait, int_or_null({block_dim}) AS k_block,
int_or_null({stream_id}) AS k_stream, int_or_null({task_id}) AS k_task,
clean_text({in_shapes}) AS k_in_shapes, clean_text({in_dtypes}) AS k_in_dtypes,
clean_text({in_formats}) AS k_in_formats, clean_text({out_shapes}) AS k_out_shapes,
clean_text({out_dtypes}) AS k_out_dtypes
"""

INSERT = f"""
INSERT INTO kernels
SELECT $rank, COALESCE(k_device, $device_id), k_step, k_name, COALESCE(k_type, type_from_name(k_name)),
       k_core, k_start, k_dur, k_wait, k_block, k_stream, k_task, k_in_shapes, k_in_dtypes,
       k_in_formats, k_out_shapes, k_out_dtypes, 'kernel_details'
FROM {STAGE}
WHERE k_name IS NOT NULL AND k_start IS NOT NULL AND k_dur IS NOT NULL AND k_dur >= 0
"""

REQUIRED = {"Name", "Start Time(us)", "Duration(us)"}


def sniff(head: bytes) -> bool:
    return REQUIRED <= set(csv_header(head))


def _typed(columns) -> str:
    if not REQUIRED <= set(columns):
        raise SourceError("not a kernel_details table: no Name / Start Time(us) / Duration(us)")
    return TYPED.format(
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


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    try:
        _, rejected = stage_csv(con, path, STAGE, select=_typed)
        total = con.execute(f"SELECT count(*) FROM {STAGE}").fetchone()[0]
        if total == 0 and rejected == 0:
            raise SourceError("header only, no kernel rows")
        rows = con.execute(INSERT, {"rank": ctx.rank, "device_id": ctx.device_id}).fetchone()[0]
        if ctx.device_id is None:
            ctx.device_id = con.execute(
                "SELECT any_value(device_id) FROM kernels WHERE rank = ?", [ctx.rank]
            ).fetchone()[0]
        return LoadResult(rows=rows, skipped=rejected + (total - rows))
    finally:
        drop_staged(con, STAGE)
