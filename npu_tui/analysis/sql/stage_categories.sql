-- per rank, stage and category: kernel time, count and share of the stage's kernel time (the shares sum to 1)
WITH t AS (
    SELECT rank, stage, category, sum(dur_ns) AS ns, count(*) AS n FROM kernel_stages GROUP BY ALL
),
stage_total AS (SELECT rank, stage, sum(ns) AS total FROM t GROUP BY ALL),
cats AS (
    SELECT name AS category, ord FROM rules_order WHERE kind = 'category'
    UNION ALL
    SELECT DISTINCT category, 1000 FROM rules_categories
    WHERE category NOT IN (SELECT name FROM rules_order WHERE kind = 'category')
)
SELECT s.rank, s.stage, c.category, coalesce(t.ns, 0) / 1e3 AS time_us, coalesce(t.n, 0) AS count,
       CASE WHEN s.total > 0 THEN coalesce(t.ns, 0) / s.total ELSE 0.0 END AS share
FROM stage_total s
CROSS JOIN cats c
LEFT JOIN t ON t.rank = s.rank AND t.stage = s.stage AND t.category = c.category
LEFT JOIN rules_order o ON o.kind = 'stage' AND o.name = s.stage
ORDER BY s.rank, o.ord NULLS LAST, s.stage, c.ord, c.category
