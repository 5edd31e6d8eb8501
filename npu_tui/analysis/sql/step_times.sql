-- one time per profiled step: the slowest rank's step time (us, step_breakdown's stage) and which rank that was
SELECT step, count(*) AS ranks, max(stage_us) AS step_us, arg_max(rank, stage_us) AS slow_rank
FROM step_breakdown
WHERE stage_us IS NOT NULL
GROUP BY step
ORDER BY step
