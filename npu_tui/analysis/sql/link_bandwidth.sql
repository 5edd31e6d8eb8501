-- bandwidth per rank and link type (HCCS, PCIE, SIO, SDMA, RDMA): MB moved, transit time (ms), GB/s; part_of: 'SDMA' for the on-chip links whose total the profiler's SDMA row is (NULL for the others)
-- The profiler's SDMA is every transfer the DMA engines moved, the sum of HCCS, PCIE and SIO (as
-- msprof-analyze reads it too): listed first, its parts after it, so no one adds it to them.
WITH link AS (
    SELECT rank, transport, exact_sum(transit_size_mb) AS size_mb, exact_sum(transit_time_ms) AS time_ms,
           bool_or(transport = 'SDMA') OVER (PARTITION BY rank) AS has_sdma
    FROM comm_bandwidth
    WHERE transport IS NOT NULL
    GROUP BY rank, transport
)
SELECT rank, transport, size_mb, time_ms, size_mb / nullif(time_ms, 0) AS bandwidth_gbps,
       CASE WHEN has_sdma AND transport IN ('HCCS', 'HCCS_SW', 'PCIE', 'SIO') THEN 'SDMA' END AS part_of
FROM link
ORDER BY rank, coalesce(part_of, transport) <> 'SDMA', part_of NULLS FIRST, size_mb DESC, transport
