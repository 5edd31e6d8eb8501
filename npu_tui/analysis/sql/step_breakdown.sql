-- per rank and step: computing, comm not overlapped, overlapped, free, stage, bubble and the step's time (us) from step_trace_time.csv, else overlap lanes, else kernels (a step the rank's step trace lost, a row that did not read, from those too); for a rank whose own files are not here, from msprof-analyze's cluster_step_trace_time.csv
-- The profiler's Stage leaves out a pipeline's bubble (its receives): the step is the two together.
WITH traced AS (
    SELECT rank, step, computing_us, comm_not_overlapped_us, overlapped_us, free_us, stage_us, bubble_us,
           stage_us + coalesce(bubble_us, 0) AS step_us, coalesce(source, 'step_trace') AS source
    FROM step_trace
),
-- A step of the rank's kernels its step trace does not hold (its row skipped) is measured as a rank
-- without a step trace is: every step the step account counts is counted here too.
lost AS (
    SELECT DISTINCT rank, step FROM kernels
    WHERE rank IN (SELECT rank FROM traced) AND step IS NOT NULL
    EXCEPT SELECT rank, step FROM traced
),
laned AS (
    SELECT * FROM step_breakdown_lanes l
    WHERE l.rank NOT IN (SELECT rank FROM traced)
       OR EXISTS (SELECT 1 FROM lost o WHERE o.rank = l.rank AND o.step = l.step)
),
kerneled AS (
    SELECT * FROM step_breakdown_kernels k
    WHERE CASE WHEN k.rank IN (SELECT rank FROM traced)
               THEN EXISTS (SELECT 1 FROM lost o WHERE o.rank = k.rank AND o.step = k.step)
                    AND NOT EXISTS (SELECT 1 FROM laned l WHERE l.rank = k.rank AND l.step = k.step)
               ELSE k.rank NOT IN (SELECT rank FROM laned) END
),
-- msprof-analyze copies each rank's step trace; its Stage is the HCCL span in MindSpore's, so the
-- step is what the lanes partition it into: computing + comm not overlapped + free (an empty cell
-- none, as MindSpore's own step trace reads it).
clustered AS (
    SELECT rank, step, computing_us, comm_not_overlapped_us, overlapped_us, free_us,
           step_us - coalesce(bubble_us, 0) AS stage_us, bubble_us, step_us, 'cluster_step_trace' AS source
    FROM (SELECT * REPLACE (coalesce(comm_not_overlapped_us, 0) AS comm_not_overlapped_us, coalesce(free_us, 0) AS free_us),
                 computing_us + coalesce(comm_not_overlapped_us, 0) + coalesce(free_us, 0) AS step_us
          FROM cluster_step_trace
          WHERE type = 'rank' AND rank IS NOT NULL)
    WHERE rank NOT IN (SELECT rank FROM ranks UNION ALL SELECT rank FROM kernels)
      -- (msprof's ranks without a rank id msprof-analyze numbers in order, npu-tui by their device:
      -- a rank of its numbers may be one loaded; as health.STAND_INS)
      AND NOT EXISTS (SELECT 1 FROM ranks WHERE source_format = 'msprof')
)
SELECT * FROM traced UNION ALL SELECT * FROM laned UNION ALL SELECT * FROM kerneled UNION ALL SELECT * FROM clustered
ORDER BY rank, step
