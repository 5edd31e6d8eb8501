"""The canonical DuckDB schema every loader writes into (design.md §4)."""

from __future__ import annotations

from importlib import resources

import duckdb

CANONICAL_TABLES = (
    "ranks",
    "kernels",
    "overlap_lanes",
    "host_events",
    "flows",
    "step_trace",
    "comm_ops",
    "comm_bandwidth",
    "comm_matrix",
    "op_statistic",
    "operators",
    "load_log",
)


def _sql(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def connect(database: str = ":memory:") -> duckdb.DuckDBPyConnection:
    """A DuckDB connection that never reaches the network and has the canonical schema."""
    con = duckdb.connect(database, config={"autoinstall_known_extensions": False})
    create_schema(con)
    return con


def create_schema(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(_sql("macros.sql"))
    con.execute(_sql("schema.sql"))
