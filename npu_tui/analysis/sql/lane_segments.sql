-- the profiler's overlap lanes cut at stage / step window edges: segments with the lanes running in each, and each lane's running total (ns) through the segment
-- Window sums come from the running totals, and the sweep runs over every rank in one order, as in
-- busy_segments.
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
    SELECT rank, t AS start_ns, CASE WHEN lead(rank) OVER o = rank THEN lead(t) OVER o END AS end_ns,
           sum(coalesce(computing, 0)) OVER r AS computing, sum(coalesce(comm, 0)) OVER r AS comm,
           sum(coalesce(not_overlapped, 0)) OVER r AS not_overlapped, sum(coalesce(free, 0)) OVER r AS free
    FROM points
    WINDOW o AS (ORDER BY rank, t), r AS (ORDER BY rank, t ROWS UNBOUNDED PRECEDING)
),
segments AS (
    SELECT rank, start_ns, end_ns, computing > 0 AS computing, comm > 0 AS comm,
           not_overlapped > 0 AS not_overlapped, free > 0 AS free,
           CASE WHEN computing > 0 THEN end_ns - start_ns ELSE 0 END AS computing_ns,
           CASE WHEN comm > 0 THEN end_ns - start_ns ELSE 0 END AS comm_ns,
           CASE WHEN not_overlapped > 0 THEN end_ns - start_ns ELSE 0 END AS not_overlapped_ns,
           CASE WHEN free > 0 THEN end_ns - start_ns ELSE 0 END AS free_ns
    FROM running
    WHERE end_ns > start_ns AND (computing > 0 OR comm > 0 OR not_overlapped > 0 OR free > 0)
),
through AS (
    SELECT *,
           sum(computing_ns) OVER w AS computing_all, sum(comm_ns) OVER w AS comm_all,
           sum(not_overlapped_ns) OVER w AS not_overlapped_all, sum(free_ns) OVER w AS free_all
    FROM segments
    WINDOW w AS (ORDER BY rank, start_ns ROWS UNBOUNDED PRECEDING)
),
offsets AS (
    SELECT rank, arg_min(computing_all - computing_ns, start_ns) AS computing_off,
           arg_min(comm_all - comm_ns, start_ns) AS comm_off,
           arg_min(not_overlapped_all - not_overlapped_ns, start_ns) AS not_overlapped_off,
           arg_min(free_all - free_ns, start_ns) AS free_off
    FROM through GROUP BY rank
)
SELECT t.rank, t.start_ns, t.end_ns, t.computing, t.comm, t.not_overlapped, t.free,
       t.computing_all - o.computing_off AS computing_through_ns,
       t.comm_all - o.comm_off AS comm_through_ns,
       t.not_overlapped_all - o.not_overlapped_off AS not_overlapped_through_ns,
       t.free_all - o.free_off AS free_through_ns
FROM through t JOIN offsets o USING (rank)
