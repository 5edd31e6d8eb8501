-- the profiler's overlap lanes cut at stage / step window edges: segments with the lanes running in each, and each lane's running total (ns) through the segment
-- Window sums come from the running totals as in busy_segments.
WITH ev AS (
    SELECT rank, start_ns AS t, lane, 1 AS d FROM overlap_lanes WHERE dur_ns > 0
    UNION ALL
    SELECT rank, start_ns + dur_ns, lane, -1 FROM overlap_lanes WHERE dur_ns > 0
    UNION ALL
    SELECT rank, unnest([start_ns, end_ns]), NULL, 0 FROM stage_windows
    WHERE rank IN (SELECT rank FROM overlap_lanes)
    UNION ALL
    SELECT rank, unnest([start_ns, end_ns]), NULL, 0 FROM step_windows
    WHERE rank IN (SELECT rank FROM overlap_lanes)
),
points AS (
    SELECT rank, t,
           sum(d) FILTER (WHERE lane = 'Computing') AS computing,
           sum(d) FILTER (WHERE lane = 'Communication') AS comm,
           sum(d) FILTER (WHERE lane = 'Communication(Not Overlapped)') AS not_overlapped,
           sum(d) FILTER (WHERE lane = 'Free') AS free
    FROM ev GROUP BY rank, t
),
running AS (
    SELECT rank, t AS start_ns, lead(t) OVER w AS end_ns,
           sum(coalesce(computing, 0)) OVER r AS computing, sum(coalesce(comm, 0)) OVER r AS comm,
           sum(coalesce(not_overlapped, 0)) OVER r AS not_overlapped, sum(coalesce(free, 0)) OVER r AS free
    FROM points
    WINDOW w AS (PARTITION BY rank ORDER BY t), r AS (PARTITION BY rank ORDER BY t ROWS UNBOUNDED PRECEDING)
),
segments AS (
    SELECT rank, start_ns, end_ns, computing > 0 AS computing, comm > 0 AS comm,
           not_overlapped > 0 AS not_overlapped, free > 0 AS free
    FROM running
    WHERE end_ns > start_ns AND (computing > 0 OR comm > 0 OR not_overlapped > 0 OR free > 0)
)
SELECT *,
       sum(CASE WHEN computing THEN end_ns - start_ns ELSE 0 END) OVER w AS computing_through_ns,
       sum(CASE WHEN comm THEN end_ns - start_ns ELSE 0 END) OVER w AS comm_through_ns,
       sum(CASE WHEN not_overlapped THEN end_ns - start_ns ELSE 0 END) OVER w AS not_overlapped_through_ns,
       sum(CASE WHEN free THEN end_ns - start_ns ELSE 0 END) OVER w AS free_through_ns
FROM segments
WINDOW w AS (PARTITION BY rank ORDER BY start_ns ROWS UNBOUNDED PRECEDING)
