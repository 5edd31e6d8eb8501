"""npu_module_mem.csv: memory reserved by each of the device's software modules (SLOG, APP, AICPU,
...) over time, MB. Shares Component, Timestamp(us) and Total Reserved(MB) with memory_record.csv,
which alone has Total Allocated(MB).
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from .base import LoadResult, RankContext, csv_header
from .csvfile import load_rows

KIND = "npu_module_mem"
FILE_NAMES = ("npu_module_mem.csv",)
NAME_PREFIXES = ("npu_module_mem_",)
STAGE = "stg_npu_module_mem"
REQUIRED = {"Component", "Timestamp(us)", "Total Reserved(MB)"}
NOT_IT = "Total Allocated(MB)"  # memory_record.csv's

INSERT = """
INSERT INTO npu_module_mem
SELECT $rank, clean_text({device}), k_component, ts_ns, mb_bytes(num({reserved}))
FROM (SELECT *, clean_text({component}) AS k_component, ts_to_ns({ts}) AS ts_ns FROM {table})
WHERE k_component IS NOT NULL AND ts_ns IS NOT NULL
"""


def sniff(head: bytes) -> bool:
    cols = set(csv_header(head))
    return REQUIRED <= cols and NOT_IT not in cols


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    return load_rows(con, path, ctx, STAGE, INSERT, {
        "component": "Component", "ts": "Timestamp(us)", "reserved": "Total Reserved(MB)", "device": "Device",
    }, lambda columns: REQUIRED <= set(columns) and NOT_IT not in columns,
        "not an npu_module_mem table: no Component / Timestamp(us) / Total Reserved(MB)",
        "header only, no module memory records")
