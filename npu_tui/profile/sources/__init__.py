"""One loader module per source format. Each module defines:

- ``KIND``: the name used in ``load_log.kind`` and in ``RankContext.files``;
- ``FILE_NAMES``: names the profiler gives the file (a fallback when the content is unrecognisable,
  so an empty or broken kernel_details.csv is still reported rather than silently ignored), with
  the optional ``NAME_PREFIXES`` (tuple) and ``NAME_PATTERN`` (compiled regex, searched in the name);
- ``sniff(head: bytes) -> bool``: recognise the file by its first bytes (decompressed);
- ``load(con, path, ctx) -> LoadResult``: write canonical rows for ``ctx.rank``; raise
  ``SourceError`` with a one-line reason when the file cannot be used.

``SOURCE_ORDER`` is the order loaders run within a rank: better sources of kernels first, and the
db export last: torch_npu's export_type=[text, db] writes one run twice, so the db only fills the
tables the text files left empty for the rank.

``CLUSTER_ORDER``: loaders of a whole job's files (msprof-analyze's ``cluster_analysis_output/``),
the same interface with ``ctx.rank`` None; their rows carry the ranks they are about.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import List

SOURCE_ORDER = (
    "kernel_details",
    "op_summary",
    "trace_view",
    "msprof_timeline",
    "kineto",
    "step_trace_time",
    "communication",
    "communication_matrix",
    "op_statistic",
    "operator_details",
    "memory_record",
    "operator_memory",
    "npu_module_mem",
    "static_op_mem",
    "profiler_metadata",
    "sqlite_export",
)

# The kinds whose files hold the device's tasks, the kernels table.
KERNEL_SOURCES = ("kernel_details", "op_summary", "trace_view", "msprof_timeline", "kineto", "sqlite_export")

CLUSTER_ORDER = (
    "cluster_step_trace",
    "cluster_communication",
    "cluster_communication_matrix",
    "cluster_db",
)


def source_modules() -> List[ModuleType]:
    absent = set(missing_sources())
    return [importlib.import_module(f"{__name__}.{n}") for n in SOURCE_ORDER if n not in absent]


def cluster_modules() -> List[ModuleType]:
    absent = set(missing_sources())
    return [importlib.import_module(f"{__name__}.{n}") for n in CLUSTER_ORDER if n not in absent]


def missing_sources() -> List[str]:
    """Names in SOURCE_ORDER or CLUSTER_ORDER with no module (a packaging slip); a test keeps this empty."""
    return [n for n in SOURCE_ORDER + CLUSTER_ORDER if importlib.util.find_spec(f"{__name__}.{n}") is None]
