"""msprof-analyze's cluster_analysis.db: its cluster analysis of db-format profiles, written in place of
cluster_step_trace_time.csv, cluster_communication.json and cluster_communication_matrix.json, as
the tables ClusterStepTraceTime, ClusterCommunicationTime and ClusterCommunicationMatrix (older
versions: ClusterCommAnalyzerTime, ClusterCommAnalyzerMatrix), units as in those files (step times
in µs, op times in ms). Into the same cluster_* tables, each unless those files filled it already
(they load first); columns addressed by name. A rank group is its rank set from
CommunicationGroupMapping, where the file maps the group. The rows of each group's "Total Op Info",
the sum of its ops, are left out, as from the json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import duckdb

from ..errors import SourceError
from . import cluster_communication, cluster_step_trace
from .base import LoadResult, RankContext
from .csvfile import col
from .sqlite_export import CLUSTER_TABLES, MAGIC, STAGE_PREFIX, opened_db

KIND = "cluster_db"
FILE_NAMES = ("cluster_analysis.db",)
TOTAL = "Total Op Info"

COMM_TIME = """
INSERT INTO cluster_comm_ops
SELECT {ranks}, step_of({step}), {op}, {group}, int_or_null({rank}), us_decimal({start}), num({elapse}),
       num({transit}), num({wait}), num({sync}), num({idle})
FROM {table} t
WHERE {op} IS DISTINCT FROM $total AND amount(num({elapse})) IS NOT NULL AND int_or_null({rank}) IS NOT NULL
"""
COMM_MATRIX = """
INSERT INTO cluster_comm_matrix
SELECT {ranks}, step_of({step}), {op} || '@' || {group}, {op_name}, int_or_null({src}), int_or_null({dst}),
       {transport}, num({size}), num({time}), num({bandwidth})
FROM {table} t
WHERE {op} IS DISTINCT FROM $total
  AND NOT (text_not_amount({size}) OR text_not_amount({time}) OR text_not_amount({bandwidth}))
"""
# Each table read: the names versions give it, the table its rows go to, how, and its columns by
# the placeholders of that SQL (the first of several names the file has).
READ = (
    (("ClusterStepTraceTime",), "cluster_step_trace", cluster_step_trace.INSERT, {
        "step": ("step",), "type": ("type",), "index": ("index",), "computing": ("computing",),
        "comm_not_overlapped": ("communication_not_overlapped",), "overlapped": ("overlapped",),
        "comm": ("communication",), "free": ("free",), "stage": ("stage",), "bubble": ("bubble",),
        "comm_excl_recv": ("communication_not_overlapped_and_exclude_receive",), "preparing": ("preparing",)}),
    (("ClusterCommunicationTime", "ClusterCommAnalyzerTime"), "cluster_comm_ops", COMM_TIME, {
        "step": ("step",), "op": ("hccl_op_name",), "group": ("group_name",), "rank": ("rank_id", "rank"),
        "start": ("start_timestamp",), "elapse": ("elapsed_time", "elapse_time"), "transit": ("transit_time",),
        "wait": ("wait_time",), "sync": ("synchronization_time",), "idle": ("idle_time",)}),
    (("ClusterCommunicationMatrix", "ClusterCommAnalyzerMatrix"), "cluster_comm_matrix", COMM_MATRIX, {
        "step": ("step",), "op": ("hccl_op_name",), "group": ("group_name",), "op_name": ("op_name",),
        "src": ("src_rank",), "dst": ("dst_rank",), "transport": ("transport_type",), "size": ("transit_size",),
        "time": ("transit_time",), "bandwidth": ("bandwidth",)}),
)
GROUPS = ("CommunicationGroupMapping", "CommunicationGroup")
ROWS = "SELECT count(*) FILTER (WHERE {op} IS DISTINCT FROM $total) FROM {table} t"
# A row's rank group: the rank set the group mapping gives its group.
RANK_SET = "(SELECT any_value(g.{ranks}) FROM {groups} g WHERE g.{name} = t.{group})"
# Said of a cluster_analysis.db whose tables the csv and json beside it filled (health: by design).
BESIDE = "db export beside files"


def sniff(head: bytes) -> bool:
    return head.startswith(MAGIC) and bool(CLUSTER_TABLES.search(head))


def _first(names, present) -> Optional[str]:
    return next((n for n in names if n in present), None)


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    with opened_db(path) as db:
        wanted = [n for n in (*(_first(r[0], db.tables) for r in READ), _first(GROUPS, db.tables)) if n]
        cols = {n: db.stage(con, n) for n in wanted}
    try:
        if not set(cols) - set(GROUPS):
            raise SourceError("SQLite file without msprof-analyze's cluster tables")
        groups = _first(GROUPS, cols)
        rows = total = 0
        given = []  # what the csv / json beside it gave already
        for names, target, sql, fields in READ:
            name = _first(names, cols)
            if name is None:
                continue
            if con.execute(f"SELECT count(*) FROM {target}").fetchone()[0]:
                given.append(target)
                continue
            got = {"op": "NULL", "group": "NULL", **{k: col(cols[name], *v) for k, v in fields.items()}}
            g = cols.get(groups, [])
            rank_set, group_name = col(g, "rank_set"), col(g, "group_name")
            got["ranks"] = "NULL" if "NULL" in (rank_set, group_name, got["group"]) else RANK_SET.format(
                ranks=rank_set, groups=f"{STAGE_PREFIX}{groups}", name=group_name, group=got["group"])
            got["table"] = STAGE_PREFIX + name
            rows += con.execute(sql.format(**got), {"total": TOTAL} if "$total" in sql else {}).fetchone()[0]
            total += con.execute(ROWS.format(**got), {"total": TOTAL}).fetchone()[0]
        if given and not total:
            return LoadResult(rows=0, note=f"{BESIDE}: not loaded, the files beside it gave the {', '.join(given)}")
        apart = cluster_communication.leave_out_other_runs(con) if "cluster_comm_ops" not in given else LoadResult(0)
        return LoadResult(rows=rows + apart.rows, skipped=total - rows,
                          note="; ".join(filter(None, [db.damage(), apart.note])))
    finally:
        for name in cols:
            con.execute(f"DROP TABLE IF EXISTS {STAGE_PREFIX}{name}")
