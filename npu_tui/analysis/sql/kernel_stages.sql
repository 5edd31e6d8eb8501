-- every kernel with category, stage (the window holding its start; outside every window: Other), window_no, method, confidence
WITH cfg AS (SELECT * FROM rules_stages),
placed AS (
    SELECT k.*,
           CASE WHEN k.start_ns < w.end_ns THEN w.win END AS win,
           CASE WHEN k.start_ns < w.end_ns THEN w.stage END AS window_stage,
           CASE WHEN k.start_ns < w.end_ns THEN w.confidence END AS window_confidence,
           w.method AS near_method, w.confidence AS near_confidence
    FROM kernel_categories k
    ASOF LEFT JOIN stage_windows_raw w ON k.rank = w.rank AND k.start_ns >= w.start_ns
),
ordered AS (
    SELECT p.* EXCLUDE (window_stage, window_confidence, near_method, near_confidence),
           coalesce(p.window_stage, cfg.rest_stage) AS stage,
           -- a rank has one method; outside the windows, the rank's lowest confidence
           max(p.near_method) OVER (PARTITION BY p.rank) AS method,
           coalesce(p.window_confidence,
                    min(p.near_confidence) OVER (PARTITION BY p.rank)) AS confidence,
           (p.win IS DISTINCT FROM lag(p.win) OVER (PARTITION BY p.rank ORDER BY p.start_ns, p.end_ns, p.name))::INTEGER
               AS changed
    FROM placed p, cfg
)
-- Kernels outside every window form windows of their own: the runs between detected windows.
SELECT * EXCLUDE (changed),
       sum(changed) OVER (PARTITION BY rank ORDER BY start_ns, end_ns, name ROWS UNBOUNDED PRECEDING) AS window_no
FROM ordered
