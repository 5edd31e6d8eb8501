-- across ranks: min, max and mean of step time and of exposed comm per step, spread = (max - min) / mean, and the slow rank
WITH m AS (
    SELECT rank, 'step_time' AS measure, step_time_us AS v FROM rank_summary
    UNION ALL
    SELECT rank, 'exposed_comm', exposed_comm_us FROM rank_summary
)
SELECT measure, count(*) AS ranks, min(v) AS min_us, max(v) AS max_us, avg(v) AS mean_us,
       CASE WHEN avg(v) > 0 THEN (max(v) - min(v)) / avg(v) ELSE 0.0 END AS spread,
       arg_max(rank, v) AS slow_rank
FROM m WHERE v IS NOT NULL
GROUP BY measure
HAVING count(*) >= 2
ORDER BY measure DESC
