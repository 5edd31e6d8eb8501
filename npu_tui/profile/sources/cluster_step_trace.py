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

KIND = "cluster_step_trace"
FILE_NAMES = ("cluster_step_trace_time.csv",)
STAGE = "stg_cluster_step_trace"
REQUIRED = {"Type", "Index", "Computing", "Communication(Not Overlapped)"}

INSERT = """
INSERT INTO cluster_step_trace
SELECT step_of({step}), kind,
       CASE WHEN kind = 'rank' THEN int_or_null(clean_text({index})) END,
       CASE WHEN kind <> 'rank' THEN clean_text({index}) END,
       st_computing, num({comm_not_overlapped}), num({overlapped}), num({comm}), num({free}),
       num({stage}), num({bubble}), num({comm_excl_recv}), num({preparing})
FROM (SELECT *, lower(clean_text({type})) AS kind, num({computing}) AS st_computing FROM {table})
WHERE st_computing IS NOT NULL AND kind IS NOT NULL
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
