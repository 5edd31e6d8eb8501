"""The report document (design.md §7), assembled from the analysis views."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

import duckdb

from ..text import sql_literal
from .rules import Rules
from .views import ensure_views

SCHEMA_VERSION = 1
TOP_OPERATORS = 5

RANKS_SQL = "SELECT rank, device_id, kernel_count, kernel_time_us FROM rank_summary ORDER BY rank"
STEPS_SQL = """SELECT rank, step, computing_us, comm_not_overlapped_us, overlapped_us, free_us, stage_us, source
               FROM step_breakdown ORDER BY rank, step"""
STAGES_SQL = """SELECT rank, stage, start_us, end_us, wall_us, kernel_time_us, kernel_count, method
                FROM stage_summary"""
CATEGORIES_SQL = "SELECT rank, stage, category, time_us, count, share FROM stage_categories"
COMM_SQL = """SELECT e.rank, e.stage, e.comm_us, e.exposed_us, e.exposed_share, e.source
              FROM comm_exposure e JOIN stage_summary s USING (rank, stage)
              LEFT JOIN rules_order o ON o.kind = 'stage' AND o.name = e.stage
              ORDER BY e.rank, o.ord NULLS LAST, e.stage"""
FINDINGS_SQL = """SELECT rule, rank, stage, metric, category, value, threshold, direction, docs, estimate,
                         step_saving_us FROM findings"""
# Per rank: how its stages were found (as its first window says) and, unless left out, the windows.
DETECTION_SQL = """SELECT rank, arg_min(method, start_ns) AS method, arg_min(confidence, start_ns) AS confidence
                   FROM stage_windows GROUP BY rank ORDER BY rank"""
WINDOW_KEYS = ("stage", "start_us", "end_us", "wall_us", "kernel_count")
WINDOWS_SQL = f"SELECT rank, {', '.join(WINDOW_KEYS)} FROM stage_windows ORDER BY rank, start_ns"
CLUSTER_RANKS_SQL = "SELECT rank, steps, step_time_us, exposed_comm_us, step_source FROM rank_summary"
SPREAD_SQL = "SELECT measure, ranks, min_us, max_us, mean_us, spread, slow_rank FROM rank_spread"
COMM_OPS_SQL = "SELECT * FROM comm_op_times"
BANDWIDTH_SQL = "SELECT * FROM link_bandwidth"
# The finding's top operators, as its drill-down lists them (finding_operators).
TOP_SQL = """SELECT kernel_stage AS stage, category, type, op, input_shapes, count, total_us AS time_us, share
             FROM finding_operators
             WHERE rule = $rule AND rank = $rank AND stage IS NOT DISTINCT FROM $stage
             ORDER BY total_us DESC, op LIMIT $n"""


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: Any = None) -> List[Dict[str, Any]]:
    cur = con.execute(sql, params) if params is not None else con.execute(sql)
    cols = [d[0] for d in cur.description]
    rows = cur.fetchall()
    # DECIMAL columns arrive as Decimal, which JSON cannot hold: floats. Only those columns are
    # visited, not every value.
    decimal = [i for i, d in enumerate(cur.description) if str(d[1]).startswith("DECIMAL")]
    if decimal:
        rows = [list(r) for r in rows]
        for r in rows:
            for i in decimal:
                if r[i] is not None:
                    r[i] = float(r[i])
    return [dict(zip(cols, r)) for r in rows]


def _evidence(con, f: Dict[str, Any]) -> Dict[str, Any]:
    """The query that gave the finding's value (runnable as shown) and its top operators."""
    metric = f["metric"]
    if metric == "spread":
        sql = f"SELECT * FROM rank_spread WHERE measure = {sql_literal(f['category'])}"
    else:
        where = f"rank = {sql_literal(f['rank'])} AND stage = {sql_literal(f['stage'])}"
        sql = (f"SELECT category, time_us, count, share FROM stage_categories WHERE {where}"
               if metric == "share" else
               f"SELECT comm_us, exposed_us, exposed_share, wall_us, source FROM comm_exposure WHERE {where}")
    top = _rows(con, TOP_SQL, {"rule": f["rule"], "rank": f["rank"], "stage": f["stage"], "n": TOP_OPERATORS})
    return {"sql": sql, "top_operators": top}


def _findings(con) -> List[Dict[str, Any]]:
    out = []
    for f in _rows(con, FINDINGS_SQL):
        out.append({
            "rule": f["rule"], "rank": f["rank"], "stage": f["stage"], "metric": f["metric"],
            "value": f["value"], "threshold": f["threshold"], "direction": f["direction"],
            "docs": list(f["docs"]),
            "evidence": _evidence(con, f),
            "estimate": {"what": f["estimate"], "step_saving_us": f["step_saving_us"]},
        })
    return out


def detection_summary(method: str, confidence: Any) -> str:
    """One line on how a rank's stages were found, for every screen and report."""
    if method == "single":
        return "no diffusion stages found: the whole rank is one stage, All"
    if method == "signature":
        share = f", {confidence:.0%} of its kernels the same a cycle later" if confidence is not None else ""
        return f"from kernel signatures: the denoising loop's repeated forward{share}"
    if method == "markers":
        return "from markers: npu_tui.stage, diffusers' ranges or the model classes' ranges"
    return "set by hand (--stage)" if method == "override" else str(method)


def _detection(con, windows: bool) -> List[Dict[str, Any]]:
    entries = _rows(con, DETECTION_SQL)
    for e in entries:
        e["summary"] = detection_summary(e["method"], e["confidence"])
    if windows:
        by_rank = {e["rank"]: e for e in entries}
        for e in entries:
            e["windows"] = []
        # A window per stage and step: tens of thousands on a long run, so built from the rows directly.
        for rank, *window in con.execute(WINDOWS_SQL).fetchall():
            by_rank[rank]["windows"].append(dict(zip(WINDOW_KEYS, window)))
    return entries


def _format(formats: Sequence[str]) -> str:
    return "+".join(formats) if formats else "unknown"


def build_report(profile, rules: Rules, windows: bool = True) -> Dict[str, Any]:
    """The §7 document for a loaded profile, plus stage_detection and cluster. ``windows=False``
    leaves each rank's stage windows out of stage_detection: the TUI shows none, and building
    the 25,000 of a 1M-kernel rank is most of a reopen's report."""
    con = profile.con
    ensure_views(con, rules)
    return {
        "schema_version": SCHEMA_VERSION,
        "profile": {"path": str(profile.path), "format": _format(profile.formats),
                    "ranks": list(profile.ranks)},
        "ranks": _rows(con, RANKS_SQL),
        "steps": _rows(con, STEPS_SQL),
        "stages": _rows(con, STAGES_SQL),
        "categories": _rows(con, CATEGORIES_SQL),
        "comm": _rows(con, COMM_SQL),
        "findings": _findings(con),
        "stage_detection": _detection(con, windows),
        "cluster": {
            "ranks": _rows(con, CLUSTER_RANKS_SQL),
            "spread": _rows(con, SPREAD_SQL),
            "comm_ops": _rows(con, COMM_OPS_SQL),
            "bandwidth": _rows(con, BANDWIDTH_SQL),
        },
    }
