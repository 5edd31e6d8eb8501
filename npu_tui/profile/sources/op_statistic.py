"""op_statistic.csv: the profiler's per-operator-type totals of device time (µs).

``Ratio(%)`` is stored as a share in 0..1, like every share npu-tui reports. msprof writes the same
table as ``op_statistic_{timestamp}.csv`` with a ``Device_id`` column in front.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from .base import LoadResult, RankContext, csv_header
from .csvfile import load_rows

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
    return load_rows(con, path, ctx, STAGE, INSERT, {
        "op_type": "OP Type", "core_type": "Core Type", "count": "Count", "total_us": "Total Time(us)",
        "min_us": "Min Time(us)", "avg_us": "Avg Time(us)", "max_us": "Max Time(us)", "ratio": "Ratio(%)",
    }, lambda columns: REQUIRED <= set(columns), "not an op_statistic table: no OP Type / Core Type / Count",
        "header only, no operator types")
