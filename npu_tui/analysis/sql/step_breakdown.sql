-- per rank and step: computing, comm not overlapped, overlapped, free, stage, bubble and the step's time (us) from step_trace_time.csv, else overlap lanes, else kernels
-- The profiler's Stage leaves out a pipeline's bubble (its receives): the step is the two together.
WITH traced AS (
    SELECT rank, step, computing_us, comm_not_overlapped_us, overlapped_us, free_us, stage_us, bubble_us,
           stage_us + coalesce(bubble_us, 0) AS step_us, coalesce(source, 'step_trace') AS source
    FROM step_trace
),
laned AS (
    SELECT * FROM step_breakdown_lanes WHERE rank NOT IN (SELECT rank FROM traced)
),
kerneled AS (
    SELECT * FROM step_breakdown_kernels
    WHERE rank NOT IN (SELECT rank FROM traced UNION ALL SELECT rank FROM laned)
)
SELECT * FROM traced UNION ALL SELECT * FROM laned UNION ALL SELECT * FROM kerneled
ORDER BY rank, step
