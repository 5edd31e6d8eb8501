"""msprof-analyze's cluster_communication.json: every rank's time in each comm op of a job.

Layout: ``{"(0, 1)": {"step50": {"<op>@<group>": {"0": {"Communication Time Info": {...},
"Communication Bandwidth Info": {...}}, "1": {...}}}}}``: rank groups on top, then steps, ops and
ranks. Each group's ``Total Op Info@<group>`` entry sums its ops and is left out. Job-wide: loaded
into cluster_comm_ops beside (or without) the ranks' own files; parsed by DuckDB as communication.json.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from .base import LoadResult, RankContext
from .communication import TIME_INFO, VALID_TIMES, drop_json, stage_json

KIND = "cluster_communication"
FILE_NAMES = ("cluster_communication.json",)
STAGE = "stg_cluster_communication"
# Rank groups first, then steps: a rank's own file starts with its steps.
GROUP_LAYOUT = re.compile(rb'^\s*\{\s*"[^"]*"\s*:\s*\{\s*"step[^"]*"\s*:\s*\{\s*"[^"]*@')
LEVELS = ("group_key", "step_key", "op_key", "rank_key")
OP_TYPE = """STRUCT("Communication Time Info" STRUCT("Start Timestamp(us)" VARCHAR, "Elapse Time(ms)" DOUBLE,
    "Transit Time(ms)" DOUBLE, "Wait Time(ms)" DOUBLE, "Synchronization Time(ms)" DOUBLE, "Idle Time(ms)" DOUBLE))"""
TOTAL = "Total Op Info@%"

INSERT = """
INSERT INTO cluster_comm_ops
SELECT group_key, TRY_CAST(regexp_extract(step_key, '^step([0-9]+)$', 1) AS INTEGER),
       op_without_group(op_key), op_group(op_key),
       TRY_CAST(rank_key AS INTEGER), us_decimal(t."Start Timestamp(us)"), t."Elapse Time(ms)",
       t."Transit Time(ms)", t."Wait Time(ms)", t."Synchronization Time(ms)", t."Idle Time(ms)"
FROM (SELECT *, op."Communication Time Info" AS t FROM {table}_ops WHERE op_key NOT LIKE $total)
WHERE {valid} AND TRY_CAST(rank_key AS INTEGER) IS NOT NULL
"""
COUNT = "SELECT count(*) FROM {table}_ops WHERE op_key NOT LIKE $total"


def sniff(head: bytes) -> bool:
    return bool(GROUP_LAYOUT.match(head)) and TIME_INFO in head


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    try:
        staged = stage_json(con, path, STAGE, OP_TYPE, LEVELS)
        total = con.execute(COUNT.format(table=STAGE), {"total": TOTAL}).fetchone()[0]
        rows = con.execute(INSERT.format(table=STAGE, valid=VALID_TIMES), {"total": TOTAL}).fetchone()[0]
        return LoadResult(rows=rows, skipped=total - rows + staged.not_objects,
                          note=staged.note("" if total else "no communication ops"))
    finally:
        drop_json(con, STAGE)
