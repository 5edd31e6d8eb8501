-- the Operators drill-down: each type's operators (identity without per-call suffixes) by input shapes, over every rank and stage
-- Sums of integer ns: exact, so the same whatever order parallel threads add them in.
SELECT type, op, input_shapes, sum(count) AS count, sum(time_ns) / 1e3 AS total_us,
       sum(time_ns) / 1e3 / sum(count) AS mean_us, max(max_us) AS max_us,
       sum(time_ns) / nullif(sum(sum(time_ns)) OVER (), 0) AS share
FROM top_operators
GROUP BY type, op, input_shapes
