"""msprof-analyze's cluster_analysis.db: its cluster analysis of db-format profiles, written in place of
cluster_step_trace_time.csv, cluster_communication.json and cluster_communication_matrix.json, as
the tables ClusterStepTraceTime, ClusterCommunicationTime and ClusterCommunicationMatrix (units as
in those files: step times in µs, op times in ms). Into the same cluster_* tables; a rank group is
its rank set from CommunicationGroupMapping, where the file maps the group.
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import duckdb

from ..errors import SourceError
from .base import LoadResult, RankContext
from .csvfile import col
from .sqlite_export import MAGIC, STAGE_PREFIX, open_db, stage_table

KIND = "cluster_db"
FILE_NAMES = ("cluster_analysis.db",)
TABLES = ("ClusterStepTraceTime", "ClusterCommunicationTime", "ClusterCommunicationMatrix",
          "CommunicationGroupMapping")
# The step of a row: "step3", "3", or "" (no schedule).
STEP = "int_or_null(regexp_replace(clean_text({}), '^step\\s*', '', 'i'))"

STEP_TRACE = """
INSERT INTO cluster_step_trace
SELECT {step}, kind, CASE WHEN kind = 'rank' THEN int_or_null(clean_text("index")) END,
       CASE WHEN kind <> 'rank' THEN clean_text("index") END,
       st_computing, num(communication_not_overlapped), num({overlapped}), num({communication}), num(free),
       num({stage}), num({bubble}), num({excl_recv}), num({preparing})
FROM (SELECT *, lower(clean_text(type)) AS kind, num(computing) AS st_computing FROM stg_db_ClusterStepTraceTime)
WHERE st_computing IS NOT NULL AND kind IS NOT NULL
"""
COMM_TIME = """
INSERT INTO cluster_comm_ops
SELECT {groups}, {step}, t.hccl_op_name, t.group_name, int_or_null(t.rank_id), us_decimal(t.start_timestamp),
       num(t.elapsed_time), num(t.transit_time), num(t.wait_time), num(t.synchronization_time), num(t.idle_time)
FROM stg_db_ClusterCommunicationTime t
WHERE amount(num(t.elapsed_time)) IS NOT NULL AND int_or_null(t.rank_id) IS NOT NULL
"""
COMM_MATRIX = """
INSERT INTO cluster_comm_matrix
SELECT {groups}, {step}, t.hccl_op_name || '@' || t.group_name, {op_name}, int_or_null(t.src_rank),
       int_or_null(t.dst_rank), t.transport_type, num(t.transit_size), num(t.transit_time), num(t.bandwidth)
FROM stg_db_ClusterCommunicationMatrix t
WHERE NOT (text_not_amount(t.transit_size) OR text_not_amount(t.transit_time) OR text_not_amount(t.bandwidth))
"""
GROUPS = ("(SELECT any_value(g.rank_set) FROM stg_db_CommunicationGroupMapping g "
          "WHERE g.group_name = t.group_name)")


def sniff(head: bytes) -> bool:
    return head.startswith(MAGIC) and b"ClusterStepTraceTime" in head


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    try:
        with tempfile.TemporaryDirectory(prefix="npu_tui_db_") as tmp:
            sq = open_db(path, Path(tmp))
            try:
                present = {r[0] for r in sq.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                cols = {t: stage_table(sq, con, t, Path(tmp)) for t in TABLES if t in present}
            finally:
                sq.close()
    except sqlite3.Error as e:
        raise SourceError(f"unreadable SQLite file: {e}") from None
    if not set(cols) - {"CommunicationGroupMapping"}:
        raise SourceError("SQLite file without msprof-analyze's cluster tables")
    try:
        groups = GROUPS if "CommunicationGroupMapping" in cols else "NULL"
        rows = total = 0
        if "ClusterStepTraceTime" in cols:
            c = cols["ClusterStepTraceTime"]
            rows += con.execute(STEP_TRACE.format(
                step=STEP.format(col(c, "step")), overlapped=col(c, "overlapped"),
                communication=col(c, "communication"), stage=col(c, "stage"), bubble=col(c, "bubble"),
                excl_recv=col(c, "communication_not_overlapped_and_exclude_receive"),
                preparing=col(c, "preparing"))).fetchone()[0]
        for table, sql in (("ClusterCommunicationTime", COMM_TIME), ("ClusterCommunicationMatrix", COMM_MATRIX)):
            if table in cols:
                c = cols[table]
                rows += con.execute(sql.format(groups=groups, step=STEP.format(col(c, "step")),
                                               op_name=col(c, "op_name"))).fetchone()[0]
        for table in cols:
            if table != "CommunicationGroupMapping":
                total += con.execute(f"SELECT count(*) FROM {STAGE_PREFIX}{table}").fetchone()[0]
        return LoadResult(rows=rows, skipped=total - rows)
    finally:
        for t in cols:
            con.execute(f"DROP TABLE IF EXISTS {STAGE_PREFIX}{t}")
