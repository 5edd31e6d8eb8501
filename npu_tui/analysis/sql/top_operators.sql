-- per rank, stage and category: operators by type and input shapes, with count, time and share of the stage's kernel time
WITH g AS (
    SELECT rank, stage, category, type, input_shapes, any_value(name) AS example_name,
           count(*) AS count, sum(dur_ns) AS ns
    FROM kernel_stages GROUP BY rank, stage, category, type, input_shapes
)
SELECT rank, stage, category, type, input_shapes, example_name, count, ns / 1e3 AS time_us,
       ns / sum(ns) OVER (PARTITION BY rank, stage) AS share
FROM g
ORDER BY rank, stage, ns DESC
