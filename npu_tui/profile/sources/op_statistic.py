"""op_statistic.csv: the profiler's per-operator-type totals of device time (µs).

``Ratio(%)`` is stored as a share in 0..1, like every share npu-tui reports. msprof writes the same
table as ``op_statistic_{timestamp}.csv`` with a ``Device_id`` column in front.

Its counts are the kernel file's, type by type (kernel_details.csv, or msprof's op_summary): a kernel
file that holds fewer than it counts, beyond the rows it skipped, lost rows that no reader can see
(a copy cut exactly at a line end reads as a whole file). Said on this file's row, which loads after.
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

# Each type's kernels the rank's kernel file holds fewer of than counted here (rows from this
# rank's op_statistic files so far: an msprof iteration's counts only its own, never more).
SHORT = """
WITH stat AS (SELECT op_type, core_type, sum(count) AS n FROM op_statistic WHERE rank = $rank GROUP BY ALL),
got AS (SELECT type, core, count(*) AS n FROM kernels WHERE rank = $rank AND source = $source GROUP BY ALL)
SELECT sum(s.n - coalesce(g.n, 0)), list(s.op_type ORDER BY s.n - coalesce(g.n, 0) DESC, s.op_type),
       (SELECT sum(skipped_rows) FROM load_log WHERE rank = $rank AND kind = $source),
       (SELECT parse_filename(min(file)) FROM load_log WHERE rank = $rank AND kind = $source)
FROM stat s LEFT JOIN got g ON g.type IS NOT DISTINCT FROM s.op_type AND g.core IS NOT DISTINCT FROM s.core_type
WHERE s.n > coalesce(g.n, 0)
"""
COUNTED = ("kernel_details", "op_summary")
FEWER = "kernels fewer than this file counts"


def sniff(head: bytes) -> bool:
    return REQUIRED <= set(csv_header(head))


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    result = _load(con, path, ctx)
    source = next((k for k in COUNTED if k in ctx.loaded), None)
    if source is None or ctx.rank is None:
        return result
    short, types, skipped, name = con.execute(SHORT, {"rank": ctx.rank, "source": source}).fetchone()
    if short and short > (skipped or 0):
        missing = short - (skipped or 0)
        more = f" and {len(types) - 3} more types" if len(types) > 3 else ""
        said = (f"{name} holds {missing:,} {FEWER} (of {', '.join(types[:3])}{more}): rows missing from it "
                "that no reader can see")
        result.note = "; ".join(filter(None, [result.note, said]))
    return result


def _load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    return load_rows(con, path, ctx, STAGE, INSERT, {
        "op_type": "OP Type", "core_type": "Core Type", "count": "Count", "total_us": "Total Time(us)",
        "min_us": "Min Time(us)", "avg_us": "Avg Time(us)", "max_us": "Max Time(us)", "ratio": "Ratio(%)",
    }, lambda columns: REQUIRED <= set(columns), "not an op_statistic table: no OP Type / Core Type / Count",
        "header only, no operator types")
