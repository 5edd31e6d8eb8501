"""msprof-analyze's cluster_step_trace_time.csv: the step breakdown of every rank of a job (``Type``
rank, ``Index`` its rank) and of each stage group (``Type`` stage, ``Index`` the group's ranks as
written), in µs as written. Into cluster_step_trace; columns addressed by name as in
step_trace_time.csv.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from .base import LoadResult, RankContext, csv_header
from .csvfile import load_rows
from .step_trace_time import UNREAD_FIGURE

KIND = "cluster_step_trace"
FILE_NAMES = ("cluster_step_trace_time.csv",)
STAGE = "stg_cluster_step_trace"
REQUIRED = {"Type", "Index", "Computing", "Communication(Not Overlapped)"}

# As step_trace_time.csv's: a rank's (or group's) step given again keeps its first row (two would
# count as a step of twice the time, and move the spreads across ranks), and a figure given that
# does not read skips its row; both counted. So is a row of another Type than rank or stage, or of
# a rank whose Index is no number ("rank4"): kept, it was in no comparison, unsaid.
INSERT = """
INSERT INTO cluster_step_trace
SELECT step_of({step}), kind,
       CASE WHEN kind = 'rank' THEN int_or_null(clean_text({index})) END,
       CASE WHEN kind <> 'rank' THEN clean_text({index}) END,
       st_computing, us_num({comm_not_overlapped}), us_num({overlapped}), us_num({comm}), us_num({free}),
       us_num({stage}), us_num({bubble}), us_num({comm_excl_recv}), us_num({preparing})
FROM (SELECT *, lower(clean_text({type})) AS kind, us_num({computing}) AS st_computing,
             row_number() OVER (PARTITION BY step_of({step}), kind, clean_text({index}), st_computing IS NULL
                                ORDER BY rowid) > 1 AS st_again
      FROM {table})
WHERE st_computing IS NOT NULL AND kind IN ('rank', 'stage') AND NOT st_again
  AND (kind = 'stage' OR int_or_null(clean_text({index})) IS NOT NULL)
  AND NOT (""" + UNREAD_FIGURE + """)
"""


def sniff(head: bytes) -> bool:
    return REQUIRED <= set(csv_header(head))


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    return load_rows(con, path, ctx, STAGE, INSERT, {
        "step": "Step", "type": "Type", "index": "Index", "computing": "Computing",
        "comm_not_overlapped": "Communication(Not Overlapped)", "overlapped": "Overlapped",
        "comm": "Communication", "free": "Free", "stage": "Stage", "bubble": "Bubble",
        "comm_excl_recv": "Communication(Not Overlapped and Exclude Receive)", "preparing": "Preparing",
    }, lambda columns: REQUIRED <= set(columns),
        "not a cluster_step_trace_time table: no Type / Index / Computing / Communication(Not Overlapped)",
        "header only, no step rows")
