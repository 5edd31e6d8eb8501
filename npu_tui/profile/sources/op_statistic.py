"""op_statistic.csv: the profiler's per-operator-type totals of device time (µs).

``Ratio(%)`` is stored as a share in 0..1, like every share npu-tui reports. msprof writes the same
table as ``op_statistic_{timestamp}.csv`` with a ``Device_id`` column in front.

torch_npu's op_statistic.csv counts its kernel_details.csv's kernels type by type: a kernel_details.csv
that holds fewer than it counts, beyond the rows it skipped, lost rows that no reader can see (a copy
cut exactly at a line end reads as a whole file); one that holds more holds rows twice (another
export's appended). Said on this file's row, which loads after. (msprof
writes these files per iteration or per export, and which op_summary each counts is not told.)
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from .base import LoadResult, RankContext, csv_header, kernels_fewer, kernels_more
from .csvfile import load_rows

KIND = "op_statistic"
FILE_NAMES = ("op_statistic.csv",)
NAME_PREFIXES = ("op_statistic_",)
STAGE = "stg_op_statistic"
REQUIRED = {"OP Type", "Core Type", "Count"}

# A type given twice (a row copied by hand) keeps its first row: counted twice, its kernels read as
# missing from kernel_details.csv. A count or figure given that does not read ("x", "57.5", which
# the cast rounds, a spreadsheet's "1.42E+03") skips the row, counted, where it was kept NULL or
# rounded (and the count against kernel_details.csv blamed that file).
INSERT = """
INSERT INTO op_statistic
SELECT $rank, op_type, clean_text({core_type}), int_or_null({count}), total_us, us_num({min_us}),
       us_num({avg_us}), us_num({max_us}), num({ratio}) / 100
FROM (SELECT *, clean_text({op_type}) AS op_type, us_num({total_us}) AS total_us,
             row_number() OVER (PARTITION BY op_type, clean_text({core_type}) ORDER BY rowid) > 1 AS os_again
      FROM {table})
WHERE op_type IS NOT NULL AND total_us IS NOT NULL AND NOT os_again
  AND NOT (text_not_int({count}) OR text_not_us({min_us}) OR text_not_us({avg_us}) OR text_not_us({max_us})
           OR text_not_number({ratio}))
"""

# How many kernels of the cores counted here the rank's kernel_details.csv holds fewer of (in all:
# a type renamed by hand moves kernels between types, not out of the file; negative: more), the
# types short of them, those it holds more of, what it skipped, and whether it said it was cut (how
# much its cut lost it cannot tell: this file can).
SHORT = """
WITH stat AS (SELECT op_type, core_type, sum(count) AS n FROM op_statistic WHERE rank = $rank GROUP BY ALL),
got AS (SELECT type, core, count(*) AS n FROM kernels WHERE rank = $rank AND source = 'kernel_details' GROUP BY ALL),
kd AS (SELECT skipped_rows, note FROM load_log WHERE rank = $rank AND kind = 'kernel_details' AND rows > 0)
SELECT (SELECT sum(n) FROM stat) - (SELECT coalesce(sum(n), 0) FROM got WHERE core IN (SELECT core_type FROM stat)),
       (SELECT list(s.op_type ORDER BY s.n - coalesce(g.n, 0) DESC, s.op_type)
        FROM stat s LEFT JOIN got g ON g.type IS NOT DISTINCT FROM s.op_type AND g.core IS NOT DISTINCT FROM s.core_type
        WHERE s.n > coalesce(g.n, 0)),
       (SELECT list(g.type ORDER BY g.n - coalesce(s.n, 0) DESC, g.type)
        FROM got g LEFT JOIN stat s ON g.type IS NOT DISTINCT FROM s.op_type AND g.core IS NOT DISTINCT FROM s.core_type
        WHERE g.core IN (SELECT core_type FROM stat) AND g.n > coalesce(s.n, 0)),
       (SELECT sum(skipped_rows) FROM kd), (SELECT bool_or(note LIKE '%cut short%') FROM kd),
       (SELECT count(*) FROM op_statistic WHERE rank = $rank AND count IS NULL)
"""


def sniff(head: bytes) -> bool:
    return REQUIRED <= set(csv_header(head))


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    result = _load(con, path, ctx)
    if path.name not in FILE_NAMES or "kernel_details" not in ctx.loaded or ctx.rank is None:
        return result
    short, types, over, skipped, cut, uncounted = con.execute(SHORT, {"rank": ctx.rank}).fetchone()
    said = ""
    if short and short > (skipped or 0):
        said = (f"{kernels_fewer(short - (skipped or 0))} counts{_of(types)}: "
                + ("what its cut lost" if cut else "rows missing from it that no reader can see"))
    elif short and short < 0 and not result.skipped and not uncounted:
        # Only against every row of this file: one it skipped, or without its count (a cell N/A),
        # counts no kernel here.
        said = f"{kernels_more(-short)} counts{_of(over)}: rows added to it (another export's, appended?)"
    result.note = "; ".join(filter(None, [result.note, said]))
    return result


def _of(types) -> str:
    types = types or []
    more = f" and {len(types) - 3} more types" if len(types) > 3 else ""
    return f" (of {', '.join(types[:3])}{more})" if types else ""


def _load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    return load_rows(con, path, ctx, STAGE, INSERT, {
        "op_type": "OP Type", "core_type": "Core Type", "count": "Count", "total_us": "Total Time(us)",
        "min_us": "Min Time(us)", "avg_us": "Avg Time(us)", "max_us": "Max Time(us)", "ratio": "Ratio(%)",
    }, lambda columns: REQUIRED <= set(columns), "not an op_statistic table: no OP Type / Core Type / Count",
        "header only, no operator types")
