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
-- One order over every rank, not windows partitioned by rank: DuckDB takes 3x as long over 64
-- partitions as over one of the same rows. Each rank's +1/-1 events sum to zero, so the running
-- counts restart at each rank by themselves; a rank's last point ends nothing; and each rank's
-- totals start from zero by taking off what the ranks before it hold (offsets).
running AS (
    SELECT rank, t AS start_ns, CASE WHEN lead(rank) OVER o = rank THEN lead(t) OVER o END AS end_ns,
           sum(dc) OVER (ORDER BY rank, t ROWS UNBOUNDED PRECEDING) AS comm_running,
           sum(dp) OVER (ORDER BY rank, t ROWS UNBOUNDED PRECEDING) AS compute_running,
           sum(dy) OVER (ORDER BY rank, t ROWS UNBOUNDED PRECEDING) AS copy_running
    FROM points
    WINDOW o AS (ORDER BY rank, t)
),
segments AS (
    SELECT rank, start_ns, end_ns, comm_running > 0 AS comm, compute_running > 0 AS compute,
           copy_running > 0 AS copy,
           CASE WHEN compute_running > 0 THEN end_ns - start_ns ELSE 0 END AS compute_ns,
           CASE WHEN comm_running > 0 AND compute_running <= 0 THEN end_ns - start_ns ELSE 0 END AS exposed_ns,
           CASE WHEN comm_running > 0 AND compute_running > 0 THEN end_ns - start_ns ELSE 0 END AS overlapped_ns
    FROM running
    WHERE end_ns > start_ns AND (comm_running > 0 OR compute_running > 0 OR copy_running > 0)
),
through AS (
    SELECT *,
           sum(compute_ns) OVER w AS compute_all, sum(exposed_ns) OVER w AS exposed_all,
           sum(overlapped_ns) OVER w AS overlapped_all
    FROM segments
    WINDOW w AS (ORDER BY rank, start_ns ROWS UNBOUNDED PRECEDING)
),
offsets AS (
    SELECT rank, arg_min(compute_all - compute_ns, start_ns) AS compute_off,
           arg_min(exposed_all - exposed_ns, start_ns) AS exposed_off,
           arg_min(overlapped_all - overlapped_ns, start_ns) AS overlapped_off
    FROM through GROUP BY rank
)
SELECT t.rank, t.start_ns, t.end_ns, t.comm, t.compute, t.copy,
       t.compute_all - o.compute_off AS compute_through_ns,
       t.exposed_all - o.exposed_off AS exposed_through_ns,
       t.overlapped_all - o.overlapped_off AS overlapped_through_ns
FROM through t JOIN offsets o USING (rank)
