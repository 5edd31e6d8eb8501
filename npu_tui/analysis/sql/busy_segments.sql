-- each rank's device time cut where comm, compute or memory-copy kernels start or end (and at stage / step window edges): segments with something running, and running totals (ns) of compute, exposed comm, overlapped comm and copies (with neither) through each
-- A sweep over start (+1) and end (-1) events: a running count above zero is inside the union.
-- Window edges cut segments too, so no segment straddles one: the time of a kind inside a window
-- [a, b) is its running total through the last segment starting before b minus the one before a
-- (two ASOF lookups per window, overlapping windows included).
WITH ev AS (
    SELECT rank, start_ns AS t, is_comm::INTEGER AS dc, is_compute::INTEGER AS dp, is_copy::INTEGER AS dy
    FROM kernel_stages WHERE (is_comm OR is_compute OR is_copy) AND dur_ns > 0
    UNION ALL
    SELECT rank, end_ns, -is_comm::INTEGER, -is_compute::INTEGER, -is_copy::INTEGER
    FROM kernel_stages WHERE (is_comm OR is_compute OR is_copy) AND dur_ns > 0
    UNION ALL
    SELECT rank, unnest([start_ns, end_ns]), 0, 0, 0 FROM stage_windows
    UNION ALL
    SELECT rank, unnest([start_ns, end_ns]), 0, 0, 0 FROM step_windows
),
points AS (SELECT rank, t, sum(dc) AS dc, sum(dp) AS dp, sum(dy) AS dy FROM ev GROUP BY rank, t),
running AS (
    SELECT rank, t AS start_ns, lead(t) OVER (PARTITION BY rank ORDER BY t) AS end_ns,
           sum(dc) OVER (PARTITION BY rank ORDER BY t ROWS UNBOUNDED PRECEDING) AS comm_running,
           sum(dp) OVER (PARTITION BY rank ORDER BY t ROWS UNBOUNDED PRECEDING) AS compute_running,
           sum(dy) OVER (PARTITION BY rank ORDER BY t ROWS UNBOUNDED PRECEDING) AS copy_running
    FROM points
),
segments AS (
    SELECT rank, start_ns, end_ns, comm_running > 0 AS comm, compute_running > 0 AS compute,
           copy_running > 0 AS copy
    FROM running
    WHERE end_ns > start_ns AND (comm_running > 0 OR compute_running > 0 OR copy_running > 0)
)
SELECT *,
       sum(CASE WHEN compute THEN end_ns - start_ns ELSE 0 END) OVER w AS compute_through_ns,
       sum(CASE WHEN comm AND NOT compute THEN end_ns - start_ns ELSE 0 END) OVER w AS exposed_through_ns,
       sum(CASE WHEN comm AND compute THEN end_ns - start_ns ELSE 0 END) OVER w AS overlapped_through_ns
FROM segments
WINDOW w AS (PARTITION BY rank ORDER BY start_ns ROWS UNBOUNDED PRECEDING)
