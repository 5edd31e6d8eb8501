"""The SQL behind the panes' tables (design.md §4 tables; times shown in µs unless named _ms)."""

from __future__ import annotations

from .cells import Column

# A kernel's type, with the profiler's missing value folded into one group the drill-down can key on.
TYPE_KEY = "coalesce(nullif(type, ''), 'N/A')"

OPERATOR_TYPES = f"""
SELECT {TYPE_KEY} AS type, count(*) AS count, sum(dur_ns) / 1e3 AS total_us,
       avg(dur_ns) / 1e3 AS mean_us, max(dur_ns) / 1e3 AS max_us,
       sum(dur_ns) / nullif((SELECT sum(dur_ns) FROM kernels), 0) AS share
FROM kernels
GROUP BY 1
"""

OPERATOR_NAMES = f"""
SELECT name, coalesce(input_shapes, '') AS input_shapes, count(*) AS count,
       sum(dur_ns) / 1e3 AS total_us, avg(dur_ns) / 1e3 AS mean_us, max(dur_ns) / 1e3 AS max_us,
       sum(dur_ns) / nullif((SELECT sum(dur_ns) FROM kernels), 0) AS share
FROM kernels
WHERE {TYPE_KEY} = ?
GROUP BY name, 2
"""

# Instances (of one rank, or of all when the rank is NULL); start is relative to the rank's first kernel so it reads as a time into the run.
KERNEL_INSTANCES = f"""
SELECT k.rank, k.step, k.name, (k.start_ns - f.t0) / 1e3 AS start_us, k.dur_ns / 1e3 AS dur_us,
       k.wait_ns / 1e3 AS wait_us, k.block_dim, k.stream_id, k.core, k.input_shapes, k.input_dtypes,
       k.output_shapes
FROM kernels AS k
JOIN (SELECT rank, min(start_ns) AS t0 FROM kernels GROUP BY rank) AS f USING (rank)
WHERE {TYPE_KEY} = ? AND k.name IS NOT DISTINCT FROM ? AND coalesce(k.input_shapes, '') = ?
  AND k.rank = coalesce(?, k.rank)
"""

STATS = (Column("count", "count", "int"), Column("total_us", "total", "us"),
         Column("mean_us", "mean", "us"), Column("max_us", "max", "us"),
         Column("share", "share", "share"))
TYPE_COLUMNS = (Column("type", "type"),) + STATS
NAME_COLUMNS = (Column("name", "name"), Column("input_shapes", "input shapes")) + STATS
INSTANCE_COLUMNS = (Column("rank", "rank", "int"), Column("step", "step", "int"),
                    Column("start_us", "start", "us"), Column("dur_us", "dur", "us"),
                    Column("wait_us", "wait", "us"), Column("block_dim", "blocks", "int"),
                    Column("stream_id", "stream", "int"), Column("input_shapes", "input shapes"),
                    Column("input_dtypes", "dtypes"))

# Per-rank time: the profiler's step time where it reported one, else the kernels' busy time; the
# slowest rank is the one with the largest (ranks.slow_rank in the plots uses the same rule).
RANKS = """
WITH k AS (
    SELECT rank, count(*) AS kernels, sum(dur_ns) / 1e3 AS busy_us,
           (max(start_ns + dur_ns) - min(start_ns)) / 1e3 AS span_us
    FROM kernels GROUP BY rank),
s AS (SELECT rank, avg(stage_us) AS step_us FROM step_trace GROUP BY rank),
t AS (
    SELECT r.rank, r.device_id, r.source_format, r.profiler_level, k.kernels, k.busy_us, k.span_us,
           s.step_us, coalesce(s.step_us, k.busy_us) AS time_us
    FROM ranks AS r LEFT JOIN k USING (rank) LEFT JOIN s USING (rank))
SELECT *, time_us / nullif(avg(time_us) OVER (), 0) AS vs_mean,
       count(*) OVER () > 1 AND time_us = max(time_us) OVER () AS slow
FROM t
"""
RANK_COLUMNS = (Column("rank", "rank", "int"), Column("device_id", "device", "int"),
                Column("kernels", "kernels", "int"), Column("busy_us", "kernel time", "us"),
                Column("span_us", "span", "us"), Column("step_us", "step", "us"),
                Column("vs_mean", "vs mean", "float"), Column("source_format", "format"),
                Column("profiler_level", "level"))

# Comm operators from communication.json when loaded, else the comm kernels themselves
# (then there is no transit/wait split; the kernel's own wait column stands in for wait).
COMM_OPS = r"""
SELECT rank, op_name, 'communication' AS source, count(*) AS count, sum(elapse_ms) AS elapse_ms,
       sum(transit_ms) AS transit_ms, sum(wait_ms) AS wait_ms,
       sum(wait_ms) / nullif(sum(wait_ms) + sum(transit_ms), 0) AS wait_ratio
FROM comm_ops GROUP BY rank, op_name
UNION ALL
SELECT rank, name, 'kernels', count(*), sum(dur_ns) / 1e6, NULL, sum(wait_ns) / 1e6, NULL
FROM kernels
WHERE (upper(core) IN ('HCCL', 'COMMUNICATION') OR lower(name) LIKE 'hcom\_%' ESCAPE '\')
  AND NOT EXISTS (SELECT 1 FROM comm_ops)
GROUP BY rank, name
"""
COMM_OP_COLUMNS = (Column("rank", "rank", "int"), Column("op_name", "op"), Column("count", "count", "int"),
                   Column("elapse_ms", "elapse ms", "ms"), Column("transit_ms", "transit ms", "ms"),
                   Column("wait_ms", "wait ms", "ms"), Column("wait_ratio", "wait", "share"))

# Links from communication_matrix.json; without it, per-rank transports from communication.json.
COMM_LINKS = """
SELECT src_rank, dst_rank, transport, count(*) AS ops, sum(transit_size_mb) AS size_mb,
       sum(transit_time_ms) AS time_ms, sum(transit_size_mb) / nullif(sum(transit_time_ms), 0) AS gbps
FROM comm_matrix GROUP BY src_rank, dst_rank, transport
UNION ALL
SELECT rank, NULL, transport, count(*), sum(transit_size_mb), sum(transit_time_ms),
       sum(transit_size_mb) / nullif(sum(transit_time_ms), 0)
FROM comm_bandwidth
WHERE NOT EXISTS (SELECT 1 FROM comm_matrix)
GROUP BY rank, transport
"""
COMM_LINK_COLUMNS = (Column("src_rank", "src", "int"), Column("dst_rank", "dst", "int"),
                     Column("transport", "transport"), Column("ops", "ops", "int"),
                     Column("size_mb", "MB", "float"), Column("time_ms", "time ms", "ms"),
                     Column("gbps", "GB/s", "float"))
