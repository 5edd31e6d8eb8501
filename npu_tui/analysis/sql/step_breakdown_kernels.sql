-- per rank and step, from kernel intervals: computing, comm not overlapped, overlapped, free, stage, bubble (none told) and the step's time (us)
-- Time inside a step's span: running totals at its end minus those at its start (see busy_segments).
WITH sums AS (
    SELECT w.rank, w.step, w.start_ns, w.end_ns,
           coalesce(b.compute_through_ns, 0) - coalesce(a.compute_through_ns, 0) AS computing,
           coalesce(b.exposed_through_ns, 0) - coalesce(a.exposed_through_ns, 0) AS comm_not_overlapped,
           coalesce(b.overlapped_through_ns, 0) - coalesce(a.overlapped_through_ns, 0) AS overlapped
    FROM step_windows w
    ASOF LEFT JOIN busy_segments a ON w.rank = a.rank AND w.start_ns > a.start_ns
    ASOF LEFT JOIN busy_segments b ON w.rank = b.rank AND w.end_ns > b.start_ns
)
-- every segment has comm or compute running: busy = computing + comm not overlapped
SELECT rank, step, computing / 1e3 AS computing_us, comm_not_overlapped / 1e3 AS comm_not_overlapped_us,
       overlapped / 1e3 AS overlapped_us, (end_ns - start_ns - computing - comm_not_overlapped) / 1e3 AS free_us,
       (end_ns - start_ns) / 1e3 AS stage_us, NULL::DOUBLE AS bubble_us, stage_us AS step_us, 'kernels' AS source
FROM sums
