-- per rank and operator (operator_memory.csv): allocations, bytes allocated in all and the largest, how long they were held (mean ms; NULL release: held to the end), the memory held over time (MB·s), those never released, and the stage of its largest allocation
WITH a AS (
    SELECT o.*, CASE WHEN o.alloc_ns < w.end_ns THEN w.stage END AS stage,
           coalesce(o.duration_ns, e.last_ns - o.alloc_ns) AS held_ns
    FROM operator_memory o
    JOIN (SELECT rank, max(coalesce(release_ns, alloc_ns)) AS last_ns FROM operator_memory GROUP BY rank) e USING (rank)
    ASOF LEFT JOIN stage_windows w ON w.rank = o.rank AND o.alloc_ns >= w.start_ns
)
SELECT rank, name, count(*) AS allocations, sum(size_bytes) / 1048576.0 AS total_mb, max(size_bytes) / 1048576.0 AS max_mb,
       avg(held_ns) / 1e6 AS mean_held_ms, sum(size_bytes / 1048576.0 * held_ns / 1e9) AS held_mb_s,
       count(*) FILTER (WHERE release_ns IS NULL) AS never_released, arg_max(stage, size_bytes) AS stage
FROM a
GROUP BY rank, name
