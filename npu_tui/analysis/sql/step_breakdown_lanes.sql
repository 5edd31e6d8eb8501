-- per rank and step, from the profiler's overlap lanes clipped to the step's span: computing, comm not overlapped, overlapped, free, stage (us)
WITH spans AS (
    -- ranks with lanes but no kernels: one span over the lanes
    SELECT rank, step, start_ns, end_ns FROM step_windows
    UNION ALL
    SELECT rank, NULL, min(start_ns), max(start_ns + dur_ns) FROM overlap_lanes
    WHERE rank NOT IN (SELECT rank FROM step_windows) GROUP BY rank
),
clipped AS (
    -- lane segments are cut at step edges (see lane_segments)
    SELECT w.rank, w.step, s.computing, s.comm, s.not_overlapped, s.free, s.end_ns - s.start_ns AS ns
    FROM lane_segments s ASOF JOIN spans w ON s.rank = w.rank AND s.start_ns >= w.start_ns
    WHERE s.start_ns < w.end_ns
),
sums AS (
    SELECT rank, step,
           coalesce(sum(ns) FILTER (WHERE computing), 0) AS computing,
           coalesce(sum(ns) FILTER (WHERE not_overlapped), 0) AS not_overlapped,
           coalesce(sum(ns) FILTER (WHERE comm), 0) AS comm,
           coalesce(sum(ns) FILTER (WHERE free), 0) AS free
    FROM clipped GROUP BY rank, step
)
-- The profiler's own Stage is Computing + Communication(Not Overlapped) + Free.
SELECT rank, step, computing / 1e3 AS computing_us, not_overlapped / 1e3 AS comm_not_overlapped_us,
       greatest(comm - not_overlapped, 0) / 1e3 AS overlapped_us, free / 1e3 AS free_us,
       (computing + not_overlapped + free) / 1e3 AS stage_us, 'overlap_lanes' AS source
FROM sums
