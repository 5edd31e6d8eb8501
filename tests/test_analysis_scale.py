"""The analysis stays O(n log n): no join pairs two large inputs on a range or without a condition.

At a million kernels such a join (every launch against every marker range, every segment against
every window) took minutes; at 100k it still finishes in a second, so time is no guard. The plan is:
each statement install_views runs is profiled, and every join that compares with < / > (ASOF joins
excepted: they are sort-merge) or is a nested loop must have a small side.
"""

import json

from npu_tui.analysis import load_rules, views
from npu_tui.analysis.rules import install_rule_tables
from npu_tui.profile import connect

KERNELS_PER_RANK = 50_000
PER_RANGE = 40  # kernels launched inside each outermost module range
SMALL = 1_000  # rows a side of a range or nested-loop join may have (rules, one row per step, ...)
RANGE_OPS = ("<", ">")
NESTED = ("NESTED_LOOP_JOIN", "BLOCKWISE_NL_JOIN", "CROSS_PRODUCT")

TYPES = "['MatMulV3', 'FlashAttentionScore', 'Add', 'Conv2D', 'hcom_allReduce_']"
CORES = "['AI_CORE', 'AI_CORE', 'AI_VECTOR_CORE', 'AI_CORE', 'HCCL']"

# Rank 0 maps its module ranges through flows, rank 1 by launch order; one step per half.
DATA = f"""
INSERT INTO kernels (rank, step, name, type, core, start_ns, dur_ns, input_shapes, source)
SELECT r.range, 1 + i.range // {KERNELS_PER_RANK // 2}, {TYPES}[1 + i.range % 5] || '_' || i.range,
       {TYPES}[1 + i.range % 5], {CORES}[1 + i.range % 5], i.range * 1000,
       CASE WHEN i.range % 5 = 4 THEN 1500 ELSE 700 END, '"8,64"', 'test'
FROM range(2) r, range({KERNELS_PER_RANK}) i;
INSERT INTO host_events (rank, name, start_ns, dur_ns)
SELECT r.range, 'nn.Module: FluxTransformer2DModel_0', b.range * {PER_RANGE * 1000}, {(PER_RANGE - 1) * 1000}
FROM range(2) r, range({KERNELS_PER_RANK // PER_RANGE}) b;
INSERT INTO flows (rank, flow_id, host_ts_ns, device_ts_ns)
SELECT 0, 'f', i.range * 1000, i.range * 1000 FROM range({KERNELS_PER_RANK}) i;
INSERT INTO overlap_lanes (rank, lane, start_ns, dur_ns)
SELECT 0, l.lane, i.range * 1000 + l.off, l.dur
FROM range({KERNELS_PER_RANK}) i, (VALUES ('Computing', 0, 700), ('Free', 700, 300)) l(lane, off, dur);
INSERT INTO ranks (rank, device_id, source_format) VALUES (0, 0, 'test'), (1, 1, 'test');
"""


# DuckDB's JSON profile names an operator's type and rows one way from 2.0, another before.
def _type(node) -> str:
    return node.get("type", node.get("operator_type", ""))


def _rows(node) -> int:
    return node.get("intermediate_rows", node.get("operator_cardinality", 0))


def _joins(node):
    if "JOIN" in _type(node) or _type(node) in NESTED:
        yield node
    for child in node.get("children", []):
        yield from _joins(child)


def _unbounded(join) -> bool:
    kind = _type(join)
    conditions = join.get("extra_info", {}).get("Conditions", [])
    conditions = [conditions] if isinstance(conditions, str) else conditions
    ranged = any(op in c for c in conditions for op in RANGE_OPS)
    if kind == "ASOF_JOIN" or not (ranged or kind in NESTED):
        return False
    sides = [_rows(c) for c in join.get("children", [])]
    return len(sides) == 2 and min(sides) > SMALL


def test_install_views_has_no_large_range_join(tmp_path):
    con = connect()
    con.execute(DATA)
    install_rule_tables(con, load_rules())
    con.execute("CREATE TABLE ranks_apart (rank INTEGER, why VARCHAR)")  # install_views' input: none apart
    con.execute(views.MACROS_SQL)
    out = tmp_path / "profile.json"
    con.execute("PRAGMA enable_profiling = 'json'")
    con.execute(f"PRAGMA profiling_output = '{out}'")
    bad = []
    for name in views.VIEW_ORDER:
        views._create(con, name)
        if name not in views.MATERIALIZED:  # a view runs when read
            con.execute(f"SELECT count(*) FROM {name}").fetchall()
        profile = json.loads(out.read_text())
        for root in profile.get("operator", profile.get("children", [])):
            bad += [(name, _type(j), j["extra_info"].get("Conditions")) for j in _joins(root) if _unbounded(j)]
    con.execute("PRAGMA disable_profiling")
    assert bad == []

    # The data went where the joins were meant to be exercised: one marker window per module
    # range on both ranks (flows on rank 0, launch order on rank 1), every kernel placed.
    assert con.execute("SELECT rank, mapped_by, count(*) FROM stage_markers GROUP BY ALL ORDER BY rank").fetchall() \
        == [(0, "flows", KERNELS_PER_RANK // PER_RANGE), (1, "launch_order", KERNELS_PER_RANK // PER_RANGE)]
    assert con.execute("SELECT count(*) FROM kernel_stages").fetchone()[0] == 2 * KERNELS_PER_RANK
