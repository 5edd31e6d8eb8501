-- every allocation of operator_memory as the Memory drill lists it: rank, stage (placed on the device's clock as memory_series places samples), operator, size (MB), allocated at (us from the rank's first kernel), held for (ms; NULL: still held when the profile ended), the process's allocated and reserved memory then (MB)
WITH launched AS (
    SELECT o.*, coalesce(f.device_ts_ns, o.alloc_ns) AS at_ns
    FROM operator_memory o
    ASOF LEFT JOIN launches f
      ON f.rank = o.rank AND o.alloc_ns >= f.host_ts_ns
    -- of the device the rank's memory figures are of, where its records name several
    WHERE NOT EXISTS (SELECT 1 FROM memory_devices() d
                      WHERE d.rank = o.rank AND len(d.others) > 0 AND coalesce(o.device, d.device) <> d.device)
)
SELECT l.rank, CASE WHEN l.at_ns < w.end_ns THEN w.stage END AS stage, l.name, l.size_bytes / 1048576.0 AS size_mb,
       (l.alloc_ns - k.t0) / 1e3 AS at_us, l.duration_ns / 1e6 AS held_ms,
       -- held to the end of the profile when never released
       coalesce(l.duration_ns, e.last_ns - l.alloc_ns) / 1e6 AS held_to_end_ms, l.release_ns IS NULL AS kept,
       l.alloc_allocated_mb AS allocated_mb, l.alloc_reserved_mb AS reserved_mb
FROM launched l
LEFT JOIN (SELECT rank, min(start_ns) AS t0 FROM kernels GROUP BY rank) k USING (rank)
JOIN (SELECT rank, max(coalesce(release_ns, alloc_ns)) AS last_ns FROM operator_memory GROUP BY rank) e USING (rank)
ASOF LEFT JOIN stage_windows w ON w.rank = l.rank AND l.at_ns >= w.start_ns
