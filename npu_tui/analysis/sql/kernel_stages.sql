-- every kernel with category and stage (the window holding its start; outside every window: Other) and window_no
WITH cfg AS (SELECT * FROM rules_stages),
placed AS (
    SELECT k.*,
           CASE WHEN k.start_ns < w.end_ns THEN w.win END AS win,
           CASE WHEN k.start_ns < w.end_ns THEN w.stage END AS window_stage
    FROM kernel_categories k
    ASOF LEFT JOIN stage_windows_raw w ON k.rank = w.rank AND k.start_ns >= w.start_ns
),
ordered AS (
    SELECT p.* EXCLUDE (window_stage), coalesce(p.window_stage, cfg.rest_stage) AS stage,
           (p.win IS DISTINCT FROM lag(p.win) OVER (PARTITION BY p.rank ORDER BY p.start_ns, p.end_ns, p.name))::INTEGER
               AS changed
    FROM placed p, cfg
)
-- Kernels outside every window form windows of their own: the runs between detected windows.
SELECT * EXCLUDE (changed),
       sum(changed) OVER (PARTITION BY rank ORDER BY start_ns, end_ns, name ROWS UNBOUNDED PRECEDING) AS window_no
FROM ordered
