-- per rank, its ten longest idle gaps (no kernel running), inside a step or between two (between_steps: it follows step, before the next), warm-up outlier steps left out as in the step account: where they are (step, stage, start µs from the rank's first kernel), how long, and what the host was running meanwhile when the trace has host events (the innermost range holding the gap's middle)
WITH k AS (
    SELECT rank, step, stage, start_ns,
           max(end_ns) OVER w AS busy_until, lag(step) OVER w AS prev_step, lag(stage) OVER w AS prev_stage
    FROM kernel_stages
    WINDOW w AS (PARTITION BY rank ORDER BY start_ns, end_ns ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
),
gaps AS MATERIALIZED (
    SELECT k.rank, k.prev_step AS step, CASE WHEN k.prev_step IS NOT DISTINCT FROM k.step THEN k.prev_stage END AS stage,
           k.prev_step IS DISTINCT FROM k.step AS between_steps,
           k.busy_until AS start_ns, k.start_ns AS end_ns
    FROM k LEFT JOIN step_flags f ON f.rank = k.rank AND f.step = k.prev_step
    WHERE k.start_ns > k.busy_until AND NOT coalesce(f.outlier, false)
    QUALIFY row_number() OVER (PARTITION BY k.rank ORDER BY k.start_ns - k.busy_until DESC, k.start_ns) <= 10
),
host AS (
    SELECT g.rank, g.start_ns, arg_min(h.name, h.dur_ns) AS host_range
    FROM gaps g JOIN host_events h
      ON h.rank = g.rank AND h.start_ns <= (g.start_ns + g.end_ns) // 2 AND h.start_ns + h.dur_ns >= (g.start_ns + g.end_ns) // 2
    WHERE h.dur_ns > 0
    GROUP BY g.rank, g.start_ns
)
SELECT g.rank, g.step, g.stage, g.between_steps, (g.start_ns - f.t0) / 1e3 AS start_us, (g.end_ns - g.start_ns) / 1e3 AS gap_us,
       h.host_range
FROM gaps g
JOIN (SELECT rank, min(start_ns) AS t0 FROM kernels GROUP BY rank) f USING (rank)
LEFT JOIN host h USING (rank, start_ns)
ORDER BY g.rank, gap_us DESC
