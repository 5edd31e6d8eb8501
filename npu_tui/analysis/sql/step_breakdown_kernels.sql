-- per rank and step, from kernel intervals: computing, comm not overlapped, overlapped, free and stage (us)
WITH clipped AS (
    -- segments are cut at step edges (see busy_segments)
    SELECT w.rank, w.step, s.comm, s.compute, s.end_ns - s.start_ns AS ns
    FROM busy_segments s ASOF JOIN step_windows w ON s.rank = w.rank AND s.start_ns >= w.start_ns
    WHERE s.start_ns < w.end_ns
),
sums AS (
    SELECT rank, step,
           coalesce(sum(ns) FILTER (WHERE compute), 0) AS computing,
           coalesce(sum(ns) FILTER (WHERE comm AND NOT compute), 0) AS comm_not_overlapped,
           coalesce(sum(ns) FILTER (WHERE comm AND compute), 0) AS overlapped,
           coalesce(sum(ns), 0) AS busy
    FROM clipped GROUP BY rank, step
)
SELECT w.rank, w.step, coalesce(s.computing, 0) / 1e3 AS computing_us,
       coalesce(s.comm_not_overlapped, 0) / 1e3 AS comm_not_overlapped_us,
       coalesce(s.overlapped, 0) / 1e3 AS overlapped_us,
       (w.end_ns - w.start_ns - coalesce(s.busy, 0)) / 1e3 AS free_us,
       (w.end_ns - w.start_ns) / 1e3 AS stage_us, 'kernels' AS source
FROM step_windows w LEFT JOIN sums s ON s.rank = w.rank AND s.step IS NOT DISTINCT FROM w.step
