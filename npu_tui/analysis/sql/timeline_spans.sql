-- what the Timeline draws, per rank: lane 0 the stage windows, lanes 1-4 the overlap lanes (computing, comm, exposed: comm not overlapped, free: the profiler's where it wrote them and the rank loaded whole, else from the kernels), lane 5 device memory (cat 'memory N': N eighths of the rank's peak, from memory_series), lane 10 + n the kernels of the n-th device stream; spans [start_ns, end_ns) and what colours them (cat: stage, lane or category)
-- From the kernels, as the step account counts them (busy_segments): computing is compute running,
-- comm is comm running, exposed is comm with no compute, free is nothing running
-- between the rank's first and last busy moment. A rank not loaded whole is drawn from its kernels
-- too, as comm_exposure measures it: its trace cut beside a whole kernel file leaves lanes that stop
-- at the cut.
WITH lane_ranks AS (
    SELECT DISTINCT rank FROM overlap_lanes
    EXCEPT SELECT rank FROM ranks_apart WHERE why = 'not loaded whole'
),
streams AS (
    SELECT rank, stream_id, 9 + row_number() OVER (PARTITION BY rank ORDER BY stream_id NULLS LAST) AS lane_no
    FROM (SELECT DISTINCT rank, stream_id FROM kernels)
),
busy AS (
    SELECT rank, start_ns, end_ns, compute, comm,
           lead(start_ns) OVER (PARTITION BY rank ORDER BY start_ns) AS next_ns
    FROM busy_segments
    WHERE rank NOT IN (SELECT rank FROM lane_ranks)
)
SELECT rank, 0 AS lane_no, 'stage' AS lane, NULL::BIGINT AS stream_id, stage AS cat, start_ns, end_ns
FROM stage_windows
UNION ALL
SELECT rank, l.lane_no, l.label, NULL, l.label, o.start_ns, o.start_ns + o.dur_ns
FROM overlap_lanes o
JOIN (VALUES ('Computing', 1, 'computing'), ('Communication', 2, 'comm'),
             ('Communication(Not Overlapped)', 3, 'exposed'), ('Free', 4, 'free')) l(lane, lane_no, label)
  USING (lane)
WHERE o.dur_ns > 0 AND o.rank IN (SELECT rank FROM lane_ranks)
UNION ALL
SELECT rank, 1, 'computing', NULL, 'computing', start_ns, end_ns FROM busy WHERE compute
UNION ALL
SELECT rank, 2, 'comm', NULL, 'comm', start_ns, end_ns FROM busy WHERE comm
UNION ALL
SELECT rank, 3, 'exposed', NULL, 'exposed', start_ns, end_ns FROM busy WHERE comm AND NOT compute
UNION ALL
SELECT rank, 4, 'free', NULL, 'free', end_ns, next_ns FROM busy WHERE next_ns > end_ns
UNION ALL
-- each memory sample holds until the next one, on the device's clock as memory_series places it
SELECT rank, 5, 'memory', NULL, 'memory ' || greatest(1, least(8, ceil(8 * mb / nullif(peak, 0))))::INTEGER, at_ns, next_ns
FROM (SELECT rank, at_ns, coalesce(allocated_mb, reserved_mb) AS mb,
             lead(at_ns) OVER (PARTITION BY rank ORDER BY at_ns, ts_ns) AS next_ns,
             max(coalesce(allocated_mb, reserved_mb)) OVER (PARTITION BY rank) AS peak
      FROM memory_series)
WHERE next_ns > at_ns AND mb IS NOT NULL
UNION ALL
SELECT k.rank, s.lane_no, coalesce('stream ' || k.stream_id, 'no stream'), k.stream_id, k.category, k.start_ns, k.end_ns
FROM kernel_stages k JOIN streams s ON s.rank = k.rank AND s.stream_id IS NOT DISTINCT FROM k.stream_id
WHERE k.dur_ns > 0
