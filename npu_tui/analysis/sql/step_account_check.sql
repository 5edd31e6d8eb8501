-- per rank whose profiler wrote its own step breakdown (step_trace_time.csv, the trace's overlap lanes): how far the step account is from it, as the largest difference over the steps (warm-up outliers aside) in compute, exposed comm, free time (copies with it) or the step, as a share of the step, and whether that is past the rules' account_tolerance; a rank none of whose steps there is a step of its account is here too, with steps 0 and no deviation (not compared), and kernels: how many it has (0: none loaded)
WITH a AS (
    SELECT rank, step,
           coalesce(sum(us ORDER BY stage, part, detail) FILTER (WHERE part = 'compute'), 0) AS compute_us,
           coalesce(sum(us ORDER BY stage, part, detail) FILTER (WHERE part = 'comm_exposed'), 0) AS exposed_us,
           coalesce(sum(us ORDER BY stage, part, detail) FILTER (WHERE part IN ('free', 'copy')), 0) AS free_us,
           sum(us ORDER BY stage, part, detail) FILTER (WHERE part <> 'between') AS span_us
    FROM step_account WHERE NOT outlier GROUP BY rank, step
)
SELECT *, coalesce(deviation > (SELECT account_tolerance FROM rules_steps), false) AS differs,
       (SELECT count(*) FROM kernels k WHERE k.rank = c.rank) AS kernels
FROM (
    SELECT b.rank, any_value(b.source) AS source, count(a.rank) AS steps,
           max(greatest(abs(a.compute_us - b.computing_us), abs(a.exposed_us - b.comm_not_overlapped_us),
                        abs(a.free_us - b.free_us), abs(a.span_us - b.step_us)) / nullif(b.step_us, 0)) AS deviation
    FROM step_breakdown b LEFT JOIN a ON b.rank = a.rank AND b.step IS NOT DISTINCT FROM a.step
    -- (the profiler's own: a step its step trace lost, measured by lanes, is no check)
    WHERE b.source <> 'kernels' AND NOT (b.source = 'overlap_lanes' AND b.rank IN (SELECT rank FROM step_trace))
    GROUP BY b.rank
) c
ORDER BY rank
