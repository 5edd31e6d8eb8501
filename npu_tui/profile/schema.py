"""The canonical DuckDB schema every loader writes into (design.md §4)."""

from __future__ import annotations

import os
import tempfile
from importlib import resources
from pathlib import Path
from typing import Optional

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
    "comm_groups",
    "op_statistic",
    "operators",
    "memory_record",
    "operator_memory",
    "npu_module_mem",
    "device_memory",
    "static_op_mem",
    "cluster_step_trace",
    "cluster_comm_ops",
    "cluster_comm_matrix",
    "load_log",
    "db_tables",
)


# One line each, shown by the SQL console's schema browser.
TABLE_DESCRIPTIONS = {
    "ranks": "one row per rank: device id, folder, source format, versions, profiler level, the job's world size",
    "kernels": "device tasks (kernels, comm ops) with type, core, start/duration in ns, shapes",
    "overlap_lanes": "the profiler's overlap analysis: Computing / Communication / Not Overlapped / Free",
    "host_events": "host-side ranges: cpu ops, python functions, module and step ranges, markers",
    "flows": "host launch -> device task links (host and device timestamps in ns)",
    "step_trace": "per-step breakdown in us exactly as the profiler reported it",
    "comm_ops": "collective / p2p communication ops with elapse, transit, wait, sync, idle (ms)",
    "comm_bandwidth": "per comm op and transport: transit size (MB), time (ms), bandwidth (GB/s)",
    "comm_matrix": "per comm op and src->dst link (numbered within its group; src_global / dst_global the job's ranks): transport, size, time, bandwidth",
    "comm_groups": "profiler_metadata.json's communication groups: each group's ranks, numbered within it as the comm files do",
    "op_statistic": "the profiler's own per-op-type totals (us)",
    "operators": "operator_details.csv: host operators with call stacks and device time (us)",
    "memory_record": "device memory over time per component (PTA, GE, APP): bytes allocated, reserved, active",
    "operator_memory": "operator_memory.csv or Kineto [memory] events: each allocation an operator made: bytes, allocated / released (ns), held for",
    "npu_module_mem": "npu_module_mem.csv: memory reserved by each device software module over time (bytes)",
    "static_op_mem": "static_op_mem.csv (graph mode): each operator's compile-time memory in a static graph, between node indexes",
    "device_memory": "each device's memory capacity where the profile states it (Kineto's deviceProperties), MB",
    "cluster_step_trace": "msprof-analyze's cluster_step_trace_time.csv (or cluster_analysis.db): each rank's and stage group's step breakdown (us)",
    "cluster_comm_ops": "msprof-analyze's cluster_communication.json (or cluster_analysis.db): every rank's time in each comm op (ms)",
    "cluster_comm_matrix": "msprof-analyze's cluster_communication_matrix.json (or cluster_analysis.db): per op, each src->dst link",
    "load_log": "what each source file gave: rows, skipped rows, seconds, and why",
    "db_tables": "the tables each SQLite export held, of those npu-tui reads",
}


def _sql(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


# No extension downloads (servers are often offline). ASOF joins as such: DuckDB runs one as a nested
# loop where it expects fewer than 64 rows on the left, and before 2.0 it expects none of a CTE (the
# launches of an 80k-kernel Kineto trace: 32 s instead of 1.4 s).
CONFIG = {"autoinstall_known_extensions": False, "asof_loop_join_threshold": 0}


def nameable(path: Path) -> bool:
    """Whether DuckDB can open a file under ``path``: it takes UTF-8 names only (a name of other
    bytes, which Python holds as surrogates, fails deep inside it with a bad_cast)."""
    try:
        str(path).encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def scratch_dir() -> Optional[str]:
    """Where to put the files DuckDB or SQLite read (copies, pieces of a trace): None for the
    user's temp folder, /tmp where that one's name is not UTF-8 (a TMPDIR named in GBK), which
    neither can open."""
    try:
        return None if nameable(Path(tempfile.gettempdir())) else "/tmp"
    except FileNotFoundError:
        return None


def connect(database: str = ":memory:") -> duckdb.DuckDBPyConnection:
    """A DuckDB connection that never reaches the network and has the canonical schema."""
    # DuckDB spills to ./.tmp by default: that would write into a profile folder npu-tui was
    # started from. Spill under the user's temp dir instead. No progress bar on stderr.
    try:
        tmp = scratch_dir() or tempfile.gettempdir()
    except FileNotFoundError:  # none can take a file now (a full disk): DuckDB spills only if it must
        tmp = os.environ.get("TMPDIR") or "/tmp"
    spill = Path(tmp) / "npu-tui-spill"
    con = duckdb.connect(database, config={**CONFIG, "temp_directory": str(spill)})
    con.execute("SET enable_progress_bar = false")
    create_schema(con)
    return con


BEFORE_2 = int(duckdb.__version__.split(".")[0]) < 2
# DuckDB before 2.0 casts text to a wide DECIMAL slowly: its loads read times through the macros of
# macros_before_2.sql, and a trace's ts and dur as text (chrome_trace).
WIDE_DECIMALS_SLOW = BEFORE_2
# and reads a line of newline-delimited JSON up to its first value's end, passing over the rest of
# the line (2.0 fails the line): chrome_trace's salvage looks for such lines itself there.
LINE_TAIL_PASSED_OVER = BEFORE_2


def create_schema(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(_sql("macros.sql"))
    if WIDE_DECIMALS_SLOW:
        con.execute(_sql("macros_before_2.sql"))
    con.execute(_sql("schema.sql"))
