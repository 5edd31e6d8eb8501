-- per rank and step: whether it is a warm-up outlier (one of the rank's first steps, each taking more than warmup_factor times the median step); outliers are left out of every mean
WITH s AS (
    SELECT b.rank, b.step, b.step_us,
           b.step_us > r.warmup_factor * median(b.step_us) OVER (PARTITION BY b.rank) AND count(*) OVER (PARTITION BY b.rank) >= 3
               AS slow
    FROM step_breakdown b, rules_steps r
    WHERE b.step IS NOT NULL
)
SELECT rank, step, step_us,
       bool_and(slow) OVER (PARTITION BY rank ORDER BY step ROWS UNBOUNDED PRECEDING) AS outlier,
       step_us / median(step_us) OVER (PARTITION BY rank) AS vs_median
FROM s
