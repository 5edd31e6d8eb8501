-- per operator (identity without per-call suffixes) over every rank and stage: type, category, calls and time (us); what a diff pairs
SELECT op, any_value(type) AS type, any_value(category) AS category, sum(count) AS count,
       sum(time_ns) / 1e3 AS total_us
FROM top_operators
GROUP BY op
