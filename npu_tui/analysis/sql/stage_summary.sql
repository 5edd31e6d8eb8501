-- per rank and stage: first start, last end, wall (total window length), kernel time and count, method, confidence
SELECT w.rank, w.stage, min(w.start_ns) / 1e3 AS start_us, max(w.end_ns) / 1e3 AS end_us,
       sum(w.end_ns - w.start_ns) / 1e3 AS wall_us, sum(w.kernel_time_us ORDER BY w.start_ns, w.window_no) AS kernel_time_us,
       sum(w.kernel_count) AS kernel_count, count(*) AS windows,
       any_value(w.method) AS method, any_value(w.confidence) AS confidence
FROM stage_windows w
LEFT JOIN rules_order o ON o.kind = 'stage' AND o.name = w.stage
GROUP BY w.rank, w.stage
ORDER BY w.rank, any_value(o.ord) NULLS LAST, w.stage
