-- bandwidth per rank and link type (HCCS, PCIE, RDMA, SIO, SDMA): MB moved, transit time (ms), GB/s
WITH link AS (
    SELECT rank, transport, exact_sum(transit_size_mb) AS size_mb, exact_sum(transit_time_ms) AS time_ms
    FROM comm_bandwidth
    WHERE transport IS NOT NULL
    GROUP BY rank, transport
)
SELECT rank, transport, size_mb, time_ms, size_mb / nullif(time_ms, 0) AS bandwidth_gbps
FROM link
ORDER BY rank, size_mb DESC, transport
