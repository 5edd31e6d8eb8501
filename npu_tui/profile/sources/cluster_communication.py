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

from ...text import gap_words, rank_list
from .base import RUN_GAP_S, WALL_CLOCK_NS, LoadResult, RankContext
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


# The loaded ranks without their own communication.json (for which these ops would stand in) whose
# ops here ran apart from their kernels (RUN_GAP_S, on the wall clock), and how far: another run's
# calls (msprof-analyze's output of a job run again into the folder).
APART = """
WITH k AS (SELECT rank, min(start_ns) AS first_ns, max(start_ns) AS last_ns FROM kernels
           WHERE rank NOT IN (SELECT rank FROM comm_ops) GROUP BY rank HAVING min(start_ns) >= $wall_clock),
c AS (SELECT rank, min(start_us) * 1000 AS lo, max(start_us) * 1000 AS hi FROM cluster_comm_ops GROUP BY rank
      HAVING min(start_us) * 1000 >= $wall_clock)
SELECT c.rank, CASE WHEN c.hi < k.first_ns THEN k.first_ns - c.hi ELSE c.lo - k.last_ns END / 1e9
FROM c JOIN k USING (rank)
WHERE c.hi < k.first_ns - $gap OR c.lo > k.last_ns + $gap
ORDER BY c.rank
"""
OTHER_RUN = "another run's, not loaded"


def leave_out_other_runs(con: duckdb.DuckDBPyConnection) -> LoadResult:
    """Take out of cluster_comm_ops the ops of loaded ranks without a communication.json that ran
    apart from their own kernels: they would stand in for it with another run's calls. The rows
    taken out (a negative count), and why."""
    apart = con.execute(APART, {"wall_clock": WALL_CLOCK_NS, "gap": RUN_GAP_S * 1e9}).fetchall()
    if not apart:
        return LoadResult(rows=0)
    ranks = [r for r, _ in apart]
    n = con.execute("DELETE FROM cluster_comm_ops WHERE list_contains($ranks, rank)", {"ranks": ranks}).fetchone()[0]
    return LoadResult(rows=-n, note=f"the ops of {rank_list(ranks)} run {gap_words(min(g for _, g in apart))} or more "
                                    f"from {'its' if len(ranks) == 1 else 'their'} own kernels: {OTHER_RUN}")


def sniff(head: bytes) -> bool:
    return bool(GROUP_LAYOUT.match(head)) and TIME_INFO in head


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    try:
        staged = stage_json(con, path, STAGE, OP_TYPE, LEVELS)
        total = con.execute(COUNT.format(table=STAGE), {"total": TOTAL}).fetchone()[0]
        rows = con.execute(INSERT.format(table=STAGE, valid=VALID_TIMES), {"total": TOTAL}).fetchone()[0]
        apart = leave_out_other_runs(con)
        return LoadResult(rows=rows + apart.rows, skipped=total - rows + staged.lost,
                          note=staged.note("; ".join(filter(None, ["" if total else staged.none("ops"), apart.note]))))
    finally:
        drop_json(con, STAGE)
