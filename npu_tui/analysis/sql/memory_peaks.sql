-- per rank and stage (stage NULL: the whole profile): the peak allocated and reserved memory (MB), where the reserved peak is (its stage), the allocated memory at that moment, how far the DiT forwards' peaks grew (growth: the later half's mean over the earlier half's, less one), and the device's capacity where the profile states it with the peak's share of it
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
-- Halves, not the first forward against the last: one forward that allocates a workspace once
-- (or a warm-up step) is not growth; memory kept forward after forward lifts the whole later half.
dit AS (
    SELECT w.rank, coalesce(w.peak_allocated_mb, w.peak_reserved_mb) AS mb, w.forward,
           count(*) OVER (PARTITION BY w.rank) AS forwards
    FROM memory_windows w, cfg WHERE w.stage = cfg.dit_stage AND coalesce(w.peak_allocated_mb, w.peak_reserved_mb) IS NOT NULL
),
growth AS (
    SELECT rank, avg(mb) FILTER (WHERE forward > forwards - forwards // 2)
                 / nullif(avg(mb) FILTER (WHERE forward <= forwards // 2), 0) - 1 AS growth,
           any_value(forwards) AS forwards
    FROM dit GROUP BY rank HAVING any_value(forwards) >= 2
)
SELECT p.*, CASE WHEN p.stage IS NULL THEN g.growth END AS growth, CASE WHEN p.stage IS NULL THEN g.forwards END AS forwards,
       -- reserved but not allocated at the reserved peak: what the caching allocator holds idle
       (p.peak_reserved_mb - p.allocated_at_peak_mb) / nullif(p.peak_reserved_mb, 0) AS idle_reserved_share,
       c.capacity_mb,
       greatest(coalesce(p.peak_reserved_mb, 0), coalesce(p.peak_allocated_mb, 0)) / nullif(c.capacity_mb, 0) AS capacity_share
FROM (SELECT * FROM whole UNION ALL SELECT * FROM staged) p
LEFT JOIN growth g USING (rank)
LEFT JOIN (SELECT rank, max(capacity_mb) AS capacity_mb FROM device_memory GROUP BY rank) c USING (rank)
