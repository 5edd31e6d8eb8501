-- per rank: the step account per step, the mean over the profiled steps that are not warm-up outliers (steps: how many; left_out: the outliers; between: the mean gap to the next step), and each part's share of the step with the gap after it
WITH steps AS (
    SELECT rank, count(*) FILTER (WHERE NOT outlier) AS steps, count(*) FILTER (WHERE outlier) AS left_out
    FROM (SELECT DISTINCT rank, step, outlier FROM step_account WHERE part <> 'between') GROUP BY rank
)
SELECT rank, stage, part, detail, us_per_step,
       us_per_step / sum(us_per_step) OVER (PARTITION BY rank ORDER BY stage, part, detail
                                            ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS share,
       steps, left_out
FROM (
    -- the time between steps: the mean gap (the last step has none after it)
    SELECT a.rank, a.stage, a.part, a.detail,
           sum(a.us ORDER BY a.step) / CASE WHEN a.part = 'between' THEN count(DISTINCT a.step) ELSE any_value(s.steps) END AS us_per_step,
           any_value(s.steps) AS steps, any_value(s.left_out) AS left_out
    FROM step_account a JOIN steps s USING (rank)
    WHERE NOT a.outlier
    GROUP BY a.rank, a.stage, a.part, a.detail
)
