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

import sqlite3
import tempfile
from pathlib import Path
from typing import Dict, List

import duckdb

from ..errors import SourceError
from .base import LoadResult, RankContext
from .csvfile import col
from .sqlite_export import CLUSTER_TABLES, MAGIC, STAGE_PREFIX, open_db, stage_table

KIND = "cluster_db"
FILE_NAMES = ("cluster_analysis.db",)
# Each table read, by the names versions give it.
TABLES = {
    "step_trace": ("ClusterStepTraceTime",),
    "time": ("ClusterCommunicationTime", "ClusterCommAnalyzerTime"),
    "matrix": ("ClusterCommunicationMatrix", "ClusterCommAnalyzerMatrix"),
    "groups": ("CommunicationGroupMapping", "CommunicationGroup"),
}
TOTAL = "Total Op Info"
# The step of a row: "step3", "3", or "" (no schedule).
STEP = "int_or_null(regexp_replace(clean_text({}), '^step\\s*', '', 'i'))"

STEP_TRACE = """
INSERT INTO cluster_step_trace
SELECT {step}, kind, CASE WHEN kind = 'rank' THEN int_or_null(clean_text({index})) END,
       CASE WHEN kind <> 'rank' THEN clean_text({index}) END,
       st_computing, num({comm_not_overlapped}), num({overlapped}), num({communication}), num({free}),
       num({stage}), num({bubble}), num({excl_recv}), num({preparing})
FROM (SELECT *, lower(clean_text({type})) AS kind, num({computing}) AS st_computing FROM {table})
WHERE st_computing IS NOT NULL AND kind IS NOT NULL
"""
COMM_TIME = """
INSERT INTO cluster_comm_ops
SELECT {ranks}, {step}, {op}, {group}, int_or_null({rank}), us_decimal({start}), num({elapse}), num({transit}),
       num({wait}), num({sync}), num({idle})
FROM {table} t
WHERE {op} IS DISTINCT FROM $total AND amount(num({elapse})) IS NOT NULL AND int_or_null({rank}) IS NOT NULL
"""
COMM_MATRIX = """
INSERT INTO cluster_comm_matrix
SELECT {ranks}, {step}, {op} || '@' || {group}, {op_name}, int_or_null({src}), int_or_null({dst}), {transport},
       num({size}), num({time}), num({bandwidth})
FROM {table} t
WHERE {op} IS DISTINCT FROM $total
  AND NOT (text_not_amount({size}) OR text_not_amount({time}) OR text_not_amount({bandwidth}))
"""
ROWS = "SELECT count(*) FILTER (WHERE {op} IS DISTINCT FROM $total) FROM {table} t"
RANK_SET = "(SELECT any_value(g.{ranks}) FROM {table} g WHERE g.{group} = t.{own})"


def sniff(head: bytes) -> bool:
    return head.startswith(MAGIC) and bool(CLUSTER_TABLES.search(head))


def _staged(con: duckdb.DuckDBPyConnection, path: Path) -> Dict[str, List[str]]:
    """Each table of TABLES the file holds, staged: its columns, by TABLES' key."""
    if path.stat().st_size == 0:  # SQLite takes a 0-byte file for a new, empty database
        raise SourceError("empty file")
    try:
        with tempfile.TemporaryDirectory(prefix="npu_tui_db_") as tmp:
            sq = open_db(path, Path(tmp))
            try:
                present = {r[0] for r in sq.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                found = {key: next((n for n in names if n in present), None) for key, names in TABLES.items()}
                return {key: [name, *stage_table(sq, con, name, Path(tmp))] for key, name in found.items() if name}
            finally:
                sq.close()
    except sqlite3.Error as e:
        raise SourceError(f"unreadable SQLite file: {e}") from None


def _empty(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    staged = _staged(con, path)
    try:
        if not set(staged) - {"groups"}:
            raise SourceError("SQLite file without msprof-analyze's cluster tables")
        ranks = "NULL"
        if "groups" in staged:
            name, *g = staged["groups"]
            if col(g, "rank_set") != "NULL" and col(g, "group_name") != "NULL":
                ranks = RANK_SET.format(ranks=col(g, "rank_set"), table=STAGE_PREFIX + name,
                                        group=col(g, "group_name"), own="{group}")
        rows = total = 0
        given = []  # what the csv / json beside it gave already
        for key, target, sql in (("step_trace", "cluster_step_trace", STEP_TRACE), ("time", "cluster_comm_ops", COMM_TIME),
                                 ("matrix", "cluster_comm_matrix", COMM_MATRIX)):
            if key not in staged:
                continue
            if not _empty(con, target):
                given.append(target)
                continue
            name, *c = staged[key]
            names = {"table": STAGE_PREFIX + name, "step": STEP.format(col(c, "step")), "op": col(c, "hccl_op_name"),
                     "group": col(c, "group_name")}
            fields = {**names, "ranks": ranks.format(**names),
                      **{k: col(c, *v) for k, v in {
                          "index": ("index",), "type": ("type",), "computing": ("computing",),
                          "comm_not_overlapped": ("communication_not_overlapped",), "overlapped": ("overlapped",),
                          "communication": ("communication",), "free": ("free",), "stage": ("stage",),
                          "bubble": ("bubble",), "excl_recv": ("communication_not_overlapped_and_exclude_receive",),
                          "preparing": ("preparing",), "rank": ("rank_id", "rank"),
                          "start": ("start_timestamp",), "elapse": ("elapsed_time", "elapse_time"),
                          "transit": ("transit_time",), "wait": ("wait_time",), "sync": ("synchronization_time",),
                          "idle": ("idle_time",), "op_name": ("op_name",), "src": ("src_rank",), "dst": ("dst_rank",),
                          "transport": ("transport_type",), "size": ("transit_size",), "time": ("transit_time",),
                          "bandwidth": ("bandwidth",)}.items()}}
            rows += con.execute(sql.format(**fields), {"total": TOTAL} if key != "step_trace" else {}).fetchone()[0]
            total += con.execute(ROWS.format(**fields), {"total": TOTAL}).fetchone()[0]
        if given and not total:
            return LoadResult(rows=0, note=f"{BESIDE}: not loaded, the files beside it gave the {', '.join(given)}")
        return LoadResult(rows=rows, skipped=total - rows)
    finally:
        for name, *_ in staged.values():
            con.execute(f"DROP TABLE IF EXISTS {STAGE_PREFIX}{name}")


# Said of a cluster_analysis.db whose tables the csv and json beside it filled (health: by design).
BESIDE = "db export beside files"
