-- per rank and stage window (each DiT forward, the VAE, ...): its number among the windows of its stage (forward), the peak allocated and reserved (MB) inside it and when (ns), from memory_series
SELECT rank, stage, window_no,
       dense_rank() OVER (PARTITION BY rank, stage ORDER BY window_no) AS forward,
       max(allocated_mb) AS peak_allocated_mb, max(reserved_mb) AS peak_reserved_mb,
       arg_max(at_ns, coalesce(allocated_mb, reserved_mb)) AS peak_at_ns, count(*) AS samples
FROM memory_series
WHERE window_no IS NOT NULL
GROUP BY rank, stage, window_no
