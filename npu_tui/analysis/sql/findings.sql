-- findings: one per rule and stage, with the ranks it fired on (the most affected first), and the worst rank's value, cause, direction, docs and projected saving per step (us); ordered by that saving; per: 'step', or 'profile' where the worst rank's profile marks no steps (its one step is the whole profile)
-- The worst rank is the first of ranks: the highest value, then the largest saving, then the lowest
-- rank, of the ranks compared (ranks_apart: not loaded whole, another run's) before the others.
-- Every field comes from its row: ranks often tie (64 ranks of one job, the same forwards), and
-- arg_max over ties took each field from whichever row came first on that run.
WITH ranked AS (
    SELECT r.*, row_number() OVER (PARTITION BY r.rule, r.stage
                                   ORDER BY r.apart IS NOT NULL, r.value DESC, r.saving_us DESC NULLS LAST, r.rank) AS nth
    FROM finding_ranks r
),
fired AS (
    SELECT rule, stage, list(rank ORDER BY nth) AS ranks, min(ord) AS ord FROM ranked GROUP BY rule, stage
)
SELECT w.rule, w.stage, w.metric, w.category, f.ranks, w.rank, w.value, w.threshold, w.cause, w.direction,
       w.docs, w.estimate, w.waited_for, w.saving_us, f.ord, coalesce(s.per, 'step') AS per
FROM ranked w JOIN fired f ON f.rule = w.rule AND f.stage IS NOT DISTINCT FROM w.stage
LEFT JOIN rank_summary s ON s.rank = w.rank
WHERE w.nth = 1
ORDER BY w.saving_us DESC NULLS LAST, f.ord
