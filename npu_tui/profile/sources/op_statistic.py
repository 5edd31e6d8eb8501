"""op_statistic.csv: the profiler's per-operator-type totals of device time (µs).

``Ratio(%)`` is stored as a share in 0..1, like every share npu-tui reports. msprof writes the same
table as ``op_statistic_{timestamp}.csv`` with a ``Device_id`` column in front.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from ..errors import SourceError
from .base import LoadResult, RankContext, csv_header
from .csvfile import col, drop_staged, stage_csv

KIND = "op_statistic"
FILE_NAMES = ("op_statistic.csv",)
NAME_PREFIXES = ("op_statistic_",)
STAGE = "stg_op_statistic"
REQUIRED = {"OP Type", "Core Type", "Count"}

INSERT = """
INSERT INTO op_statistic
SELECT $rank, op_type, clean_text({core_type}), int_or_null({count}), total_us, num({min_us}),
       num({avg_us}), num({max_us}), num({ratio}) / 100
FROM (SELECT *, clean_text({op_type}) AS op_type, num({total_us}) AS total_us FROM {table})
WHERE op_type IS NOT NULL AND total_us IS NOT NULL
"""


def sniff(head: bytes) -> bool:
    return REQUIRED <= set(csv_header(head))


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    columns, rejected = stage_csv(con, path, STAGE)
    try:
        if not REQUIRED <= set(columns):
            raise SourceError("not an op_statistic table: no OP Type / Core Type / Count")
        total = con.execute(f"SELECT count(*) FROM {STAGE}").fetchone()[0]
        if total == 0 and rejected == 0:
            raise SourceError("header only, no operator types")
        sql = INSERT.format(
            table=STAGE,
            op_type=col(columns, "OP Type"),
            core_type=col(columns, "Core Type"),
            count=col(columns, "Count"),
            total_us=col(columns, "Total Time(us)"),
            min_us=col(columns, "Min Time(us)"),
            avg_us=col(columns, "Avg Time(us)"),
            max_us=col(columns, "Max Time(us)"),
            ratio=col(columns, "Ratio(%)"),
        )
        rows = con.execute(sql, {"rank": ctx.rank}).fetchone()[0]
        return LoadResult(rows=rows, skipped=rejected + (total - rows))
    finally:
        drop_staged(con, STAGE)
