-- the Ranks drill-down: one rank's operators (type, identity, input shapes) with count, total, mean and longest call (us) and share of that rank's kernel time
SELECT rank, type, op, input_shapes, sum(count) AS count, sum(time_us) AS total_us,
       sum(time_us) / sum(count) AS mean_us, max(max_us) AS max_us,
       sum(time_us) / nullif(sum(sum(time_us)) OVER (PARTITION BY rank), 0) AS share
FROM top_operators
GROUP BY rank, type, op, input_shapes
