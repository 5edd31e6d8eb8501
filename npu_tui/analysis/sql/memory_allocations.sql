-- every allocation of operator_memory.csv as the Memory drill lists it: rank, stage, operator, size (MB), allocated at (us from the rank's first kernel), held for (ms; NULL: to the end), the process's allocated and reserved memory then (MB)
SELECT o.rank, CASE WHEN o.alloc_ns < w.end_ns THEN w.stage END AS stage, o.name, o.size_bytes / 1048576.0 AS size_mb,
       (o.alloc_ns - f.t0) / 1e3 AS at_us, o.duration_ns / 1e6 AS held_ms,
       o.alloc_allocated_mb AS allocated_mb, o.alloc_reserved_mb AS reserved_mb
FROM operator_memory o
LEFT JOIN (SELECT rank, min(start_ns) AS t0 FROM kernels GROUP BY rank) f USING (rank)
ASOF LEFT JOIN stage_windows w ON w.rank = o.rank AND o.alloc_ns >= w.start_ns
