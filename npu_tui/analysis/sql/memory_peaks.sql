-- per rank and stage (stage NULL: the whole profile): the peak allocated and reserved memory (MB), where the reserved peak is (its stage), the allocated memory at that moment, and how far the DiT forwards' peaks grew from the first to the last (growth: a share of the first)
WITH cfg AS (SELECT dit_stage FROM rules_stages),
whole AS (
    SELECT rank, NULL::VARCHAR AS stage, max(allocated_mb) AS peak_allocated_mb, max(reserved_mb) AS peak_reserved_mb,
           -- the reserved peak, its allocated breaking ties (a CPU allocator reserves nothing)
           arg_max(stage, [coalesce(reserved_mb, 0), coalesce(allocated_mb, 0)]) AS peak_stage,
           arg_max(allocated_mb, [coalesce(reserved_mb, 0), coalesce(allocated_mb, 0)]) AS allocated_at_peak_mb
    FROM memory_series GROUP BY rank
),
staged AS (
    SELECT rank, stage, max(allocated_mb), max(reserved_mb), stage,
           arg_max(allocated_mb, [coalesce(reserved_mb, 0), coalesce(allocated_mb, 0)])
    FROM memory_series WHERE stage IS NOT NULL GROUP BY rank, stage
),
growth AS (
    SELECT w.rank,
           (arg_max(w.peak_allocated_mb, w.forward) - arg_min(w.peak_allocated_mb, w.forward))
             / nullif(arg_min(w.peak_allocated_mb, w.forward), 0) AS growth,
           count(*) AS forwards
    FROM memory_windows w, cfg WHERE w.stage = cfg.dit_stage AND w.peak_allocated_mb IS NOT NULL
    GROUP BY w.rank HAVING count(*) >= 2
)
SELECT p.*, CASE WHEN p.stage IS NULL THEN g.growth END AS growth, CASE WHEN p.stage IS NULL THEN g.forwards END AS forwards,
       -- reserved but not allocated at the reserved peak: what the caching allocator holds idle
       (p.peak_reserved_mb - p.allocated_at_peak_mb) / nullif(p.peak_reserved_mb, 0) AS idle_reserved_share
FROM (SELECT * FROM whole UNION ALL SELECT * FROM staged) p
LEFT JOIN growth g USING (rank)
