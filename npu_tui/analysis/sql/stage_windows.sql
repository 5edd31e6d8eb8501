-- stage windows per rank, each from its first kernel start to its last kernel end, with detection method and confidence
WITH per_rank AS (
    SELECT rank, any_value(method) AS method,
           arg_min(confidence, CASE confidence WHEN 'low' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END) AS confidence
    FROM stage_windows_raw GROUP BY rank
)
SELECT k.rank, k.window_no, k.stage, min(k.start_ns) AS start_ns, max(k.end_ns) AS end_ns,
       min(k.start_ns) / 1e3 AS start_us, max(k.end_ns) / 1e3 AS end_us,
       (max(k.end_ns) - min(k.start_ns)) / 1e3 AS wall_us,
       count(*) AS kernel_count, sum(k.dur_ns) / 1e3 AS kernel_time_us,
       coalesce(any_value(w.method), any_value(r.method)) AS method,
       coalesce(any_value(w.confidence), any_value(r.confidence)) AS confidence
FROM kernel_stages k
LEFT JOIN stage_windows_raw w ON w.rank = k.rank AND w.win = k.win
LEFT JOIN per_rank r ON r.rank = k.rank
GROUP BY k.rank, k.window_no, k.stage
