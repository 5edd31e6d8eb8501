-- findings: one per rule and stage, with the ranks it fired on (the most affected first), and the worst rank's value, cause, direction, docs and projected saving per step (us); ordered by that saving
SELECT rule, stage, any_value(metric) AS metric, any_value(category) AS category,
       list(rank ORDER BY value DESC, rank) AS ranks, arg_max(rank, value) AS rank, max(value) AS value,
       any_value(threshold) AS threshold, arg_max(cause, value) AS cause, arg_max(direction, value) AS direction,
       arg_max(docs, value) AS docs, arg_max(estimate, value) AS estimate, arg_max(waited_for, value) AS waited_for,
       arg_max(saving_us, value) AS saving_us, min(ord) AS ord
FROM finding_ranks
GROUP BY rule, stage
ORDER BY saving_us DESC NULLS LAST, ord
