-- the Comm pane's links: per src -> dst link and transport (communication_matrix.json), else per rank and transport (communication.json): ops, MB moved, transit time (ms), GB/s
WITH matrix AS (
    SELECT src_rank, dst_rank, transport, count(*) AS ops, sum(transit_size_mb) AS size_mb,
           sum(transit_time_ms) AS time_ms
    FROM comm_matrix GROUP BY src_rank, dst_rank, transport
),
per_rank AS (
    SELECT rank, NULL::INTEGER, transport, count(*), sum(transit_size_mb), sum(transit_time_ms)
    FROM comm_bandwidth
    WHERE NOT EXISTS (SELECT 1 FROM comm_matrix)
    GROUP BY rank, transport
)
SELECT *, size_mb / nullif(time_ms, 0) AS gbps
FROM (SELECT * FROM matrix UNION ALL SELECT * FROM per_rank)
