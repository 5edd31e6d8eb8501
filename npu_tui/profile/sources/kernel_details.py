"""kernel_details.csv: one row per device task, the best source of kernels when present."""

from __future__ import annotations

from pathlib import Path

import duckdb

from .base import LoadResult, RankContext, csv_header
from .csvfile import MAYBE_CUT
from .task_csv import COMMON, Columns, load_task_csv

KIND = "kernel_details"
FILE_NAMES = ("kernel_details.csv",)

COLUMNS: Columns = {
    **COMMON,
    "name": ("Name",),
    "start": ("Start Time(us)",),
    "dur": ("Duration(us)",),
    "step": ("Step Id", "Step ID"),  # MindSpore's spelling
    "type": ("Type",),
    "core": ("Accelerator Core",),
    "wait": ("Wait Time(us)",),
}


def sniff(head: bytes) -> bool:
    return {"Name", "Start Time(us)", "Duration(us)"} <= set(csv_header(head))


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    result = load_task_csv(con, path, ctx, COLUMNS, KIND, "stg_kernel_details")
    last, ctx.stepless_kernels = con.execute(
        "SELECT max(start_ns), coalesce(bool_and(step IS NULL), false) FROM kernels WHERE rank = ? AND source = ?",
        [ctx.rank, KIND]).fetchone()
    if "cut short" not in result.note and MAYBE_CUT not in result.note:  # its last row is said already
        ctx.kernel_file_last_ns = last
    return result
