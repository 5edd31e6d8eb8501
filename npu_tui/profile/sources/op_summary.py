"""msprof's op_summary_*.csv (PROF_*/mindstudio_profiler_output/, device_N/summary/): one row per
device task with its operator, the msprof counterpart of kernel_details.csv."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

import duckdb

from .base import LoadResult, RankContext, csv_header
from .task_csv import COMMON, Columns, load_task_csv

KIND = "op_summary"
FILE_NAMES = ()
# So an empty or broken op_summary is reported rather than passed over.
NAME_PREFIXES = ("op_summary_",)
# msprof names one export's file by when it was written (YYYYmmddHHMMSS), sliced or not, and
# since 6.3 the older layout's device files too, after their device, model and iteration (part):
# another export of the same collection beside it is that collection again (discover._newest_export).
# (The older layout's op_summary_{device}_{model}_{iter}.csv, without a time, are no export's.)
EXPORT_NAME = re.compile(r"^op_summary_(?:(?P<part>\d+(?:_\d+){0,2})_)?(?:slice_(?P<slice>\d+)_)?(?P<time>\d{8,})\.csv$")
STAGE = "stg_op_summary"
REQUIRED = {"Op Name", "Task Duration(us)"}
# The start in µs, or in ns in older exports (CANN 5.x: "Task Start Time", without a unit).
STARTS = {"Task Start Time(us)", "Task Start Time"}
DEVICE_DIR = re.compile(r"^device_(\d+)$")
# A device_N's folders of exported files, which may be opened alone (its rank and device: device_N's).
DEVICE_PARTS = ("timeline", "summary")

COLUMNS: Columns = {
    **COMMON,
    "name": ("Op Name",),
    "start": ("Task Start Time(us)",),
    "start_ns": ("Task Start Time",),
    "dur": ("Task Duration(us)",),
    "type": ("OP Type", "Op Type"),
    "core": ("Task Type",),
    "wait": ("Task Wait Time(us)",),
}


def sniff(head: bytes) -> bool:
    header = set(csv_header(head))
    return REQUIRED <= header and bool(STARTS & header)


def device_from_folder(root: Path) -> Optional[int]:
    """msprof keeps one device per device_N folder: N, for the folder itself, its timeline or
    summary folder opened alone, or a PROF_* folder holding exactly one."""
    above = Path(os.path.abspath(root)).parent.name  # (opened by a relative path: "timeline")
    m = DEVICE_DIR.match(root.name) or (DEVICE_DIR.match(above) if root.name in DEVICE_PARTS else None)
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
    return load_task_csv(con, path, ctx, COLUMNS, KIND, STAGE)
