-- stage windows per rank, each from its first kernel start to its last kernel end, with detection method and confidence, and the transformer forwards a DiT window holds (stage_windows_raw)
SELECT s.* EXCLUDE (win), w.forwards
FROM (SELECT rank, window_no, stage, min(start_ns) AS start_ns, max(end_ns) AS end_ns,
             min(start_ns) / 1e3 AS start_us, max(end_ns) / 1e3 AS end_us,
             (max(end_ns) - min(start_ns)) / 1e3 AS wall_us,
             count(*) AS kernel_count, sum(dur_ns) / 1e3 AS kernel_time_us,
             any_value(method) AS method, any_value(confidence) AS confidence, any_value(win) AS win
      FROM kernel_stages
      GROUP BY rank, window_no, stage) s
LEFT JOIN stage_windows_raw w ON w.rank = s.rank AND w.win = s.win
