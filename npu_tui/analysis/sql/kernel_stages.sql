-- every kernel with category, stage (the window holding its start; outside every window: Other), window_no, method, confidence
-- A kernel's window depends on its rank and start only, so it is placed once per distinct start
-- (narrow rows: sorting whole kernels costs seconds at a million) and joined to the kernels.
WITH cfg AS (SELECT * FROM rules_stages),
starts AS (SELECT DISTINCT rank, start_ns FROM kernels),
placed AS (
    SELECT s.rank, s.start_ns,
           CASE WHEN s.start_ns < w.end_ns THEN w.win END AS win,
           CASE WHEN s.start_ns < w.end_ns THEN w.stage END AS window_stage,
           CASE WHEN s.start_ns < w.end_ns THEN w.confidence END AS window_confidence,
           w.method AS near_method, w.confidence AS near_confidence
    FROM starts s
    ASOF LEFT JOIN stage_windows_raw w ON s.rank = w.rank AND s.start_ns >= w.start_ns
),
ordered AS (
    SELECT p.rank, p.start_ns, p.win,
           coalesce(p.window_stage, cfg.rest_stage) AS stage,
           -- a rank has one method; outside the windows, the rank's lowest confidence
           max(p.near_method) OVER (PARTITION BY p.rank) AS method,
           coalesce(p.window_confidence,
                    min(p.near_confidence) OVER (PARTITION BY p.rank)) AS confidence,
           (p.win IS DISTINCT FROM lag(p.win) OVER (PARTITION BY p.rank ORDER BY p.start_ns))::INTEGER AS changed
    FROM placed p, cfg
),
-- Kernels outside every window form windows of their own: the runs between detected windows.
-- Kernels starting together share a window, so a run never starts inside a group of equal starts.
numbered AS (
    SELECT * EXCLUDE (changed),
           sum(changed) OVER (PARTITION BY rank ORDER BY start_ns ROWS UNBOUNDED PRECEDING) AS window_no
    FROM ordered
)
SELECT k.*, n.win, n.stage, n.method, n.confidence, n.window_no
FROM kernel_categories k JOIN numbered n ON n.rank = k.rank AND n.start_ns = k.start_ns
