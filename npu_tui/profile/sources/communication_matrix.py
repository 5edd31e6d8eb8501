"""communication_matrix.json: traffic per link (``"0-1"`` = src rank 0 to dst rank 1) per op group.

Layout: ``{"step50": {"collective" | "p2p": {"allreduce-top1@<group>": {"0-1": {"Transport Type",
"Transit Size(MB)", "Transit Time(ms)", "Bandwidth(GB/s)", "Op Name"}}}}}``. The profiler keeps only
representative ops of each type (top1, middle, bottom1..3) plus a ``-total`` entry summing all of
them; every entry is kept and ``op_key`` tells them apart. Parsed by DuckDB like communication.json.
msprof's own analysis (``PROF_*/analyze``) writes the ops at the top, without steps or kinds, and
their sum beside them under "Total HCCL Operators", left out as communication.json's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb

from .base import LoadResult, RankContext
from .communication import FLAT_TOTAL, STEP, STEP_LAYOUT, TIME_INFO, drop_json, stage_either

KIND = "communication_matrix"
FILE_NAMES = ("communication_matrix.json",)
STAGE = "stg_communication_matrix"
TRANSPORT = b'"Transport Type"'
FLAT_LAYOUT = re.compile(rb'^\s*\{\s*"[^"]*"\s*:\s*\{\s*"[0-9]+-[0-9]+"\s*:')

# An op is a map of its links, each typed on its own (LINK): its JSON, kept beside, tells a figure
# given as text or null from one not given (LINK_FILTER), without parsing the whole op per link
# (a cluster matrix op holds every pair of a group: 4,096 links at 64 ranks).
OP_TYPE = "MAP(VARCHAR, JSON)"
# (MindSpore names the op "op_name")
LINK = """STRUCT("Transport Type" VARCHAR, "Transit Size(MB)" DOUBLE, "Transit Time(ms)" DOUBLE,
    "Bandwidth(GB/s)" DOUBLE, "Op Name" VARCHAR, "op_name" VARCHAR)"""
LINK_TYPED = f"TRY(json_transform(l.value, '{json.dumps(LINK)}')) AS v, l.value AS raw"
# The links of the ops that were no map of links, each lost whole (a link given twice, or an op that
# is no object: one).
UNREAD_LINKS = ("SELECT coalesce(sum(CASE WHEN json_type(v) = 'OBJECT' THEN len(json_keys(v)) ELSE 1 END), 0) "
                "FROM {table}_ops WHERE map_once(op) IS NULL")

LINKS = """
CREATE OR REPLACE TEMP TABLE {table}_links AS
SELECT {step} AS step, kind, op_key, l.key AS link, """ + LINK_TYPED + """
FROM (SELECT step_key, kind, op_key, unnest(map_entries(map_once(op))) AS l FROM {table}_ops WHERE op_key <> $total)
"""

# A link's columns from its "src-dst" key and value, and the links kept (a src-dst key, some figure);
# shared with msprof-analyze's cluster matrix.
LINK_COLUMNS = """clean_text(coalesce(v."Op Name", v."op_name")),
       TRY_CAST(regexp_extract(link, '^([0-9]+)-[0-9]+$', 1) AS INTEGER),
       TRY_CAST(regexp_extract(link, '^[0-9]+-([0-9]+)$', 1) AS INTEGER),
       clean_text(v."Transport Type"), v."Transit Size(MB)", v."Transit Time(ms)", v."Bandwidth(GB/s)"
"""
# Some figure given, and none that is not an amount (NaN, inf, negative, huge; text or null, which
# the link's JSON ``raw`` tells: the link is skipped).
LINK_FILTER = """regexp_full_match(link, '[0-9]+-[0-9]+')
  AND COALESCE(v."Transit Size(MB)", v."Transit Time(ms)", v."Bandwidth(GB/s)") IS NOT NULL
  AND NOT (""" + " OR ".join(f"""json_not_amount(v."{f}", raw, '$."{f}"')"""
                            for f in ("Transit Size(MB)", "Transit Time(ms)", "Bandwidth(GB/s)")) + ")"

INSERT = f"""
INSERT INTO comm_matrix (rank, step, kind, op_key, op_name, src_rank, dst_rank, transport, transit_size_mb,
                         transit_time_ms, bandwidth_gbps)
SELECT $rank, step, kind, op_key, {LINK_COLUMNS}
FROM {{table}}_links
WHERE {LINK_FILTER}
"""

# A link's ranks are numbered within its op's group (op_key's @group): the job's ranks they are, once
# every rank is in. profiler_metadata.json's groups say it (comm_groups); else each rank's own file
# does, as msprof-analyze reads it: the group's link to itself (src = dst, the local copy HCCL
# counts) is the reporting rank's, and so is a send's src and a receive's dst (a pipeline's groups
# have no self link; a batchsendrecv's links go both ways, and say nothing of it). A number two
# ranks claim is neither's. A number a told group's files give no rank for is NULL: a rank not loaded. A group nothing tells (older files) keeps the file's numbers,
# the only reading there is (right for the job's whole group, which numbers ranks as the job does).
GLOBAL = """
CREATE OR REPLACE TEMP TABLE comm_numbers AS
WITH m AS (SELECT rank, src_rank, dst_rank, lower(op_key) AS op, op_group(op_key) AS grp
           FROM comm_matrix),
told AS (SELECT group_name AS grp, local_rank, min(global_rank) AS global_rank FROM comm_groups GROUP BY ALL
         HAVING count(DISTINCT global_rank) = 1),
claims AS (
    SELECT grp, rank, CASE WHEN src_rank = dst_rank THEN src_rank
                           WHEN op LIKE '%sendrecv%' THEN NULL  -- (both ways: either end may be the rank)
                           WHEN op LIKE '%send%' THEN src_rank
                           WHEN op LIKE '%receive%' OR op LIKE '%recv%' THEN dst_rank END AS local_rank
    FROM m WHERE grp NOT IN (SELECT grp FROM told)
),
own AS (SELECT grp, local_rank, min(rank) AS global_rank FROM claims WHERE local_rank IS NOT NULL
        GROUP BY ALL HAVING count(DISTINCT rank) = 1)
SELECT * FROM told UNION ALL SELECT * FROM own;
UPDATE comm_matrix SET src_global = g.src, dst_global = g.dst
FROM (SELECT m.rowid AS row, CASE WHEN t.grp IS NULL THEN m.src_rank ELSE s.global_rank END AS src,
             CASE WHEN t.grp IS NULL THEN m.dst_rank ELSE d.global_rank END AS dst
      FROM (SELECT rowid, src_rank, dst_rank, op_group(op_key) AS grp FROM comm_matrix) m
      LEFT JOIN (SELECT DISTINCT grp FROM comm_numbers) t USING (grp)
      LEFT JOIN comm_numbers s ON s.grp = m.grp AND s.local_rank = m.src_rank
      LEFT JOIN comm_numbers d ON d.grp = m.grp AND d.local_rank = m.dst_rank) g
WHERE comm_matrix.rowid = g.row;
DROP TABLE comm_numbers;
"""


def number_globally(con: duckdb.DuckDBPyConnection) -> None:
    """Give every link of comm_matrix the job's ranks (GLOBAL); once every rank's files are in."""
    con.execute(GLOBAL)


def sniff(head: bytes) -> bool:
    return bool(STEP_LAYOUT.match(head) or FLAT_LAYOUT.match(head)) and TRANSPORT in head and TIME_INFO not in head


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    try:
        staged, flat = stage_either(con, path, STAGE, OP_TYPE, FLAT_LAYOUT)
        con.execute(LINKS.format(table=STAGE, step=STEP), {"total": FLAT_TOTAL if flat else ""})
        total = con.execute(f"SELECT (SELECT count(*) FROM {STAGE}_links) + "
                            f"({UNREAD_LINKS.format(table=STAGE)})").fetchone()[0]
        rows = con.execute(INSERT.format(table=STAGE), {"rank": ctx.rank}).fetchone()[0]
        note = "" if total else staged.none("links")
        return LoadResult(rows=rows, skipped=total - rows + staged.lost, note=staged.note(note))
    finally:
        con.execute(f"DROP TABLE IF EXISTS {STAGE}_links")
        drop_json(con, STAGE)
