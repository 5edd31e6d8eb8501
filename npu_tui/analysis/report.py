"""The report document (design.md §7), assembled from the analysis views."""

from __future__ import annotations

from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from contextlib import suppress
from dataclasses import asdict
from typing import Any, Callable, Dict, List, Optional, Sequence, Set

import duckdb

from ..profile.health import HealthItem, failed, health, ranks_apart, traces_lost
from ..text import path_text, sql_literal
from .render import Encoded
from .rules import Rules
from .views import ensure_views

SCHEMA_VERSION = 3
TOP_OPERATORS = 5

# The ranks loaded (cluster.ranks adds those the cluster step trace alone gives).
RANKS_SQL = """SELECT rank, device_id, kernel_count, kernel_time_us, per FROM rank_summary
WHERE step_source IS DISTINCT FROM 'cluster_step_trace' ORDER BY rank"""
STEPS_SQL = """SELECT b.rank, b.step, b.computing_us, b.comm_not_overlapped_us, b.overlapped_us, b.free_us, b.stage_us,
                      b.bubble_us, b.step_us, b.source, coalesce(f.outlier, false) AS outlier
               FROM step_breakdown b LEFT JOIN step_flags f ON f.rank = b.rank AND f.step IS NOT DISTINCT FROM b.step
               ORDER BY b.rank, b.step"""
# (forwards: the DiT stage's forwards a pipeline call, a check on what was found: the call's
# denoising steps, twice under unbatched guidance)
STAGES_SQL = """SELECT s.rank, s.stage, s.start_us, s.end_us, s.wall_us, s.kernel_time_us, s.kernel_count, s.method,
                       m.value::INTEGER AS forwards
                FROM stage_summary s
                LEFT JOIN stage_metrics m ON m.rank = s.rank AND m.stage = s.stage AND m.metric = 'forwards'
                LEFT JOIN rules_order o ON o.kind = 'stage' AND o.name = s.stage
                ORDER BY s.rank, o.ord NULLS LAST, s.stage"""
ACCOUNT_SQL = """SELECT a.rank, a.stage, a.part, a.detail, a.us_per_step, a.share, a.steps, a.left_out
                 FROM step_account_mean a LEFT JOIN rules_order o ON o.kind = 'stage' AND o.name = a.stage
                 ORDER BY a.rank, o.ord NULLS LAST, a.stage, a.part, a.detail"""
CHECK_SQL = "SELECT rank, source, steps, deviation, differs, kernels FROM step_account_check"
CATEGORIES_SQL = "SELECT rank, stage, category, time_us, count, share FROM stage_categories"
COMM_SQL = """SELECT e.rank, e.stage, e.wall_us, e.comm_us, e.exposed_us, e.steps, e.stage_us_per_step,
                     e.comm_us_per_step, e.exposed_us_per_step, e.exposed_share, e.source
              FROM comm_exposure e JOIN stage_summary s USING (rank, stage)
              LEFT JOIN rules_order o ON o.kind = 'stage' AND o.name = e.stage
              ORDER BY e.rank, o.ord NULLS LAST, e.stage"""
FINDINGS_SQL = """SELECT rule, stage, ranks, rank, metric, category, cause, value, threshold, direction, docs, estimate,
                         waited_for, saving_us, per FROM findings"""
PER_RANK_SQL = """SELECT rank, value, cause, saving_us, apart FROM finding_ranks
                  WHERE rule = $rule AND stage IS NOT DISTINCT FROM $stage
                  ORDER BY value DESC, saving_us DESC NULLS LAST, rank"""
# Per rank: how its stages were found (as its first window says) and, unless left out, the windows.
DETECTION_SQL = """SELECT rank, arg_min(method, start_ns) AS method, arg_min(confidence, start_ns) AS confidence
                   FROM stage_windows GROUP BY rank ORDER BY rank"""
WINDOW_KEYS = ("stage", "start_us", "end_us", "wall_us", "kernel_count")
WINDOWS_SQL = f"SELECT rank, {', '.join(WINDOW_KEYS)} FROM stage_windows ORDER BY rank, start_ns"
WINDOWS_JSON_SQL = f"""SELECT rank, to_json(list(struct_pack({', '.join(WINDOW_KEYS)}) ORDER BY start_ns))::VARCHAR
                      FROM stage_windows GROUP BY rank"""
CLUSTER_RANKS_SQL = """SELECT rank, steps, outliers, step_time_us, exposed_comm_us, own_us, step_source, apart
                       FROM rank_summary"""
SPREAD_SQL = "SELECT measure, ranks, min_us, max_us, mean_us, spread, slow_rank FROM rank_spread"
COMM_OPS_SQL = "SELECT * FROM comm_op_times"
BANDWIDTH_SQL = "SELECT * FROM link_bandwidth"
LINKS_SQL = "SELECT * FROM comm_links ORDER BY src_rank, dst_rank, transport, reported_by, comm_group, src_local, dst_local"
WAITS_SQL = "SELECT * FROM rank_waits ORDER BY rank"
MEMORY_PEAKS_SQL = "SELECT * FROM memory_peaks ORDER BY rank, stage NULLS FIRST"
MEMORY_FORWARD_KEYS = ("rank", "stage", "forward", "peak_allocated_mb", "peak_reserved_mb")
MEMORY_FORWARDS_SQL = f"SELECT {', '.join(MEMORY_FORWARD_KEYS)} FROM memory_windows ORDER BY rank, stage, forward"
MEMORY_FORWARDS_JSON_SQL = f"""SELECT coalesce(to_json(list(struct_pack({', '.join(MEMORY_FORWARD_KEYS)})
                                                    ORDER BY rank, stage, forward))::VARCHAR, '[]')
                              FROM memory_windows"""
MEMORY_OPERATORS_SQL = """SELECT * FROM memory_operators
QUALIFY row_number() OVER (PARTITION BY rank ORDER BY total_mb DESC, name) <= 10 ORDER BY rank, total_mb DESC, name"""
CLUSTER_STEPS_SQL = "SELECT * FROM cluster_step_trace ORDER BY type, step, rank, ranks"
# The finding's top operators, as its drill-down lists them (finding_operators).
TOP_SQL = """SELECT kernel_stage AS stage, category, type, op, input_shapes, count, total_us AS time_us, share
             FROM finding_operators
             WHERE rule = $rule AND rank = $rank AND stage IS NOT DISTINCT FROM $stage
             ORDER BY total_us DESC, op, input_shapes LIMIT $n"""
GAPS_SQL = """SELECT step, stage, between_steps, start_us, gap_us, host_range FROM idle_gaps WHERE rank = $rank
              ORDER BY gap_us DESC, start_us LIMIT $n"""
# What gave a finding's value, by metric, runnable as shown; {where} is the finding's rank (and
# stage), {stage} its stage.
EVIDENCE = {
    "share": "SELECT category, time_us, count, share FROM stage_categories WHERE {where}",
    "exposed_share": """SELECT stage_us_per_step, comm_us_per_step, exposed_us_per_step, exposed_share, source
FROM comm_exposure WHERE {where}""",
    "idle_share": """SELECT coalesce(sum(us_per_step) FILTER (WHERE part = 'free'), 0) AS free_us,
       coalesce(sum(us_per_step) FILTER (WHERE part = 'between'), 0) AS between_us,
       sum(us_per_step) AS step_and_between_us, (free_us + between_us) / step_and_between_us AS idle_share
FROM step_account_mean WHERE {where}""",
    "copy_share": """SELECT sum(us_per_step) FILTER (WHERE part = 'copy') AS copy_us,
       sum(us_per_step) FILTER (WHERE part <> 'between') AS step_us, copy_us / step_us AS copy_share
FROM step_account_mean WHERE {where}""",
    "vae_share": """SELECT sum(us_per_step) FILTER (WHERE stage = {stage}) AS vae_us,
       sum(us_per_step) FILTER (WHERE part <> 'between') AS step_us, vae_us / step_us AS vae_share
FROM step_account_mean WHERE {where}""",
    "forwards": "SELECT start_us, end_us, wall_us, kernel_count FROM stage_windows WHERE {where}",
    "memory_growth": "SELECT forward, peak_allocated_mb, peak_reserved_mb FROM memory_windows WHERE {where} ORDER BY forward",
    "memory_idle_reserved": """SELECT peak_reserved_mb, allocated_at_peak_mb, idle_reserved_share, peak_stage
FROM memory_peaks WHERE {where} AND stage IS NULL""",
    "memory_capacity_share": """SELECT peak_reserved_mb, peak_allocated_mb, capacity_mb, capacity_share, peak_stage
FROM memory_peaks WHERE {where} AND stage IS NULL""",
}
# What an exposed comm finding's time is, per step, which its direction follows.
SPLIT_SQL = """SELECT detail, us_per_step AS us FROM step_account_mean
               WHERE rank = $rank AND stage = $stage AND part = 'comm_exposed' ORDER BY us DESC, detail"""


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
    """The query that gave the finding's value (runnable as shown) and what lies behind it: the
    worst rank's top operators, or its longest idle gaps; for exposed comm, its split per step."""
    metric = f["metric"]
    if metric == "spread":
        sql = f"SELECT * FROM rank_spread WHERE measure = {sql_literal(f['category'])}"
    else:
        where = f"rank = {sql_literal(f['rank'])}"
        if f["stage"] is not None and metric not in ("vae_share",):
            where += f" AND stage = {sql_literal(f['stage'])}"
        sql = EVIDENCE[metric].format(where=where, stage=sql_literal(f["stage"]))
    evidence: Dict[str, Any] = {"sql": sql}
    if metric == "exposed_share":  # what the exposed time is, which the direction follows
        evidence["exposed_split"] = {r["detail"]: r["us"] for r in _rows(con, SPLIT_SQL, {"rank": f["rank"],
                                                                                         "stage": f["stage"]})}
    if metric == "idle_share":
        evidence["idle_gaps"] = _rows(con, GAPS_SQL, {"rank": f["rank"], "n": TOP_OPERATORS})
    else:
        evidence["top_operators"] = _rows(con, TOP_SQL, {"rule": f["rule"], "rank": f["rank"], "stage": f["stage"],
                                                         "n": TOP_OPERATORS})
    return evidence


def _findings(con) -> List[Dict[str, Any]]:
    out = []
    for f in _rows(con, FINDINGS_SQL):
        out.append(dict(
            f, ranks=list(f["ranks"]), docs=list(f["docs"]),
            per_rank=_rows(con, PER_RANK_SQL, {"rule": f["rule"], "stage": f["stage"]}),
            evidence=_evidence(con, f)))
    return out


def detection_summary(method: str, confidence: Any, trace_lost: bool = False) -> str:
    """One line on how a rank's stages were found, for every screen and report. ``trace_lost``:
    the rank's trace, which holds the markers, did not load whole."""
    if method == "single":
        return "no diffusion stages found: the whole rank is one stage, All"
    if method == "signature":
        share = f", {confidence:.0%} of its kernels the same a cycle later" if confidence is not None else ""
        return f"from kernel signatures: the denoising loop's repeated forward{share}"
    if method == "markers":
        lost = "; its trace did not load whole: kernels whose markers it lost count as Other" if trace_lost else ""
        return f"from markers: npu_tui.stage, diffusers' ranges or the model classes' ranges{lost}"
    return "set by hand (--stage)" if method == "override" else str(method)


def _detection(con, windows: bool, encoded: bool, lost: Set[int]) -> List[Dict[str, Any]]:
    entries = _rows(con, DETECTION_SQL)
    for e in entries:
        e["summary"] = detection_summary(e["method"], e["confidence"], e["rank"] in lost)
    if not windows:
        return entries
    by_rank = {e["rank"]: e for e in entries}
    if encoded:
        for rank, text in con.execute(WINDOWS_JSON_SQL).fetchall():
            by_rank[rank]["windows"] = Encoded(text)
        return entries
    for e in entries:
        e["windows"] = []
    # A window per stage and step: tens of thousands on a long run, so built from the rows directly.
    for rank, *window in con.execute(WINDOWS_SQL).fetchall():
        by_rank[rank]["windows"].append(dict(zip(WINDOW_KEYS, window)))
    return entries


def _memory_forwards(con, encoded: bool):
    if encoded:
        return Encoded(con.execute(MEMORY_FORWARDS_JSON_SQL).fetchone()[0])
    return _rows(con, MEMORY_FORWARDS_SQL)


def _format(formats: Sequence[str]) -> str:
    return "+".join(formats) if formats else "unknown"


def _side_by_side(con: duckdb.DuckDBPyConnection, parts: Dict[str, Callable[[Any], Any]]) -> Dict[str, Any]:
    """Each part on a cursor of its own, a few at once: most of the report's queries are small
    and run on one thread, so one after another they left the other cores idle (a reopened
    64-rank report: 0.25 s of queries in turn, 0.15 s side by side on 2 cores; 4 at once is no
    slower there than 2). A part that fails, or Ctrl-C, stops the others where they are."""
    cursors = {name: con.cursor() for name in parts}
    pool = ThreadPoolExecutor(max_workers=min(len(parts), 4), thread_name_prefix="npu-tui-report")
    futures: Dict[str, Future] = {}
    try:
        for name, part in parts.items():
            futures[name] = pool.submit(part, cursors[name])
        wait(futures.values(), return_when=FIRST_EXCEPTION)
        for f in futures.values():
            if f.done() and f.exception() is not None:
                f.result()  # raises it
        return {name: f.result() for name, f in futures.items()}
    except BaseException:
        _stop(futures.values(), cursors.values())
        raise
    finally:
        pool.shutdown(wait=True)
        for cur in cursors.values():
            with suppress(duckdb.Error):
                cur.close()


def _stop(futures, cursors) -> None:
    """Cancel the parts not started and interrupt the running ones, again until each is done: one
    about to start its query would miss a single interrupt. Ctrl-C pressed again meanwhile does
    not cut this short (the parts would then run to the end)."""
    for f in futures:
        f.cancel()
    while not all(f.done() for f in futures):
        try:
            for cur in cursors:
                cur.interrupt()
            wait(futures, timeout=0.05)
        except KeyboardInterrupt:
            continue


def _query(sql: str) -> Callable[[Any], List[Dict[str, Any]]]:
    return lambda cur: _rows(cur, sql)


def build_report(profile, rules: Rules, windows: bool = True, encoded: bool = False,
                 items: Optional[List[HealthItem]] = None) -> Dict[str, Any]:
    """The §7 document for a loaded profile, plus stage_detection and cluster. ``windows=False``
    leaves each rank's stage windows out of stage_detection: the TUI shows none, and building
    the 25,000 of a 1M-kernel rank is most of a reopen's report. ``encoded`` gives the stage
    windows and the memory per forward as DuckDB's JSON text (render's Encoded), for the JSON
    report alone: the rest of the document is the same. ``items``: the profile's health, when
    the caller has it already (a session shows the same list)."""
    con = profile.con
    if items is None:
        items = health(profile)
    ensure_views(con, rules, ranks_apart(items, profile))
    got = _side_by_side(con, {
        "ranks": _query(RANKS_SQL), "steps": _query(STEPS_SQL), "stages": _query(STAGES_SQL),
        "step_account": _query(ACCOUNT_SQL), "step_account_check": _query(CHECK_SQL),
        "categories": _query(CATEGORIES_SQL), "comm": _query(COMM_SQL), "findings": _findings,
        "stage_detection": lambda cur: _detection(cur, windows, encoded, traces_lost(items)),
        "memory_peaks": _query(MEMORY_PEAKS_SQL), "memory_windows": lambda cur: _memory_forwards(cur, encoded),
        "memory_operators": _query(MEMORY_OPERATORS_SQL), "cluster_ranks": _query(CLUSTER_RANKS_SQL),
        "spread": _query(SPREAD_SQL), "comm_ops": _query(COMM_OPS_SQL), "bandwidth": _query(BANDWIDTH_SQL),
        "links": _query(LINKS_SQL), "waits": _query(WAITS_SQL), "step_trace": _query(CLUSTER_STEPS_SQL),
    })
    return {
        "schema_version": SCHEMA_VERSION,
        "profile": {"path": path_text(profile.path), "format": _format(profile.formats),
                    "ranks": list(profile.ranks)},
        # False when a file that exists could not be loaded whole: the figures below lack what is missing
        "complete": not failed(items),
        "health": [asdict(i) for i in items],
        **{k: got[k] for k in ("ranks", "steps", "stages", "step_account", "step_account_check", "categories",
                               "comm", "findings", "stage_detection")},
        "memory": {"peaks": got["memory_peaks"], "windows": got["memory_windows"], "operators": got["memory_operators"]},
        "cluster": {
            "ranks": got["cluster_ranks"], "spread": got["spread"], "comm_ops": got["comm_ops"],
            "bandwidth": got["bandwidth"], "links": got["links"], "waits": got["waits"],
            # msprof-analyze's cluster_step_trace_time.csv, as it wrote it
            "step_trace": got["step_trace"],
        },
    }
