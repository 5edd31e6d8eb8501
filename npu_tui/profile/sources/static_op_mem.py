"""static_op_mem.csv (graph mode): the memory each operator of a static graph is given when the
graph compiles: ``Device_id``, ``Op Name``, ``Model Name`` (the static subgraph's root, 0 for none),
``Graph ID``, ``Node Index Start`` / ``End`` (the graph's logical time; 4294967295 ends with the
graph) and ``Size(KB)``, kept as bytes. The closing ``TOTAL`` row sums the others and is left out.
msprof writes it as ``static_op_mem_{timestamp}.csv``.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from .base import LoadResult, RankContext, csv_header
from .csvfile import load_rows

KIND = "static_op_mem"
FILE_NAMES = ("static_op_mem.csv",)
NAME_PREFIXES = ("static_op_mem_",)
STAGE = "stg_static_op_mem"
REQUIRED = {"Op Name", "Node Index Start", "Size(KB)"}

INSERT = """
INSERT INTO static_op_mem
SELECT $rank, int_or_null({device}), som_name, clean_text({model}), clean_text({graph}), int_or_null({start}),
       CASE WHEN int_or_null({end}) <> 4294967295 THEN int_or_null({end}) END,
       CAST(round(num({size}) * 1024) AS BIGINT)
FROM (SELECT *, clean_text({name}) AS som_name FROM {table})
-- A size that is no amount, an index or device given that is no integer ("12us" would read as
-- "until the graph's end"): the row is skipped, counted.
WHERE som_name IS NOT NULL AND upper(som_name) <> 'TOTAL' AND amount(num({size})) IS NOT NULL
  AND NOT (text_not_int({device}) OR text_not_int({start}) OR text_not_int({end}))
"""


def sniff(head: bytes) -> bool:
    return REQUIRED <= set(csv_header(head))


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    return load_rows(con, path, ctx, STAGE, INSERT, {
        "device": "Device_id", "name": "Op Name", "model": "Model Name", "graph": "Graph ID",
        "start": "Node Index Start", "end": "Node Index End", "size": "Size(KB)",
    }, lambda columns: REQUIRED <= set(columns),
        "not a static_op_mem table: no Op Name / Node Index Start / Size(KB)",
        "header only, no operators", summary="upper(clean_text({name})) = 'TOTAL'")
