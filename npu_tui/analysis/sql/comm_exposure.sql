-- per rank and stage: comm time and exposed comm (comm not covered by compute) in the stage's windows; lanes when present, else kernels
-- Time inside a window: the running totals at its end minus those at its start (see busy_segments).
-- A sum of nothing is NULL, as it would be summing the window's segments (no segment is empty).
WITH from_kernels AS (
    SELECT w.rank, w.stage,
           nullif(sum(coalesce(b.exposed_through_ns + b.overlapped_through_ns, 0)
                      - coalesce(a.exposed_through_ns + a.overlapped_through_ns, 0)), 0) AS comm_ns,
           nullif(sum(coalesce(b.exposed_through_ns, 0) - coalesce(a.exposed_through_ns, 0)), 0) AS exposed_ns
    FROM stage_windows w
    ASOF LEFT JOIN busy_segments a ON w.rank = a.rank AND w.start_ns > a.start_ns
    ASOF LEFT JOIN busy_segments b ON w.rank = b.rank AND w.end_ns > b.start_ns
    GROUP BY w.rank, w.stage
),
from_lanes AS (
    SELECT w.rank, w.stage,
           nullif(sum(coalesce(b.comm_through_ns, 0) - coalesce(a.comm_through_ns, 0)), 0) AS comm_ns,
           nullif(sum(coalesce(b.not_overlapped_through_ns, 0) - coalesce(a.not_overlapped_through_ns, 0)), 0)
               AS exposed_ns
    FROM stage_windows w
    ASOF LEFT JOIN lane_segments a ON w.rank = a.rank AND w.start_ns > a.start_ns
    ASOF LEFT JOIN lane_segments b ON w.rank = b.rank AND w.end_ns > b.start_ns
    GROUP BY w.rank, w.stage
),
lane_ranks AS (SELECT DISTINCT rank FROM overlap_lanes WHERE lane = 'Communication(Not Overlapped)'),
merged AS (
    SELECT s.rank, s.stage, s.wall_us, s.rank IN (SELECT rank FROM lane_ranks) AS has_lanes,
           coalesce(k.comm_ns, 0) AS k_comm, coalesce(k.exposed_ns, 0) AS k_exposed,
           coalesce(l.comm_ns, k.comm_ns, 0) AS l_comm, coalesce(l.exposed_ns, 0) AS l_exposed
    FROM stage_summary s
    LEFT JOIN from_kernels k USING (rank, stage)
    LEFT JOIN from_lanes l USING (rank, stage)
)
SELECT rank, stage, wall_us,
       CASE WHEN has_lanes THEN l_comm ELSE k_comm END / 1e3 AS comm_us,
       CASE WHEN has_lanes THEN l_exposed ELSE k_exposed END / 1e3 AS exposed_us,
       CASE WHEN wall_us > 0 THEN CASE WHEN has_lanes THEN l_exposed ELSE k_exposed END / 1e3 / wall_us
            ELSE 0.0 END AS exposed_share,
       CASE WHEN has_lanes THEN 'overlap_lanes' ELSE 'kernels' END AS source,
       CASE WHEN has_lanes THEN l_exposed / 1e3 END AS exposed_lanes_us,
       k_exposed / 1e3 AS exposed_kernels_us
FROM merged
