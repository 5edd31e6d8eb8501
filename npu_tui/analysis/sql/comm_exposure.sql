-- per rank and stage: comm time and exposed comm (comm not covered by compute) in the stage's windows; lanes when present, else kernels
WITH w AS (SELECT rank, stage, start_ns, end_ns FROM stage_windows),
-- segments never straddle a window edge (see busy_segments), so each lies in the window holding its start
from_kernels AS (
    SELECT w.rank, w.stage,
           sum(s.end_ns - s.start_ns) FILTER (WHERE s.comm) AS comm_ns,
           sum(s.end_ns - s.start_ns) FILTER (WHERE s.comm AND NOT s.compute) AS exposed_ns
    FROM busy_segments s ASOF JOIN w ON s.rank = w.rank AND s.start_ns >= w.start_ns
    WHERE s.start_ns < w.end_ns
    GROUP BY w.rank, w.stage
),
from_lanes AS (
    SELECT w.rank, w.stage,
           sum(s.end_ns - s.start_ns) FILTER (WHERE s.comm) AS comm_ns,
           sum(s.end_ns - s.start_ns) FILTER (WHERE s.not_overlapped) AS exposed_ns
    FROM lane_segments s ASOF JOIN w ON s.rank = w.rank AND s.start_ns >= w.start_ns
    WHERE s.start_ns < w.end_ns
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
