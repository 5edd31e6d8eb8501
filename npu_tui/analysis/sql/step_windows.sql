-- per rank and step (NULL: no step ids), the span its time counts in: the device span of the step's kernels; on a CPU-only trace, whose kernels are the host's own ops (or that has none), the whole ProfilerStep range
-- A device step is the span of the work launched in it, as the profiler's own step_trace_time
-- counts it. A CPU-only run has no device: its step is the wall time prof.step() marked, so the
-- Python time around its ops counts too, as idle time inside the step.
WITH spans AS (
    SELECT rank, step, min(start_ns) AS start_ns, max(start_ns + dur_ns) AS end_ns, bool_and(core = 'CPU') AS host_ops
    FROM kernels GROUP BY rank, step
),
marked AS (
    SELECT rank, profiler_step(name) AS step, min(start_ns) AS start_ns, max(start_ns + dur_ns) AS end_ns
    FROM host_events
    WHERE name LIKE 'ProfilerStep#%' AND profiler_step(name) IS NOT NULL AND dur_ns > 0
      AND (rank IN (SELECT rank FROM spans WHERE host_ops) OR rank NOT IN (SELECT rank FROM spans))
    GROUP BY ALL
)
SELECT coalesce(s.rank, m.rank) AS rank, coalesce(s.step, m.step) AS step,
       CASE WHEN m.step IS NULL THEN s.start_ns ELSE least(s.start_ns, m.start_ns) END AS start_ns,
       CASE WHEN m.step IS NULL THEN s.end_ns ELSE greatest(s.end_ns, m.end_ns) END AS end_ns
FROM spans s FULL JOIN marked m ON s.rank = m.rank AND s.step IS NOT DISTINCT FROM m.step
-- kernels outside every ProfilerStep of a rank that has numbered steps belong to no step
WHERE (coalesce(s.step, m.step) IS NOT NULL
       OR coalesce(s.rank, m.rank) NOT IN (SELECT rank FROM kernels WHERE step IS NOT NULL))
  -- nor is a ProfilerStep in which no op of a rank that ran some did: the one a loop's last
  -- prof.step() opened, which runs empty until the profiler exits
  AND NOT (s.rank IS NULL AND m.rank IN (SELECT rank FROM spans))
