"""msprof-analyze's cluster_communication_matrix.json: each link's traffic per op key of a job.

Layout: ``{"(0, 1)": {"step50": {"allreduce-top1@<group>": {"0-1": {"Transport Type", "Transit
Size(MB)", "Transit Time(ms)", "Bandwidth(GB/s)", "Op Name"}}}}}``: rank groups on top, then steps,
op keys and ``src-dst`` links (global ranks). Into cluster_comm_matrix, as communication_matrix.json
goes into comm_matrix.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from .base import LoadResult, RankContext
from .cluster_communication import GROUP_LAYOUT
from .communication import TIME_INFO, drop_json, stage_json
from .communication_matrix import LINK_COLUMNS, LINK_FILTER, LINK_TYPED, OP_TYPE, TRANSPORT, UNREAD_LINKS

KIND = "cluster_communication_matrix"
FILE_NAMES = ("cluster_communication_matrix.json",)
STAGE = "stg_cluster_communication_matrix"
LEVELS = ("group_key", "step_key", "op_key")

LINKS = """
CREATE OR REPLACE TEMP TABLE {table}_links AS
SELECT group_key, TRY_CAST(regexp_extract(step_key, '^step([0-9]+)$', 1) AS INTEGER) AS step, op_key,
       l.key AS link, """ + LINK_TYPED + """
FROM (SELECT group_key, step_key, op_key, unnest(map_entries(map_once(op))) AS l FROM {table}_ops)
"""
INSERT = f"""
INSERT INTO cluster_comm_matrix
SELECT group_key, step, op_key, {LINK_COLUMNS}
FROM {{table}}_links
WHERE {LINK_FILTER}
"""


def sniff(head: bytes) -> bool:
    return bool(GROUP_LAYOUT.match(head)) and TRANSPORT in head and TIME_INFO not in head


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    try:
        staged = stage_json(con, path, STAGE, OP_TYPE, LEVELS)
        con.execute(LINKS.format(table=STAGE))
        total = con.execute(f"SELECT (SELECT count(*) FROM {STAGE}_links) + "
                            f"({UNREAD_LINKS.format(table=STAGE)})").fetchone()[0]
        rows = con.execute(INSERT.format(table=STAGE)).fetchone()[0]
        return LoadResult(rows=rows, skipped=total - rows + staged.lost,
                          note=staged.note("" if total else staged.none("links")))
    finally:
        con.execute(f"DROP TABLE IF EXISTS {STAGE}_links")
        drop_json(con, STAGE)
