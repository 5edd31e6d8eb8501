-- one time per profiled step: the slowest rank's step time (us, step_breakdown's step_us), which rank that was (longest_rank, of ties the lower: the rank whose step is longest, often one that waits; the rank to rebalance is rank_spread's slow_rank), and whether it is a warm-up outlier on any rank; of the ranks compared (not in ranks_apart) where there are any
WITH compared AS (
    SELECT DISTINCT rank FROM step_breakdown WHERE rank NOT IN (SELECT rank FROM ranks_apart)
)
SELECT b.step, count(*) AS ranks, max(b.step_us) AS step_us, arg_max(b.rank, [b.step_us, -b.rank]) AS longest_rank,
       coalesce(bool_or(f.outlier), false) AS outlier
FROM step_breakdown b LEFT JOIN step_flags f ON f.rank = b.rank AND f.step IS NOT DISTINCT FROM b.step
WHERE b.step_us IS NOT NULL AND (b.rank IN (SELECT rank FROM compared) OR NOT EXISTS (SELECT 1 FROM compared))
GROUP BY b.step
ORDER BY b.step
