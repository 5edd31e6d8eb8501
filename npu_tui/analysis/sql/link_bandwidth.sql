-- bandwidth per rank and link type (HCCS, PCIE, RDMA, SIO, SDMA): MB moved, transit time (ms), GB/s
SELECT rank, transport, sum(transit_size_mb) AS size_mb, sum(transit_time_ms) AS time_ms,
       sum(transit_size_mb) / nullif(sum(transit_time_ms), 0) AS bandwidth_gbps
FROM comm_bandwidth
WHERE transport IS NOT NULL
GROUP BY rank, transport
ORDER BY rank, size_mb DESC, transport
