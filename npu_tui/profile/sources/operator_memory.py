"""operator_memory.csv: every allocation an operator made under ``profile_memory=True``: size (KB,
kept as bytes), allocation and release times (µs, kept as ns; empty while still held at the end),
how long it was held, and the process's allocated / reserved / active totals (MB) at both ends.
msprof writes it as ``operator_memory_{timestamp}.csv``, its totals in KB and without release times.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from .base import LoadResult, RankContext, csv_header, read_head
from .csvfile import load_rows

KIND = "operator_memory"
FILE_NAMES = ("operator_memory.csv",)
NAME_PREFIXES = ("operator_memory_",)
STAGE = "stg_operator_memory"
REQUIRED = {"Name", "Size(KB)", "Allocation Time(us)"}

# The totals in MB, or (msprof's own file) in KB. msprof's has no release time: an allocation held
# for its Duration was released at its end.
INSERT = """
INSERT INTO operator_memory
SELECT $rank, clean_text({device}), om_name, CAST(round(num({size}) * 1024) AS BIGINT), alloc_ns,
       release_ns, active_release_ns, us_to_ns({duration}), us_to_ns({active_duration}),
       coalesce(num({alloc_allocated}), num({alloc_allocated_kb}) / 1024),
       coalesce(num({alloc_reserved}), num({alloc_reserved_kb}) / 1024), num({alloc_active}),
       coalesce(num({release_allocated}), num({release_allocated_kb}) / 1024),
       coalesce(num({release_reserved}), num({release_reserved_kb}) / 1024), num({release_active}),
       clean_text({stream})
-- om_ prefix: identifiers are case-insensitive, so `name` would be the file's raw Name text.
-- A size that is no amount (negative; 1e15 KB or more, which in bytes failed the whole file) and
-- a cell given that does not read (a release time with an exponent or a unit would read as never
-- released) skip the row, counted. (A negative Duration is a number: it releases nothing.) The
-- times are read once, in the inner query, for the row and for the test.
FROM (SELECT *, clean_text({name}) AS om_name, ts_to_ns({alloc}) AS alloc_ns, {released} AS release_ns,
             ts_to_ns({active_release}) AS active_release_ns FROM {table})
WHERE om_name IS NOT NULL AND alloc_ns IS NOT NULL AND amount(num({size})) IS NOT NULL
  AND NOT ({release_given} OR clean_text({active_release}) IS NOT NULL AND active_release_ns IS NULL
           OR text_not_number({duration})
           OR text_not_number({active_duration}) OR text_not_amount({alloc_allocated})
           OR text_not_amount({alloc_allocated_kb}) OR text_not_amount({alloc_reserved})
           OR text_not_amount({alloc_reserved_kb}) OR text_not_amount({alloc_active})
           OR text_not_amount({release_allocated}) OR text_not_amount({release_allocated_kb})
           OR text_not_amount({release_reserved}) OR text_not_amount({release_reserved_kb})
           OR text_not_amount({release_active}))
"""


def sniff(head: bytes) -> bool:
    return REQUIRED <= set(csv_header(head))


RELEASE = "Release Time(us)"


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    given = RELEASE in csv_header(read_head(path))
    released = "ts_to_ns({release})" if given else \
        "CASE WHEN us_to_ns({duration}) >= 0 THEN alloc_ns + us_to_ns({duration}) END"
    insert = INSERT.replace("{released}", released).replace(
        "{release_given}", "clean_text({release}) IS NOT NULL AND release_ns IS NULL" if given else "false")
    return load_rows(con, path, ctx, STAGE, insert, {
        "name": "Name", "size": "Size(KB)", "alloc": "Allocation Time(us)", "release": RELEASE,
        "active_release": "Active Release Time(us)", "duration": "Duration(us)",
        "active_duration": "Active Duration(us)", "alloc_allocated": "Allocation Total Allocated(MB)",
        "alloc_allocated_kb": "Allocation Total Allocated(KB)", "alloc_reserved": "Allocation Total Reserved(MB)",
        "alloc_reserved_kb": "Allocation Total Reserved(KB)", "alloc_active": "Allocation Total Active(MB)",
        "release_allocated": "Release Total Allocated(MB)", "release_allocated_kb": "Release Total Allocated(KB)",
        "release_reserved": "Release Total Reserved(MB)", "release_reserved_kb": "Release Total Reserved(KB)",
        "release_active": "Release Total Active(MB)", "stream": "Stream Ptr", "device": ("Device Type", "Device"),
    }, lambda columns: REQUIRED <= set(columns),
        "not an operator_memory table: no Name / Size(KB) / Allocation Time(us)",
        "header only, no allocations")
