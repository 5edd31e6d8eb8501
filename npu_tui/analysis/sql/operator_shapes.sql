-- the Operators drill-down: each type's operators (identity without per-call suffixes) by input shapes, over every rank and stage
SELECT type, op, input_shapes, sum(count) AS count, sum(time_us) AS total_us,
       sum(time_us) / sum(count) AS mean_us, max(max_us) AS max_us,
       sum(time_us) / nullif(sum(sum(time_us)) OVER (), 0) AS share
FROM top_operators
GROUP BY type, op, input_shapes
