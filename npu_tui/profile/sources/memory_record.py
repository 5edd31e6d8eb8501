"""memory_record.csv: the device memory over time that ``profile_memory=True`` records, per
component (PTA: the framework's allocator, GE, APP: the whole process): MB allocated, reserved and
active at each timestamp. A component that does not track a quantity leaves the cell empty (APP
writes reserved only). msprof writes it as ``memory_record_{timestamp}.csv``.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from ..errors import SourceError
from .base import LoadResult, RankContext, csv_header
from .csvfile import col, drop_staged, stage_csv

KIND = "memory_record"
FILE_NAMES = ("memory_record.csv",)
NAME_PREFIXES = ("memory_record_",)
STAGE = "stg_memory_record"
# npu_module_mem.csv shares Component, Timestamp(us) and Total Reserved(MB): per device module, not
# the process's memory. Allocated tells the two apart.
REQUIRED = {"Component", "Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)"}

INSERT = """
INSERT INTO memory_record
SELECT $rank, clean_text({device}), component, ts_ns, num({allocated}), num({reserved}), num({active}),
       clean_text({stream})
FROM (SELECT *, clean_text({component}) AS component, us_to_ns({ts}) AS ts_ns FROM {table})
WHERE component IS NOT NULL AND ts_ns IS NOT NULL
"""


def sniff(head: bytes) -> bool:
    return REQUIRED <= set(csv_header(head))


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    columns, rejected = stage_csv(con, path, STAGE)
    try:
        if not REQUIRED <= set(columns):
            raise SourceError("not a memory_record table: no Component / Timestamp(us) / Total Allocated(MB) "
                              "/ Total Reserved(MB)")
        total = con.execute(f"SELECT count(*) FROM {STAGE}").fetchone()[0]
        if total == 0 and rejected == 0:
            raise SourceError("header only, no memory records")
        sql = INSERT.format(
            table=STAGE,
            component=col(columns, "Component"),
            ts=col(columns, "Timestamp(us)"),
            allocated=col(columns, "Total Allocated(MB)"),
            reserved=col(columns, "Total Reserved(MB)"),
            active=col(columns, "Total Active(MB)"),
            stream=col(columns, "Stream Ptr"),
            device=col(columns, "Device Type"),
        )
        rows = con.execute(sql, {"rank": ctx.rank}).fetchone()[0]
        return LoadResult(rows=rows, skipped=rejected + (total - rows))
    finally:
        drop_staged(con, STAGE)
