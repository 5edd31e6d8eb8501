"""SQLite exports: ``ascend_pytorch_profiler[_N].db`` / ``msprof_*.db`` (device tasks, host APIs,
overlap lanes, steps, memory; every string behind a STRING_IDS id, every time in integer ns) and
``analysis.db`` (step trace and communication analysis).

DuckDB's sqlite extension is a download, which Ascend servers often cannot make, so the file is
read with Python's sqlite3, opened read-only and immutable (no -wal/-shm/journal file is created
beside it). A file with a write-ahead log beside it (its writer still open, or killed before a
checkpoint) holds committed rows only in that log; one with a rollback journal beside it holds
uncommitted ones, which the journal undoes: the two are copied outside the profile folder and the
copy is read with its log, or rolled back. Needed tables are streamed through a temporary CSV outside the profile folder into
DuckDB staging tables as text, and mapped to the canonical tables by SQL.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import sqlite3
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

import duckdb

from ...text import gap_words
from ..errors import SourceError
from ..schema import scratch_dir
from . import profiler_metadata
from .base import MERGED_AS_ONE, LoadResult, RankContext
from .csvfile import col

KIND = "sqlite_export"
# The dbs of the analysis alone (steps, communication), beside the profiler's: torch_npu's, and
# msprof's, which MindSpore copies into ASCEND_PROFILER_OUTPUT too.
ANALYSIS_DBS = ("analysis.db", "communication_analyzer.db")
# By name only these: a prefix would also take the -wal/-shm files sqlite leaves beside a db.
FILE_NAMES = (*ANALYSIS_DBS, "ascend_pytorch_profiler.db")
# The rank's trace data it gives where no earlier file of the rank did (see loader._deferrable).
TRACE_TABLES = ("overlap_lanes", "host_events", "flows")
# The per-rank names (ascend_pytorch_profiler_3.db, msprof_20250101.db), whole names only.
NAME_PATTERN = re.compile(r"^(ascend_pytorch_profiler_\d+|ascend_mindspore_profiler_\d+|msprof_\d+)\.db$")
MAGIC = b"SQLite format 3\x00"
BATCH = 50_000
STAGE_PREFIX = "stg_db_"
# Tables that hold, or point into, the device's tasks.
DEVICE_TABLES = {"TASK", "COMPUTE_TASK_INFO", "COMMUNICATION_OP"}

# Tables read from the file, when present.
TABLES = (
    "STRING_IDS", "TASK", "COMPUTE_TASK_INFO", "COMMUNICATION_OP", "OVERLAP_ANALYSIS",
    "PYTORCH_API", "CANN_API", "CONNECTION_IDS", "STEP_TIME", "RANK_DEVICE_MAP", "META_DATA",
    "ENUM_API_TYPE", "StepTraceTime", "CommAnalyzerTime", "CommAnalyzerBandwidth",
    "CommAnalyzerMatrix", "MEMORY_RECORD", "NPU_MEM", "OP_MEMORY", "NPU_MODULE_MEM", "ENUM_MODULE",
)

# Tables a viewer adds to the file it opens, not the profiler: MindStudio Insight writes its overlap
# analysis into the db (its status_info says OVERLAP_ANALYSIS_STATUS FINISH; the real level1 export
# holds it for the rank opened there only). Read where present; one without is not said to lack it
# (health.MISSING_TABLES).
VIEWERS_TABLES = {"OVERLAP_ANALYSIS"}

READ_STAGE = """
CREATE OR REPLACE TEMP TABLE {table} AS
SELECT * FROM read_csv($path, header = false, auto_detect = false, columns = $columns,
                       delim = ',', quote = '"', escape = '"', new_line = '\\n')
"""

STEPS = """
CREATE OR REPLACE TEMP TABLE stg_db_steps AS
SELECT * FROM (SELECT int32_or_null(id) AS step, int_or_null(startNs) AS start_ns, int_or_null(endNs) AS end_ns
               FROM stg_db_STEP_TIME)
WHERE step IS NOT NULL AND start_ns >= 0 AND end_ns >= start_ns
"""
NO_STEPS = "CREATE OR REPLACE TEMP TABLE stg_db_steps (step BIGINT, start_ns BIGINT, end_ns BIGINT)"
# STEP_TIME is the host's ProfilerStep range: a task belongs to the step that launched it (its
# CANN_API call, by connectionId), as torch_npu's text export puts it, not to the step its device
# time falls in (the device runs behind the host: a step without a sync at its end ends before its
# last tasks run). Without its launch, by its own start.
LAUNCHES = """
CREATE OR REPLACE TEMP TABLE stg_db_launch AS
SELECT CAST({connection} AS VARCHAR) AS connection_id, min(int_or_null(startNs)) AS launch_ns
FROM stg_db_CANN_API WHERE {connection} IS NOT NULL GROUP BY 1
"""
NO_LAUNCHES = "CREATE OR REPLACE TEMP TABLE stg_db_launch (connection_id VARCHAR, launch_ns BIGINT)"
# An export of several devices' tasks (msprof --type=db over a PROF folder of several devices; a
# db merged by hand) loads as one rank, the devices' figures added together: said.
DEVICES = "SELECT list(DISTINCT device_id ORDER BY device_id) FROM stg_db_device WHERE device_id IS NOT NULL"

# Compute tasks and communication ops as kernel rows, keyed by connectionId for the flows. A compute
# task whose TASK row is gone has no time: a row of stg_db_device that KERNELS skips, counted.
# Comm ops carry core HCCL, as the paired text export (kernel_details.csv) of the same version does.
COMPUTE_TASKS = """
CREATE OR REPLACE TEMP TABLE stg_db_device AS
SELECT CAST({connectionId} AS VARCHAR) AS connection_id, int32_or_null({deviceId}) AS device_id,
       s_name.value AS name, clean_text(s_type.value) AS type, clean_text(s_core.value) AS core,
       int_or_null(t.startNs) AS start_ns, int_or_null(t.endNs) - int_or_null(t.startNs) AS dur_ns,
       int_or_null({waitNs}) AS wait_ns, int32_or_null({block}) AS block_dim,
       int_or_null({streamId}) AS stream_id, int_or_null({taskId}) AS task_id,
       clean_text(s_ish.value) AS input_shapes, clean_text(s_idt.value) AS input_dtypes,
       clean_text(s_ifm.value) AS input_formats, clean_text(s_osh.value) AS output_shapes,
       clean_text(s_odt.value) AS output_dtypes
FROM stg_db_COMPUTE_TASK_INFO c
LEFT JOIN stg_db_TASK t ON t.globalTaskId = c.globalTaskId
LEFT JOIN stg_db_STRING_IDS s_name ON s_name.id = c.name
LEFT JOIN stg_db_STRING_IDS s_type ON s_type.id = {opType}
LEFT JOIN stg_db_STRING_IDS s_core ON s_core.id = {taskType}
LEFT JOIN stg_db_STRING_IDS s_ish ON s_ish.id = {inputShapes}
LEFT JOIN stg_db_STRING_IDS s_idt ON s_idt.id = {inputDataTypes}
LEFT JOIN stg_db_STRING_IDS s_ifm ON s_ifm.id = {inputFormats}
LEFT JOIN stg_db_STRING_IDS s_osh ON s_osh.id = {outputShapes}
LEFT JOIN stg_db_STRING_IDS s_odt ON s_odt.id = {outputDataTypes}
"""
# Columns of COMPUTE_TASK_INFO (c) and TASK (t) that some versions lack.
COMPUTE_OPTIONAL = {"c": ("waitNs", "opType", "taskType", "inputShapes", "inputDataTypes",
                          "inputFormats", "outputShapes", "outputDataTypes"),
                    "t": ("deviceId", "streamId", "taskId", "connectionId")}
# The block count: blockNum in newer msprof, where blockDim is another figure (an Ascend 950's
# threads per block, as a STRING_IDS id); blockDim before.
BLOCK_COLUMNS = ("blockNum", "blockDim")
NO_COMPUTE = """
CREATE OR REPLACE TEMP TABLE stg_db_device (
    connection_id VARCHAR, device_id BIGINT, name VARCHAR, type VARCHAR, core VARCHAR,
    start_ns BIGINT, dur_ns BIGINT, wait_ns BIGINT, block_dim BIGINT, stream_id BIGINT,
    task_id BIGINT, input_shapes VARCHAR, input_dtypes VARCHAR, input_formats VARCHAR,
    output_shapes VARCHAR, output_dtypes VARCHAR)
"""
# How far (ns) the db's device tasks start from the kernels the rank's other files gave, where
# the two spans do not overlap: another run's export, not this one's (NULL: the same run).
APART = """
WITH d AS (SELECT min(start_ns) AS lo, max(start_ns + dur_ns) AS hi FROM stg_db_device),
     k AS (SELECT min(start_ns) AS lo, max(start_ns + dur_ns) AS hi FROM kernels WHERE rank = ?)
SELECT CASE WHEN d.hi < k.lo OR d.lo > k.hi THEN abs(d.lo - k.lo) END FROM d, k
"""
# Whether TASK holds compute kernels, whose names are in COMPUTE_TASK_INFO: task types KERNEL_AICORE,
# KERNEL_AIVEC, MIX_AIV... (older CANN: AI_CORE, AI_CPU, which newer ones also give other tasks).
TASK_KERNELS = """
SELECT count(*) > 0 FROM stg_db_TASK t JOIN stg_db_STRING_IDS s ON s.id = t.taskType
WHERE regexp_matches(s.value, '^(KERNEL_|MIX_|AI_CORE$|AI_CPU$)')
"""
# Whether the file holds communication tasks, whose collective ops are COMMUNICATION_OP's rows.
COMM_TASKS = "SELECT EXISTS (SELECT 1 FROM COMMUNICATION_TASK_INFO)"
COMM_LOST = ("tables {}: COMMUNICATION_OP; its communication ops (their tasks are in COMMUNICATION_TASK_INFO) "
             "were not loaded")
COMM_OPS = """
INSERT INTO stg_db_device
SELECT {connection}, $device_id, s_name.value, clean_text(s_type.value), 'HCCL',
       int_or_null(o.startNs), int_or_null(o.endNs) - int_or_null(o.startNs), int_or_null({wait}),
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM stg_db_COMMUNICATION_OP o
LEFT JOIN stg_db_STRING_IDS s_name ON s_name.id = o.opName
LEFT JOIN stg_db_STRING_IDS s_type ON s_type.id = {type}
"""
KERNELS = """
INSERT INTO kernels (rank, device_id, step, name, type, core, start_ns, dur_ns, wait_ns, block_dim,
                     stream_id, task_id, input_shapes, input_dtypes, input_formats,
                     output_shapes, output_dtypes, source)
SELECT $rank, COALESCE(d.device_id, $device_id),
       COALESCE(CASE WHEN l.launch_ns < sl.end_ns THEN sl.step END, CASE WHEN d.start_ns < sd.end_ns THEN sd.step END),
       d.name, COALESCE(d.type, type_from_name(d.name)), d.core, d.start_ns, d.dur_ns, d.wait_ns,
       d.block_dim, d.stream_id, d.task_id, d.input_shapes, d.input_dtypes, d.input_formats,
       d.output_shapes, d.output_dtypes, 'db'
FROM stg_db_device d LEFT JOIN stg_db_launch l USING (connection_id)
-- (steps do not overlap: the one starting last at or before a moment is the only one that may hold it)
ASOF LEFT JOIN stg_db_steps sl ON l.launch_ns >= sl.start_ns
ASOF LEFT JOIN stg_db_steps sd ON d.start_ns >= sd.start_ns
WHERE d.name IS NOT NULL AND d.start_ns >= 0 AND d.dur_ns >= 0
"""

# OVERLAP_ANALYSIS.type codes; checked on the samples: the per-type sums equal analysis.db's
# StepTraceTime computing / communication / communication_not_overlapped / free.
OVERLAP = """
INSERT INTO overlap_lanes (rank, lane, start_ns, dur_ns)
SELECT $rank, lane, start_ns, end_ns - start_ns
FROM (SELECT CASE int_or_null(type) WHEN 0 THEN 'Computing' WHEN 1 THEN 'Communication'
                 WHEN 2 THEN 'Communication(Not Overlapped)' WHEN 3 THEN 'Free' END AS lane,
             int_or_null(startNs) AS start_ns, int_or_null(endNs) AS end_ns
      FROM stg_db_OVERLAP_ANALYSIS)
WHERE lane IS NOT NULL AND start_ns >= 0 AND end_ns >= start_ns
"""

# globalTid is (pid << 32) | tid. The categories are named as trace_view.json names them. A call
# whose name is in no STRING_IDS row is skipped, counted, as a kernel is.
PYTORCH_API = """
INSERT INTO host_events (rank, name, cat, start_ns, dur_ns, tid, args)
SELECT $rank, name, cat, start_ns, end_ns - start_ns, tid, args
FROM (SELECT s_name.value AS name,
             CASE e.name WHEN 'op' THEN 'cpu_op' WHEN 'trace' THEN 'python_function'
                         WHEN 'queue' THEN lower(split_part(s_name.value, '@', 1))
                         ELSE e.name END AS cat,
             int_or_null(p.startNs) AS start_ns, int_or_null(p.endNs) AS end_ns,
             CAST(int_or_null(p.globalTid) % 4294967296 AS VARCHAR) AS tid,
             CASE WHEN COALESCE({seq}, {fwd}, s_ish.value, s_idt.value) IS NOT NULL
                  THEN json_object('Sequence number', int_or_null({seq}),
                                   'Fwd thread id', int_or_null({fwd}),
                                   'Input Dims', s_ish.value, 'Input type', s_idt.value) END AS args
      FROM stg_db_PYTORCH_API p
      LEFT JOIN stg_db_STRING_IDS s_name ON s_name.id = p.name
      LEFT JOIN stg_db_ENUM_API_TYPE e ON e.id = p.type
      LEFT JOIN stg_db_STRING_IDS s_ish ON s_ish.id = {shapes}
      LEFT JOIN stg_db_STRING_IDS s_idt ON s_idt.id = {dtypes})
WHERE name IS NOT NULL AND start_ns >= 0 AND end_ns >= start_ns
"""
CANN_API = """
INSERT INTO host_events (rank, name, cat, start_ns, dur_ns, tid, args)
SELECT $rank, name, 'CANN', start_ns, end_ns - start_ns, tid, args
FROM (SELECT s_name.value AS name, int_or_null(c.startNs) AS start_ns, int_or_null(c.endNs) AS end_ns,
             CAST(int_or_null(c.globalTid) % 4294967296 AS VARCHAR) AS tid,
             json_object('level', e.name, 'connection_id', int_or_null({connection})) AS args
      FROM stg_db_CANN_API c
      LEFT JOIN stg_db_STRING_IDS s_name ON s_name.id = c.name
      LEFT JOIN stg_db_ENUM_API_TYPE e ON e.id = c.type)
WHERE name IS NOT NULL AND start_ns >= 0 AND end_ns >= start_ns
"""
NO_API_TYPES = "CREATE OR REPLACE TEMP TABLE stg_db_ENUM_API_TYPE (id VARCHAR, name VARCHAR)"

# A torch op's connectionId maps (CONNECTION_IDS) to the connectionIds of the tasks it launched.
FLOWS = """
INSERT INTO flows (rank, flow_id, cat, host_ts_ns, device_ts_ns)
SELECT $rank, ci.connectionId, 'async_npu', int_or_null(p.startNs), d.start_ns
FROM stg_db_PYTORCH_API p
JOIN stg_db_CONNECTION_IDS ci ON ci.id = p.connectionId
JOIN stg_db_device d ON d.connection_id = ci.connectionId
WHERE d.name IS NOT NULL AND d.start_ns >= 0 AND d.dur_ns >= 0
"""

# The values are µs, not ms: in the samples computing / communication_not_overlapped / free equal
# the OVERLAP_ANALYSIS lane sums in µs, and stage fits inside the STEP_TIME window only as µs.
STEP_TRACE = """
INSERT INTO step_trace (rank, device_id, step, computing_us, comm_not_overlapped_us, overlapped_us,
                        comm_us, free_us, stage_us, bubble_us, comm_not_overlapped_excl_recv_us,
                        preparing_us, source)
SELECT $rank, $device_id, int_or_null(regexp_extract(step, '[0-9]+$')),
       num(computing), num(communication_not_overlapped), num({overlapped}), num({communication}),
       num(free), num(stage), num({bubble}), num({excl_recv}), num({preparing}), $source
FROM stg_db_StepTraceTime
WHERE num(computing) IS NOT NULL
  -- a figure given that is no number ("12us") skips its row, counted, as step_trace_time.csv's does
  AND NOT (text_not_number(communication_not_overlapped) OR text_not_number(free) OR text_not_number(stage)
           OR text_not_number({overlapped}) OR text_not_number({communication}) OR text_not_number({bubble})
           OR text_not_number({excl_recv}) OR text_not_number({preparing}))
"""
COMM_TIME = """
INSERT INTO comm_ops (rank, step, kind, op_name, group_name, start_us, elapse_ms, transit_ms, wait_ms,
                      sync_ms, idle_ms)
SELECT $rank, int_or_null(regexp_extract({step}, '[0-9]+$')), clean_text({kind}), hccl_op_name,
       group_name, us_decimal(start_timestamp), num(elapse_time), num(transit_time),
       num(wait_time), num(synchronization_time), num(idle_time)
FROM stg_db_CommAnalyzerTime WHERE {valid}
"""
# One row per op and transport; the file repeats it for every packet-size bucket.
COMM_BANDWIDTH = """
INSERT INTO comm_bandwidth (rank, step, kind, op_name, transport, transit_size_mb, transit_time_ms,
                            bandwidth_gbps)
SELECT DISTINCT $rank, int_or_null(regexp_extract({step}, '[0-9]+$')), clean_text({kind}), hccl_op_name,
       transport_type, num(transit_size), num(transit_time), num(bandwidth)
FROM stg_db_CommAnalyzerBandwidth WHERE {valid}
"""
# op_key as communication_matrix.json writes it: "{hccl_op_name}@{group_name}".
COMM_MATRIX = """
INSERT INTO comm_matrix (rank, step, kind, op_key, op_name, src_rank, dst_rank, transport,
                         transit_size_mb, transit_time_ms, bandwidth_gbps)
SELECT $rank, int_or_null(regexp_extract({step}, '[0-9]+$')), clean_text({kind}),
       hccl_op_name || '@' || group_name, {op_name}, int_or_null(src_rank), int_or_null(dst_rank),
       transport_type, num(transit_size), num(transit_time), num(bandwidth)
FROM stg_db_CommAnalyzerMatrix WHERE {valid}
"""
# Rows kept: with an elapse time, and no time, size or bandwidth that cannot be one (NaN, inf,
# negative, huge); the others are skipped and counted, as in communication.json.
VALID_TIME = """amount(num(elapse_time)) IS NOT NULL AND NOT (text_not_amount(transit_time)
    OR text_not_amount(wait_time) OR text_not_amount(synchronization_time) OR text_not_amount(idle_time))"""
VALID_LINK = "NOT (text_not_amount(transit_size) OR text_not_amount(transit_time) OR text_not_amount(bandwidth))"
COUNT_INVALID = "SELECT count(*) FROM stg_db_{table} WHERE NOT ({valid})"

# profile_memory=True: what memory_record.csv, operator_memory.csv and npu_module_mem.csv hold, in
# bytes and ns where the text export writes MB, KB and us (checked on the real level1 export: the
# same rows per component, the same peaks). Columns through csvfile.col: a version without one
# gives NULL, not a failed file. A row without its name or time is skipped, and counted.
MEMORY = """
INSERT INTO memory_record (rank, device, component, ts_ns, allocated_bytes, reserved_bytes, active_bytes, stream_ptr)
SELECT $rank, 'NPU:' || int_or_null({device}), clean_text(s.value), int_or_null({ts}), int_or_null({allocated}),
       int_or_null({reserved}), int_or_null({active}), clean_text({stream})
FROM stg_db_MEMORY_RECORD m LEFT JOIN stg_db_STRING_IDS s ON s.id = {component}
WHERE clean_text(s.value) IS NOT NULL AND int_or_null({ts}) >= 0
"""
# The whole process's memory, which the text export writes as memory_record.csv's APP rows (its
# reserved: HBM, or DDR on chips without HBM). Its other rows (type 'device') are not the process's.
# A row with neither, or with a cell that is no byte count, is skipped: not 0 bytes.
APP_ROWS = "FROM stg_db_NPU_MEM m JOIN stg_db_STRING_IDS s ON s.id = {type} WHERE s.value = 'app'"
APP_MEMORY = """
INSERT INTO memory_record (rank, device, component, ts_ns, reserved_bytes)
SELECT $rank, device, 'APP', ts, reserved
FROM (SELECT 'NPU:' || int_or_null({device}) AS device, int_or_null({ts}) AS ts,
             TRY_CAST(CAST(COALESCE(int_or_null({hbm}), 0) AS HUGEINT) + COALESCE(int_or_null({ddr}), 0) AS BIGINT)
                 AS reserved,
             (clean_text({hbm}) IS NULL OR int_or_null({hbm}) >= 0) AND (clean_text({ddr}) IS NULL
                 OR int_or_null({ddr}) >= 0) AND COALESCE(clean_text({hbm}), clean_text({ddr})) IS NOT NULL AS given
      """ + APP_ROWS + """)
WHERE ts >= 0 AND given AND reserved IS NOT NULL
"""
# A size as the text loader takes it (operator_memory.py): its sign kept, none past 1e15 bytes.
OP_MEMORY = """
INSERT INTO operator_memory (rank, device, name, size_bytes, alloc_ns, release_ns, active_release_ns,
                             duration_ns, active_duration_ns, alloc_allocated_mb, alloc_reserved_mb,
                             alloc_active_mb, release_allocated_mb, release_reserved_mb, release_active_mb,
                             stream_ptr)
SELECT $rank, 'NPU:' || int_or_null({device}), clean_text(s.value), int_or_null({size}), int_or_null({alloc}),
       int_or_null({release}), int_or_null({active_release}), int_or_null({duration}),
       int_or_null({active_duration}), int_or_null({alloc_allocated}) / 1048576,
       int_or_null({alloc_reserved}) / 1048576, int_or_null({alloc_active}) / 1048576,
       int_or_null({release_allocated}) / 1048576, int_or_null({release_reserved}) / 1048576,
       int_or_null({release_active}) / 1048576, clean_text({stream})
FROM stg_db_OP_MEMORY o LEFT JOIN stg_db_STRING_IDS s ON s.id = {name}
WHERE clean_text(s.value) IS NOT NULL AND int_or_null({alloc}) >= 0 AND amount(abs(int_or_null({size}))) IS NOT NULL
"""
MODULE_MEMORY = """
INSERT INTO npu_module_mem (rank, device, component, ts_ns, reserved_bytes)
SELECT $rank, 'NPU:' || int_or_null({device}), clean_text(e.name), int_or_null({ts}), int_or_null({reserved})
FROM stg_db_NPU_MODULE_MEM m LEFT JOIN stg_db_ENUM_MODULE e ON e.id = {module}
WHERE clean_text(e.name) IS NOT NULL AND int_or_null({ts}) >= 0
"""
# Each: its table, the table its names are in, the canonical table it fills, the rows it reads
# (those not inserted are skipped), its columns by name, and those it cannot do without (a table
# without one, or without its names, is not loaded: its rows are skipped, and said).
ALL_ROWS = "FROM stg_db_{table}"
MEMORY_TABLES = (
    ("MEMORY_RECORD", "STRING_IDS", "memory_record", MEMORY, ALL_ROWS, {
        "component": "component", "ts": "timestamp", "allocated": "totalAllocated", "reserved": "totalReserved",
        "active": "totalActive", "stream": "streamPtr", "device": "deviceId"}, ("component", "timestamp")),
    ("NPU_MEM", "STRING_IDS", "memory_record", APP_MEMORY, APP_ROWS, {
        "type": "type", "ts": "timestampNs", "hbm": "hbm", "ddr": "ddr", "device": "deviceId"},
     ("type", "timestampNs", "hbm", "ddr")),
    ("OP_MEMORY", "STRING_IDS", "operator_memory", OP_MEMORY, ALL_ROWS, {
        "name": "name", "size": "size", "alloc": "allocationTime", "release": "releaseTime",
        "active_release": "activeReleaseTime", "duration": "duration", "active_duration": "activeDuration",
        "alloc_allocated": "allocationTotalAllocated", "alloc_reserved": "allocationTotalReserved",
        "alloc_active": "allocationTotalActive", "release_allocated": "releaseTotalAllocated",
        "release_reserved": "releaseTotalReserved", "release_active": "releaseTotalActive",
        "stream": "streamPtr", "device": "deviceId"}, ("name", "size", "allocationTime")),
    ("NPU_MODULE_MEM", "ENUM_MODULE", "npu_module_mem", MODULE_MEMORY, ALL_ROWS, {
        "module": "moduleId", "ts": "timestampNs", "reserved": "totalReserved", "device": "deviceId"},
     ("moduleId", "timestampNs", "totalReserved")),
)

RANK_HAS_ROWS = "SELECT count(*) FROM {table} WHERE rank = ?"
FILL_DEVICE = "UPDATE step_trace SET device_id = ? WHERE rank = ? AND device_id IS NULL"


# msprof-analyze's cluster_analysis.db (cluster_db's), known by the tables its schema names at its head:
# the job's analysis, not a rank's export.
CLUSTER_TABLES = re.compile(rb"ClusterStepTraceTime|ClusterCommunication|ClusterCommAnalyzer")


def sniff(head: bytes) -> bool:
    return head.startswith(MAGIC) and not CLUSTER_TABLES.search(head)


COPY_TRIES = 3
# What sqlite keeps beside a db that the db's committed state needs: the rows committed into a
# write-ahead log not yet checkpointed, or the pages an open transaction overwrote in rollback mode.
SIDE_FILES = {"-wal": "write-ahead log", "-journal": "rollback journal"}


def _stamp(path: Path):
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def _nonempty(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 0


def _side_file(path: Path) -> Optional[str]:
    """The suffix of the write-ahead log or rollback journal that holds part of the db's state."""
    return next((s for s in SIDE_FILES if _nonempty(Path(f"{path}{s}"))), None)


def _open(path: Path, tmp: Path, tries: int = COPY_TRIES) -> sqlite3.Connection:
    """The SQLite file ``path`` opened read-only, nothing written beside it: where a write-ahead
    log or rollback journal holds part of its state, a copy of both in ``tmp``."""
    suffix = _side_file(path)
    if suffix is None:
        # immutable=1: sqlite neither locks nor looks for a journal, so nothing is written beside it.
        uri = path.resolve().as_uri() + "?mode=ro&immutable=1"
    else:
        side, copy = Path(f"{path}{suffix}"), tmp / "copy.db"
        # A writer still at work may commit between the two copies, which would then not match:
        # copied again until neither changed meanwhile.
        for _ in range(tries):
            try:
                before = _stamp(path), _stamp(side)
                shutil.copyfile(path, copy)
                shutil.copyfile(side, f"{copy}{suffix}")
                after = _stamp(path), _stamp(side)
            except FileNotFoundError:
                if side.exists() or tries <= 1:
                    raise
                # A rollback journal goes at its writer's commit: the db is then whole; look again.
                return _open(path, tmp, tries - 1)
            if after == before:
                break
        else:
            raise SourceError(f"still being written: the db and its {SIDE_FILES[suffix]} changed while read; "
                              "open it again once its writer has finished")
        # A write-ahead log is applied by a read-only open (which keeps its -shm here, in tmp). A
        # rollback journal left hot (its writer killed, or still in its transaction) is played back
        # only by a connection that may write: this private copy's.
        uri = copy.as_uri() + ("?mode=ro" if suffix == "-wal" else "")
    sq = sqlite3.connect(uri, uri=True)
    sq.text_factory = lambda b: b.decode("utf-8", errors="replace")
    return sq


# What sqlite's file header holds at these offsets (big-endian): the page size (1 for 65,536), the
# change counter, the file's size in pages, and the counter again where that size is valid.
PAGE_SIZE, CHANGES, PAGES, SIZE_VALID_FOR = slice(16, 18), slice(24, 28), slice(28, 32), slice(92, 96)
# Said of a file shorter than its header counts, and of one whose tables sqlite's own check finds
# damaged (health: their rows' loss unknown).
CUT_PAGES = "cut short: it holds"
BROKEN_PAGES = "SQLite's check finds broken pages in"
WHOLE = "its tables"  # (what an old sqlite's check covers: no table's name)


def _cut(path: Path) -> str:
    """How much of the file is missing where it is shorter than its header counts ("" if not)."""
    with open(path, "rb") as f:
        head = f.read(100)
    size, page = path.stat().st_size, int.from_bytes(head[PAGE_SIZE], "big")
    pages = int.from_bytes(head[PAGES], "big") if head[SIZE_VALID_FOR] == head[CHANGES] else 0
    whole = pages * (65536 if page == 1 else page)
    return f"{CUT_PAGES} {size:,} of the {whole:,} bytes its header counts" if size < whole else ""


@dataclass
class DbFile:
    """A SQLite file opened by opened_db: its tables, staged into DuckDB one by one (stage), each
    checked by sqlite on the way: a torn or zeroed page reads as rows of NULLs, or as none."""
    sq: sqlite3.Connection
    tmp: Path
    tables: Set[str]
    cut: str = ""  # _cut's finding, of a file read without a write-ahead log or journal
    checked: Set[str] = field(default_factory=set)  # the tables checked (WHOLE: the file)
    broken: Dict[str, str] = field(default_factory=dict)  # table -> the first problem the check found

    def stage(self, con: duckdb.DuckDBPyConnection, table: str) -> List[str]:
        # A sqlite older than 3.33 checks only a whole file (a table's name is no argument to it):
        # once, its finding the file's.
        part = WHOLE if sqlite3.sqlite_version_info < (3, 33) else table
        if part not in self.checked:
            self.checked.add(part)
            found = [r[0] for r in self.sq.execute("PRAGMA quick_check" if part == WHOLE else
                                                   f'PRAGMA quick_check("{table}")')]
            if found != ["ok"]:
                lines = [line for r in found for line in r.splitlines() if not line.startswith("***")]
                self.broken[part] = lines[0] if lines else found[0]
        return stage_table(self.sq, con, table, self.tmp)

    def damage(self) -> str:
        """What the checks found, as a load_log note ("" for none)."""
        broken = (f"{BROKEN_PAGES} {', '.join(self.broken)} ({next(iter(self.broken.values()))}): "
                  "their rows there are lost, how many unknown" if self.broken else "")
        return "; ".join(filter(None, [self.cut, broken]))


def stage_table(sq: sqlite3.Connection, con: duckdb.DuckDBPyConnection, table: str, tmp: Path) -> List[str]:
    """Copy one SQLite table into DuckDB temp table stg_db_{table}, every column as text."""
    columns = [r[1] for r in sq.execute(f'PRAGMA table_info("{table}")')]
    out = tmp / f"{table}.csv"
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        cur = sq.execute(f'SELECT * FROM "{table}"')
        while True:
            rows = cur.fetchmany(BATCH)
            if not rows:
                break
            writer.writerows(rows)
    con.execute(READ_STAGE.format(table=STAGE_PREFIX + table),
                {"path": str(out), "columns": {c: "VARCHAR" for c in columns}})
    out.unlink()
    return columns


def _qualified(alias: str, columns: List[str], name: str) -> str:
    return f'{alias}."{name}"' if name in columns else "NULL"


def _rank_has(con: duckdb.DuckDBPyConnection, table: str, rank: int) -> bool:
    return con.execute(RANK_HAS_ROWS.format(table=table), [rank]).fetchone()[0] > 0


def _insert(con, sql: str, params: dict) -> int:
    return con.execute(sql, params).fetchone()[0]


@contextmanager
def opened_db(path: Path) -> Iterator[DbFile]:
    """The SQLite file ``path`` read-only (_open), with a temporary folder to stage its tables
    through; SourceError for an empty or unreadable file."""
    if path.stat().st_size == 0:  # SQLite takes a 0-byte file for a new, empty database
        raise SourceError("empty file")
    cut = _cut(path)  # (read first: a file that cannot be read says why, not sqlite's "unable to open")
    try:
        with tempfile.TemporaryDirectory(prefix="npu_tui_db_", dir=scratch_dir()) as tmp:
            sq = _open(path, Path(tmp))
            try:
                # (with a log or journal beside it, the file may be shorter than the pages they hold)
                yield DbFile(sq, Path(tmp), {r[0] for r in sq.execute("SELECT name FROM sqlite_master WHERE type = 'table'")},
                             cut="" if _side_file(path) else cut)
            finally:
                sq.close()
    except sqlite3.Error as e:
        # (a file cut by more than a page mostly fails whole: what it lacks is the cause, said first)
        raise SourceError("; ".join(filter(None, [cut, f"unreadable SQLite file: {e}"]))) from None


def load(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext) -> LoadResult:
    with opened_db(path) as db:
        wanted = [t for t in TABLES if t in db.tables]
        if not wanted:
            raise SourceError("SQLite file without profiler tables")
        cols = {t: db.stage(con, t) for t in wanted}
        # Communication tasks recorded (a table not staged: it can hold millions of rows).
        comm_tasks = "COMMUNICATION_TASK_INFO" in db.tables and db.sq.execute(COMM_TASKS).fetchone()[0]
    # On failure the loader's rollback drops the staged tables with everything else.
    result = _map(con, path, ctx, cols, comm_tasks)
    con.executemany("INSERT INTO db_tables VALUES (?, ?, ?)", [[ctx.rank, path.name, t] for t in cols])
    for t in list(cols) + ["steps", "launch", "device"]:
        con.execute(f"DROP TABLE IF EXISTS {STAGE_PREFIX}{t}")
    return replace(result, note="; ".join(filter(None, [db.damage(), result.note])))


# The columns a table's rows cannot be read without (the others are read where present); a table
# lacking one is left out, its rows counted, and the rest of the file read.
REQUIRED_COLUMNS = {
    "STRING_IDS": ("id", "value"),
    "TASK": ("globalTaskId", "startNs", "endNs"),
    "COMPUTE_TASK_INFO": ("globalTaskId", "name"),
    "COMMUNICATION_OP": ("opName", "startNs", "endNs"),
    "STEP_TIME": ("id", "startNs", "endNs"),
    "OVERLAP_ANALYSIS": ("type", "startNs", "endNs"),
    "PYTORCH_API": ("name", "type", "startNs", "endNs", "globalTid"),
    "CANN_API": ("name", "type", "startNs", "endNs", "globalTid"),
    "CONNECTION_IDS": ("id", "connectionId"),
    "ENUM_API_TYPE": ("id", "name"),
    "ENUM_MODULE": ("id", "name"),
    "META_DATA": ("name", "value"),
    "StepTraceTime": ("step", "computing", "communication_not_overlapped", "free", "stage"),
    "CommAnalyzerTime": ("hccl_op_name", "group_name", "start_timestamp", "elapse_time", "transit_time",
                         "wait_time", "synchronization_time", "idle_time"),
    "CommAnalyzerBandwidth": ("hccl_op_name", "transport_type", "transit_size", "transit_time", "bandwidth"),
    "CommAnalyzerMatrix": ("hccl_op_name", "group_name", "src_rank", "dst_rank", "transport_type",
                           "transit_size", "transit_time", "bandwidth"),
}
# Said of rows the profiler writes whole, skipped here: counted by table.
SKIPPED_ROWS = "rows skipped, by table"
SKIPPED_WHY = "a time or a name missing, a value that is no number or below zero, or an end before its start"
# The tables a kernel row comes from, one row each: what a file missing TASK or STRING_IDS loses.
KERNEL_ROWS = ("COMPUTE_TASK_INFO", "COMMUNICATION_OP")
# The tables of host calls, named through STRING_IDS.
HOST_TABLES = ("PYTORCH_API", "CANN_API")
# Tables the others are read through: one absent, or without a column it needs, costs the rows that
# go through it (counted where they can be), not its own.
THROUGH = ("TASK", "STRING_IDS")
# Tables of names and links: one without a column it needs costs names (the kinds of host calls, a
# module's, the versions) or the torch ops' links to their tasks, no row of the profile's.
LOOKUPS = ("ENUM_API_TYPE", "ENUM_MODULE", "META_DATA", "CONNECTION_IDS")


ONE_STRING_AN_ID = """CREATE OR REPLACE TEMP TABLE stg_db_STRING_IDS AS
SELECT id, min(value) AS value FROM stg_db_STRING_IDS GROUP BY id"""
# A task given twice would be two kernels: its first row. (TASK has no key, where
# COMPUTE_TASK_INFO's globalTaskId is one: rows appended to a copy, a db merged by hand.)
TASK_AGAIN = "SELECT count(*) - count(DISTINCT globalTaskId) FROM stg_db_TASK WHERE globalTaskId IS NOT NULL"
ONE_TASK_AN_ID = """CREATE OR REPLACE TEMP TABLE stg_db_TASK AS
SELECT * FROM stg_db_TASK
QUALIFY globalTaskId IS NULL OR row_number() OVER (PARTITION BY globalTaskId ORDER BY rowid) = 1"""


def _count(con, table: str) -> int:
    return con.execute(f"SELECT count(*) FROM {STAGE_PREFIX}{table}").fetchone()[0]


def _gone(con, cols: Dict[str, List[str]], table: str) -> Optional[str]:
    """How the file lost ``table``'s rows: "missing" (no such table read), "empty"; None if it has some."""
    return "missing" if table not in cols else None if _count(con, table) else "empty"


def _map(con, path: Path, ctx: RankContext, cols: Dict[str, List[str]], comm_tasks: bool) -> LoadResult:
    """Canonical rows from the staged tables; a table some earlier source already filled for this
    rank (the text export of the same run) is left as it is. ``comm_tasks``: the file recorded
    communication tasks (COMMUNICATION_TASK_INFO has rows)."""
    lacking = {t: [c for c in REQUIRED_COLUMNS.get(t, ()) if c not in cs] for t, cs in cols.items()}
    lacking = {t: m for t, m in lacking.items() if m}
    cols = {t: c for t, c in cols.items() if t not in lacking}
    if "STRING_IDS" in cols:  # an id given twice (a copy without its key) would join every row twice
        con.execute(ONE_STRING_AN_ID)
    again = con.execute(TASK_AGAIN).fetchone()[0] if "TASK" in cols else 0
    if again:
        con.execute(ONE_TASK_AN_ID)
    _context(con, ctx, cols)
    given: List[str] = []  # tables of this file the rank's earlier files filled
    skips: Dict[str, int] = {}  # a table -> its rows not loaded, where the others were

    def fresh(table: str) -> bool:
        if _rank_has(con, table, ctx.rank):
            given.append(table)
            return False
        return True

    def skip(table: str, n: int) -> None:
        if n:
            skips[table] = skips.get(table, 0) + n

    def counted(sql: str, params: dict, table: str, read: str = "") -> int:
        """Rows inserted from staged ``table``, the others of it (of ``read``: FROM ...) skipped."""
        n = _insert(con, sql, params)
        skip(table, con.execute("SELECT count(*) " + (read or f"FROM {STAGE_PREFIX}{table}")).fetchone()[0] - n)
        return n

    rank = {"rank": ctx.rank}
    dev = {"rank": ctx.rank, "device_id": ctx.device_id}
    rows = lost = 0  # lost: rows of tables not loaded whole (columns or tables missing)
    notes: List[str] = []
    if again:
        lost += again
        notes.append(f"{again:,} TASK row{'s' if again > 1 else ''} of a task given before (its globalTaskId): "
                     "read once")
    data = {t: m for t, m in lacking.items() if t not in (*THROUGH, *LOOKUPS)}
    if data:
        n = sum(_count(con, t) for t in data)
        lost += n
        notes.append(f"columns missing: {', '.join(f'{t}.{c}' for t, m in data.items() for c in m)}; the "
                     f"{n:,} rows of {', '.join(data)} were not loaded")
    lookups = {t: m for t, m in lacking.items() if t in LOOKUPS}
    if lookups:  # (no "columns missing" at a note's start: the rows are all here)
        notes.append(f"lookup columns gone: {', '.join(f'{t}.{c}' for t, m in lookups.items() for c in m)}, "
                     "so what they name or link is not read")
    # Device tasks are TASK rows named through STRING_IDS, host calls are named through it too: a
    # file with those but without TASK or STRING_IDS (or a column of theirs) is damaged (a writer
    # killed mid-export, a hand-made copy).
    # STRING_IDS there but empty while rows are named through it (a writer stopped before it filled
    # the table) loses them as one missing does: not rows skipped from a whole file.
    emptied = ["STRING_IDS"] if "STRING_IDS" in cols and not _count(con, "STRING_IDS") and any(
        _count(con, t) for t in (*KERNEL_ROWS, *HOST_TABLES) if t in cols) else []
    cols = {t: c for t, c in cols.items() if t not in emptied}
    device = bool(DEVICE_TABLES & set(cols) or comm_tasks)
    unnamed = [t for t in HOST_TABLES if t in cols] if "STRING_IDS" not in cols else []
    missing = [t for t in THROUGH if t not in cols and (device or t == "STRING_IDS" and unnamed)]
    if missing:
        counts = [t for t in (*(KERNEL_ROWS if device else ()), *unnamed) if t in cols]
        n = sum(_count(con, t) for t in counts)
        lost += n
        what = " and ".join(w for w, held in (("device tasks", device), ("host calls", unnamed)) if held)
        gone = "missing" if set(missing) - set(emptied) else "empty"
        told = ", ".join(f"{t} (no {', '.join(lacking[t])} column)" if t in lacking else
                         f"{t} (empty)" if t in emptied and gone == "missing" else t for t in missing)
        notes.append(f"tables {gone}: {told}; its {what} "
                     f"({f'{n:,} rows' if not device or set(KERNEL_ROWS) & set(counts) else 'how many unknown'}) "
                     "were not loaded")
    if "PYTORCH_API" not in cols and "PYTORCH_API" not in lacking and "CONNECTION_IDS" in cols \
            and _count(con, "CONNECTION_IDS"):
        # (CONNECTION_IDS maps the torch ops' connectionIds to their tasks': it is of PYTORCH_API)
        notes.append("tables missing: PYTORCH_API; its torch ops, whose launches CONNECTION_IDS holds, "
                     "were not loaded")

    if "TASK" in cols and "STRING_IDS" in cols:
        if "STEP_TIME" in cols:
            con.execute(STEPS)
            skip("STEP_TIME", _count(con, "STEP_TIME") - _count(con, "steps"))
        else:
            con.execute(NO_STEPS)
        connection = col(cols.get("CANN_API", []), "connectionId")
        con.execute(LAUNCHES.format(connection=connection) if connection != "NULL" else NO_LAUNCHES)
        if "COMPUTE_TASK_INFO" in cols:
            info = cols["COMPUTE_TASK_INFO"]
            con.execute(COMPUTE_TASKS.format(block=next(
                (_qualified("c", info, b) for b in BLOCK_COLUMNS if b in info), "NULL"), **{
                name: _qualified(alias, info if alias == "c" else cols["TASK"], name)
                for alias, names in COMPUTE_OPTIONAL.items() for name in names}))
        else:
            con.execute(NO_COMPUTE)
        # A run without compute has no such table; one whose TASK holds kernels lost them.
        gone = _gone(con, cols, "COMPUTE_TASK_INFO")
        if gone and "taskType" in cols["TASK"] and con.execute(TASK_KERNELS).fetchone()[0] \
                and "COMPUTE_TASK_INFO" not in lacking:
            notes.append(f"tables {gone}: COMPUTE_TASK_INFO; its compute tasks (in TASK) were not loaded")
        elif not gone and not _count(con, "TASK"):  # (its rows skipped, counted: their times are in TASK)
            notes.append("tables empty: TASK; its compute tasks (in COMPUTE_TASK_INFO) were not loaded")
        devices = con.execute(DEVICES).fetchone()[0] or []  # (TASK's, before the comm ops take the rank's)
        if "COMMUNICATION_OP" in cols:
            c = cols["COMMUNICATION_OP"]
            con.execute(COMM_OPS.format(wait=col(c, "waitNs"), type=_qualified("o", c, "opType"),
                                        connection=_qualified("o", c, "connectionId")),
                        {"device_id": ctx.device_id})
        if fresh("kernels"):
            # A run without communication has neither table; one with comm tasks lost its ops.
            gone = _gone(con, cols, "COMMUNICATION_OP")
            if comm_tasks and gone and "COMMUNICATION_OP" not in lacking:
                notes.append(COMM_LOST.format(gone))
            rows += counted(KERNELS, dev, "kernels (TASK, COMMUNICATION_OP)", f"FROM {STAGE_PREFIX}device")
            if len(devices) > 1:  # (first: health's advice is keyed on it)
                listed = ", ".join(map(str, devices))
                notes.insert(0, f"{MERGED_AS_ONE}: a db export whose tasks are of devices {listed} (TASK's deviceId), "
                                "not told apart here; its figures are the devices' together")
            if ctx.device_id is None:
                ctx.device_id = con.execute(
                    "SELECT any_value(device_id) FROM kernels WHERE rank = ?", [ctx.rank]
                ).fetchone()[0]
        else:
            # Its device tasks tell whether it is the run of the files beside it: of another run,
            # none of it loads (its host events or flows beside their kernels would mix two runs).
            apart = con.execute(APART, [ctx.rank]).fetchone()[0]
            if apart is not None:
                return LoadResult(rows=0, note=f"db export of another run than the files beside it (its device "
                                               f"tasks start {gap_words(apart / 1e9)} from theirs, and do not "
                                               "overlap them): not loaded, theirs are")
        if {"PYTORCH_API", "CONNECTION_IDS"} <= set(cols) and "connectionId" in cols["PYTORCH_API"] \
                and fresh("flows"):
            rows += _insert(con, FLOWS, rank)

    if ctx.device_id is not None:
        # analysis.db sorts before the profiler db, so its step rows came in without the device.
        con.execute(FILL_DEVICE, [ctx.device_id, ctx.rank])

    if "OVERLAP_ANALYSIS" in cols and fresh("overlap_lanes"):
        rows += counted(OVERLAP, rank, "OVERLAP_ANALYSIS")

    if "STRING_IDS" in cols and fresh("host_events"):
        if "ENUM_API_TYPE" not in cols:
            con.execute(NO_API_TYPES)
        if "PYTORCH_API" in cols:
            c = cols["PYTORCH_API"]
            rows += counted(PYTORCH_API.format(
                seq=col(c, "sequenceNumber"), fwd=col(c, "fwdThreadId"),
                shapes=col(c, "inputShapes"), dtypes=col(c, "inputDtypes")), rank, "PYTORCH_API")
        if "CANN_API" in cols:
            rows += counted(CANN_API.format(connection=_qualified("c", cols["CANN_API"], "connectionId")),
                            rank, "CANN_API")

    if "StepTraceTime" in cols and fresh("step_trace"):
        c = cols["StepTraceTime"]
        sql = STEP_TRACE.format(
            overlapped=col(c, "overlapped"), communication=col(c, "communication"),
            bubble=col(c, "bubble"), preparing=col(c, "preparing"),
            excl_recv=col(c, "communication_not_overlapped_and_exclude_receive"))
        rows += counted(sql, {**dev, "source": path.name}, "StepTraceTime")
    for table, target, sql, valid in (
            ("CommAnalyzerTime", "comm_ops", COMM_TIME, VALID_TIME),
            ("CommAnalyzerBandwidth", "comm_bandwidth", COMM_BANDWIDTH, VALID_LINK),
            ("CommAnalyzerMatrix", "comm_matrix", COMM_MATRIX, VALID_LINK)):
        if table in cols and fresh(target):
            c = cols[table]
            # msprof's own (communication_analyzer.db) has neither a step nor a kind column
            rows += _insert(con, sql.format(valid=valid, op_name=col(c, "op_name"), step=col(c, "step"),
                                            kind=col(c, "type")), rank)
            skip(table, con.execute(COUNT_INVALID.format(table=table, valid=valid)).fetchone()[0])
    fills: Dict[str, bool] = {}  # memory_record is filled from two of the file's tables (APP's rows)
    for table, names_in, target, sql, read, names, needed in MEMORY_TABLES:
        if table not in cols:
            continue
        if target not in fills:
            fills[target] = fresh(target)
        if not fills[target]:
            continue
        absent = [f"no {names_in} table to name them"] if names_in not in cols else []
        absent += [f"no {c} column" for c in needed if col(cols[table], *_spellings(c)) == "NULL"]
        if absent:
            n = _count(con, table)
            if n:
                lost += n
                notes.append(f"{table}'s {n:,} rows not loaded: {', '.join(absent)}")
            continue
        fields = {k: col(cols[table], *_spellings(v)) for k, v in names.items()}
        rows += counted(sql.format(**fields), rank, table, read.format(table=table, **fields))
    groups = _groups(con, ctx, cols)  # (not counted in its rows: those say whether its tables were read)
    if skips:
        notes.append(f"{SKIPPED_ROWS}: {', '.join(f'{t} {n:,}' for t, n in skips.items())} ({SKIPPED_WHY})")
    note = "; ".join(filter(None, [*notes, groups.note]))
    if given and not rows and not note:
        # Without device tasks (analysis.db) no run is claimed.
        if "kernels" in given:
            note = f"db export of the same run as the files beside it, which gave the {', '.join(given)}: not loaded"
        else:
            note = f"db export beside files that gave the {', '.join(given)}: not loaded"
    return LoadResult(rows=rows, skipped=lost + sum(skips.values()) + groups.skipped, note=note)


# torch_npu's copy of profiler_metadata.json in META_DATA: a value per key, as JSON text.
META_GROUPS = f"SELECT value FROM stg_db_META_DATA WHERE lower(name) = '{profiler_metadata.GROUPS}' LIMIT 1"


def _groups(con, ctx: RankContext, cols: Dict[str, List[str]]) -> LoadResult:
    """The communication groups META_DATA holds, where the rank's profiler_metadata.json (the same)
    is not beside the db, and no other db of the rank gave them."""
    if "META_DATA" not in cols or profiler_metadata.KIND in ctx.files or _rank_has(con, "comm_groups", ctx.rank):
        return LoadResult(rows=0)
    row = con.execute(META_GROUPS).fetchone()
    if row is None or row[0] is None:
        return LoadResult(rows=0)
    try:
        groups = json.loads(row[0])
    except ValueError:
        return LoadResult(rows=0, skipped=1, note=f"META_DATA's {profiler_metadata.GROUPS} is not valid JSON: "
                                                  "the groups' ranks are unknown")
    return profiler_metadata.insert_groups(con, groups, ctx.rank)


def _spellings(column: str) -> Tuple[str, ...]:
    """A column's name as torch_npu's exports write it, and as 6.0.RC1's did (snake_case:
    total_allocated, device_id, and time_stamp for timestamp)."""
    snake = OLDER_NAMES.get(column) or re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", column).lower()
    return (column, snake) if snake != column else (column,)


# 6.0.RC1's names that are not the others' in snake_case.
OLDER_NAMES = {"timestamp": "time_stamp"}


def _context(con, ctx: RankContext, cols: Dict[str, List[str]]) -> None:
    """Device id from RANK_DEVICE_MAP (this rank's row, else the only one) and versions from
    META_DATA, where the file records them."""
    if "RANK_DEVICE_MAP" in cols and ctx.device_id is None:
        c = cols["RANK_DEVICE_MAP"]
        row = con.execute(
            f"SELECT int_or_null({col(c, *_spellings('deviceId'))}) FROM stg_db_RANK_DEVICE_MAP "
            f"ORDER BY int_or_null({col(c, *_spellings('rankId'))}) IS DISTINCT FROM ? LIMIT 1", [ctx.rank]
        ).fetchone()
        ctx.device_id = row[0] if row else None
    if "META_DATA" in cols:
        for name, value in con.execute("SELECT lower(name), clean_text(value) FROM stg_db_META_DATA").fetchall():
            if name in ("torch_npu_version", "cann_version") and value and getattr(ctx, name) is None:
                setattr(ctx, name, value)
