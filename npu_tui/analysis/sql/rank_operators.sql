-- the Ranks drill-down: one rank's operators (type, identity, input shapes) with count, total, mean and longest call (us) and share of that rank's kernel time
-- Sums of integer ns: exact, so the same whatever order parallel threads add them in.
SELECT rank, type, op, input_shapes, sum(count) AS count, sum(time_ns) / 1e3 AS total_us,
       sum(time_ns) / 1e3 / sum(count) AS mean_us, max(max_us) AS max_us,
       sum(time_ns) / nullif(sum(sum(time_ns)) OVER (PARTITION BY rank), 0) AS share
FROM top_operators
GROUP BY rank, type, op, input_shapes
