"""The analysis views: one ``sql/NAME.sql`` file per view, its first line the description."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import resources
from typing import Dict, Mapping, Optional, Tuple

import duckdb

from .rules import Rules, install_rule_tables

# Creation order: each view only reads tables and the views before it.
VIEW_ORDER = (
    "kernel_classes",
    "kernel_categories",
    "stage_markers",
    "signature_scan",
    "stage_signature",
    "stage_windows_raw",
    "kernel_stages",
    "stage_windows",
    "stage_summary",
    "launches",
    "memory_series",
    "memory_windows",
    "memory_peaks",
    "memory_allocations",
    "memory_operators",
    "stage_categories",
    "top_operators",
    "operator_types",
    "operator_shapes",
    "operator_totals",
    "kernel_instances",
    "kernel_names",
    "step_windows",
    "busy_segments",
    "lane_segments",
    "step_breakdown_kernels",
    "step_breakdown_lanes",
    "step_breakdown",
    "step_flags",
    "step_pieces",
    "step_account",
    "step_account_mean",
    "comm_exposure",
    "step_account_check",
    "idle_gaps",
    "rank_summary",
    "rank_waits",
    "rank_spread",
    "comm_links",
    "rank_times",
    "rank_operators",
    "step_times",
    "stage_metrics",
    "finding_ranks",
    "findings",
    "finding_operators",
    "comm_op_times",
    "link_bandwidth",
    "timeline_spans",
)

# Views that take arguments (DuckDB table macros), created after the views they read: name ->
# parameters. ``sql/NAME.sql`` is the body, its first line the description, as for a view.
TABLE_MACROS: Dict[str, Tuple[str, ...]] = {
    "range_kernels": ("r", "t0", "t1"),
    "range_operators": ("r", "t0", "t1"),
    "timeline_range": ("r", "t0", "t1"),
}


# Tables the analysis makes from what it is given, not from the profile: listed with the rules'.
INPUT_TABLES = ("ranks_apart",)

# Steps of other views, listed in the schema browser apart from the ones to read.
BUILDING_BLOCKS = ("kernel_classes", "signature_scan", "stage_signature", "stage_windows_raw", "launches",
                   "busy_segments", "lane_segments", "step_breakdown_kernels", "step_breakdown_lanes", "step_pieces")

# Stored as tables when installed (same name, same SQL): everything downstream reads them, and as
# views DuckDB would inline and re-run the whole stage detection (or the sweeps over every kernel
# and lane) in every query that uses them. The report's own sources are stored too, so reopening a
# cached profile reads them instead of aggregating every kernel again. refresh_stages() recomputes
# them, in VIEW_ORDER, after stage overrides change.
MATERIALIZED = ("kernel_classes", "stage_markers", "signature_scan", "stage_signature", "kernel_stages", "stage_windows",
                "stage_summary", "memory_windows", "memory_peaks", "memory_operators", "stage_categories",
                "top_operators", "step_windows", "busy_segments", "lane_segments", "comm_exposure",
                "step_breakdown", "step_flags", "step_pieces", "step_account", "step_account_check", "idle_gaps",
                "rank_summary", "rank_waits", "rank_spread", "comm_links", "finding_ranks", "findings",
                "comm_op_times")


def _read(name: str) -> str:
    return resources.files(__package__).joinpath("sql").joinpath(f"{name}.sql").read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def view_sql(name: str) -> str:
    """The SQL behind a view, as shipped (comments included). KeyError for an unknown name."""
    if name not in VIEW_ORDER and name not in TABLE_MACROS:
        raise KeyError(name)
    return _read(name)


# The macros the views call (op_name, type_key), created before them.
MACROS_SQL = _read("macros")


def _description(name: str) -> str:
    return view_sql(name).splitlines()[0].lstrip("- ").strip()


VIEW_DESCRIPTIONS: Dict[str, str] = {name: _description(name) for name in (*VIEW_ORDER, *TABLE_MACROS)}


def _create(con: duckdb.DuckDBPyConnection, name: str) -> None:
    kind, other = ("TABLE", "VIEW") if name in MATERIALIZED else ("VIEW", "TABLE")
    # A cached profile analysed by a version that stored this view the other way holds the other
    # kind, which CREATE OR REPLACE refuses to replace; DROP of the wrong kind raises when it is
    # already the right one.
    try:
        con.execute(f"DROP {other} IF EXISTS {name}")
    except duckdb.CatalogException:
        pass
    con.execute(f"CREATE OR REPLACE {kind} {name} AS\n{view_sql(name)}")


def _fingerprint(rules: Rules, apart: Mapping[int, str]) -> str:
    """The rules, the views' SQL, which of them are stored and the ranks left out of the
    comparisons: a cached profile's analysis from another version of any of these must be rebuilt."""
    h = hashlib.sha256(rules.fingerprint.encode())
    h.update(repr(sorted(apart.items())).encode())
    h.update(" ".join(MATERIALIZED).encode())
    h.update(MACROS_SQL.encode())
    for name in (*VIEW_ORDER, *TABLE_MACROS):
        h.update(view_sql(name).encode())
    return h.hexdigest()


def install_views(con: duckdb.DuckDBPyConnection, rules: Rules, apart: Optional[Mapping[int, str]] = None) -> None:
    """(Re)create the rules tables and every analysis view; safe to call again (e.g. new rules).
    ``apart``: the ranks the comparisons across ranks leave out, and why (health.ranks_apart: a
    file not loaded whole, another run's), whose figures would pass for a fast or a slow rank."""
    apart = dict(apart or {})
    # First: an install stopped part-way (Ctrl-C, other rules) must read as none, not as the last.
    con.execute("DROP TABLE IF EXISTS rules_installed")
    install_rule_tables(con, rules)
    con.execute("CREATE OR REPLACE TABLE ranks_apart (rank INTEGER, why VARCHAR)")
    if apart:
        con.executemany("INSERT INTO ranks_apart VALUES (?, ?)", sorted(apart.items()))
    con.execute(MACROS_SQL)
    for name in VIEW_ORDER:
        _create(con, name)
    for name, params in TABLE_MACROS.items():
        con.execute(f"CREATE OR REPLACE MACRO {name}({', '.join(params)}) AS TABLE\n{view_sql(name)}")
    con.execute("CREATE OR REPLACE TABLE rules_installed AS SELECT ? AS fingerprint",
                [_fingerprint(rules, apart)])


def views_installed(con: duckdb.DuckDBPyConnection, rules: Rules, apart: Optional[Mapping[int, str]] = None) -> bool:
    """Whether ``con`` holds the analysis of these rules, by this version, with these ranks apart
    (a reopened cache does)."""
    try:
        installed = con.execute("SELECT fingerprint FROM rules_installed").fetchone()
    except duckdb.CatalogException:
        return False
    return installed is not None and installed[0] == _fingerprint(rules, apart or {})


def ensure_views(con: duckdb.DuckDBPyConnection, rules: Rules, apart: Optional[Mapping[int, str]] = None) -> None:
    """install_views unless this analysis is installed already (stage detection is the costly part)."""
    if not views_installed(con, rules, apart):
        install_views(con, rules, apart)


def refresh_stages(con: duckdb.DuckDBPyConnection) -> None:
    """Recompute the stored stage assignment (after stage_overrides changed)."""
    for name in VIEW_ORDER:
        if name in MATERIALIZED:
            _create(con, name)
