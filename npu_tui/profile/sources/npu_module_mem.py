"""npu_module_mem.csv: memory reserved by each of the device's software modules (SLOG, APP, AICPU,
...) over time, MB (KB in msprof's own, which MindSpore copies). Shares Component, Timestamp(us) and
Total Reserved with memory_record.csv, which alone has Total Allocated.
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
REQUIRED = {"Component", "Timestamp(us)"}
# in MB, or in KB as msprof writes its own (and MindSpore copies it)
RESERVED = {"Total Reserved(MB)", "Total Reserved(KB)"}
NOT_IT = {"Total Allocated(MB)", "Total Allocated(KB)"}  # memory_record.csv's

INSERT = """
INSERT INTO npu_module_mem
SELECT $rank, clean_text({device}), k_component, ts_ns, coalesce(mb_bytes(num({reserved})), kb_bytes(num({reserved_kb})))
FROM (SELECT *, clean_text({component}) AS k_component, ts_to_ns({ts}) AS ts_ns FROM {table})
WHERE k_component IS NOT NULL AND ts_ns IS NOT NULL
  AND NOT (text_not_amount({reserved}) OR text_not_amount({reserved_kb}))  -- skipped and counted, not NULL
"""


def _is_it(columns) -> bool:
    cols = set(columns)
    return REQUIRED <= cols and bool(RESERVED & cols) and not NOT_IT & cols


def sniff(head: bytes) -> bool:
    return _is_it(csv_header(head))


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    return load_rows(con, path, ctx, STAGE, INSERT, {
        "component": "Component", "ts": "Timestamp(us)", "reserved": "Total Reserved(MB)",
        "reserved_kb": "Total Reserved(KB)", "device": "Device",
    }, _is_it, "not an npu_module_mem table: no Component / Timestamp(us) / Total Reserved(MB or KB)",
        "header only, no module memory records")
