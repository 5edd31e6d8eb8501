-- per rank, stage and category: operators by type, identity (op) and input shapes, with count, time, longest call, share of the stage's kernel time and whether they are memory copies; time_ns is time_us to the ns, for sums
WITH g AS (
    SELECT rank, stage, category, type_key(type) AS type, op, input_shapes, is_copy,
           count(*) AS count, sum(dur_ns) AS ns, max(dur_ns) AS max_ns
    FROM kernel_stages GROUP BY ALL
)
SELECT rank, stage, category, type, op, input_shapes, is_copy, count, ns / 1e3 AS time_us, max_ns / 1e3 AS max_us,
       ns / sum(ns) OVER (PARTITION BY rank, stage) AS share, ns AS time_ns
FROM g
ORDER BY rank, stage, ns DESC
