"""memory_record.csv: the device memory over time that ``profile_memory=True`` records, per
component (PTA: the framework's allocator, GE, APP: the whole process): MB allocated, reserved and
active at each timestamp. A component that does not track a quantity leaves the cell empty (APP
writes reserved only). msprof writes it as ``memory_record_{timestamp}.csv``, in KB.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from .base import LoadResult, RankContext, csv_header
from .csvfile import load_rows

KIND = "memory_record"
FILE_NAMES = ("memory_record.csv",)
NAME_PREFIXES = ("memory_record_",)
STAGE = "stg_memory_record"
# npu_module_mem.csv shares Component, Timestamp(us) and Total Reserved: per device module, not the
# process's memory. Allocated tells the two apart. Totals in MB, or in KB as msprof writes its own.
REQUIRED = {"Component", "Timestamp(us)"}
ALLOCATED = {"Total Allocated(MB)", "Total Allocated(KB)"}
RESERVED = {"Total Reserved(MB)", "Total Reserved(KB)"}

# A total given that is no amount ("1261.04 MB", negative) skips its row, counted: kept NULL, it
# would read as not tracked by its component.
# k_component: DuckDB's names are case-insensitive, so "component" would be the file's raw Component
# column, not the cleaned one.
INSERT = """
INSERT INTO memory_record
SELECT $rank, clean_text({device}), k_component, ts_ns,
       coalesce(mb_bytes(num({allocated})), kb_bytes(num({allocated_kb}))),
       coalesce(mb_bytes(num({reserved})), kb_bytes(num({reserved_kb}))), mb_bytes(num({active})), clean_text({stream})
FROM (SELECT *, clean_text({component}) AS k_component, ts_to_ns({ts}) AS ts_ns FROM {table})
WHERE k_component IS NOT NULL AND ts_ns IS NOT NULL
  AND NOT (text_not_amount({allocated}) OR text_not_amount({allocated_kb}) OR text_not_amount({reserved})
           OR text_not_amount({reserved_kb}) OR text_not_amount({active}))
"""


def _is_it(columns) -> bool:
    cols = set(columns)
    return REQUIRED <= cols and bool(ALLOCATED & cols) and bool(RESERVED & cols)


def sniff(head: bytes) -> bool:
    return _is_it(csv_header(head))


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    return load_rows(con, path, ctx, STAGE, INSERT, {
        "component": "Component", "ts": "Timestamp(us)", "allocated": "Total Allocated(MB)",
        "allocated_kb": "Total Allocated(KB)", "reserved": "Total Reserved(MB)", "reserved_kb": "Total Reserved(KB)",
        "active": "Total Active(MB)", "stream": "Stream Ptr", "device": ("Device Type", "Device"),
    }, _is_it, "not a memory_record table: no Component / Timestamp(us) / Total Allocated(MB or KB) / "
                "Total Reserved(MB or KB)",
        "header only, no memory records")
