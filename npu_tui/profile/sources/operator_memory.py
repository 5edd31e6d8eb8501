"""operator_memory.csv: every allocation an operator made under ``profile_memory=True``: size (KB,
kept as bytes), allocation and release times (µs, kept as ns; empty while still held at the end),
how long it was held, and the process's allocated / reserved / active totals (MB) at both ends.
msprof writes it as ``operator_memory_{timestamp}.csv``.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from .base import LoadResult, RankContext, csv_header
from .csvfile import load_rows

KIND = "operator_memory"
FILE_NAMES = ("operator_memory.csv",)
NAME_PREFIXES = ("operator_memory_",)
STAGE = "stg_operator_memory"
REQUIRED = {"Name", "Size(KB)", "Allocation Time(us)"}

INSERT = """
INSERT INTO operator_memory
SELECT $rank, clean_text({device}), om_name, CAST(round(num({size}) * 1024) AS BIGINT), alloc_ns,
       ts_to_ns({release}), ts_to_ns({active_release}), us_to_ns({duration}), us_to_ns({active_duration}),
       num({alloc_allocated}), num({alloc_reserved}), num({alloc_active}),
       num({release_allocated}), num({release_reserved}), num({release_active}), clean_text({stream})
-- om_ prefix: identifiers are case-insensitive, so `name` would be the file's raw Name text.
-- A size of 1e15 KB or more is none (skipped, counted): in bytes it failed the whole file.
FROM (SELECT *, clean_text({name}) AS om_name, ts_to_ns({alloc}) AS alloc_ns FROM {table})
WHERE om_name IS NOT NULL AND alloc_ns IS NOT NULL AND amount(abs(num({size}))) IS NOT NULL
"""


def sniff(head: bytes) -> bool:
    return REQUIRED <= set(csv_header(head))


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    return load_rows(con, path, ctx, STAGE, INSERT, {
        "name": "Name", "size": "Size(KB)", "alloc": "Allocation Time(us)", "release": "Release Time(us)",
        "active_release": "Active Release Time(us)", "duration": "Duration(us)",
        "active_duration": "Active Duration(us)", "alloc_allocated": "Allocation Total Allocated(MB)",
        "alloc_reserved": "Allocation Total Reserved(MB)", "alloc_active": "Allocation Total Active(MB)",
        "release_allocated": "Release Total Allocated(MB)", "release_reserved": "Release Total Reserved(MB)",
        "release_active": "Release Total Active(MB)", "stream": "Stream Ptr", "device": "Device Type",
    }, lambda columns: REQUIRED <= set(columns),
        "not an operator_memory table: no Name / Size(KB) / Allocation Time(us)",
        "header only, no allocations")
