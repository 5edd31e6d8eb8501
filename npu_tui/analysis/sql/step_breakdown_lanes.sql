-- per rank and step, from the profiler's overlap lanes clipped to the step's span: computing, comm not overlapped, overlapped, free, stage, bubble (none told) and the step's time (us)
WITH spans AS (
    -- ranks with lanes but no kernels: one span over the lanes
    SELECT rank, step, start_ns, end_ns FROM step_windows
    UNION ALL
    SELECT rank, NULL, min(start_ns), max(start_ns + dur_ns) FROM overlap_lanes
    WHERE rank NOT IN (SELECT rank FROM step_windows) GROUP BY rank
),
-- time inside a span: running totals at its end minus those at its start (see lane_segments)
sums AS (
    SELECT w.rank, w.step,
           coalesce(b.computing_through_ns, 0) - coalesce(a.computing_through_ns, 0) AS computing,
           coalesce(b.not_overlapped_through_ns, 0) - coalesce(a.not_overlapped_through_ns, 0) AS not_overlapped,
           coalesce(b.comm_through_ns, 0) - coalesce(a.comm_through_ns, 0) AS comm,
           coalesce(b.free_through_ns, 0) - coalesce(a.free_through_ns, 0) AS free
    FROM spans w
    ASOF LEFT JOIN lane_segments a ON w.rank = a.rank AND w.start_ns > a.start_ns
    ASOF LEFT JOIN lane_segments b ON w.rank = b.rank AND w.end_ns > b.start_ns
)
-- The profiler's own Stage is Computing + Communication(Not Overlapped) + Free. Spans no lane
-- segment falls in give no row (every segment is in some lane and has a length).
SELECT rank, step, computing / 1e3 AS computing_us, not_overlapped / 1e3 AS comm_not_overlapped_us,
       greatest(comm - not_overlapped, 0) / 1e3 AS overlapped_us, free / 1e3 AS free_us,
       (computing + not_overlapped + free) / 1e3 AS stage_us, NULL::DOUBLE AS bubble_us, stage_us AS step_us,
       'overlap_lanes' AS source
FROM sums
WHERE computing + not_overlapped + comm + free > 0
