-- per rank and step, kernels in time order with the running sums stage_signature searches (stored as a table)
-- score: (VAE signature kernel ? 1 : 0) - vae_share, times duration (comm: 0); p0 / p1: its running
-- sum before / through the kernel; gap: idle time before the kernel.
-- Compute kernels only: ci numbers them in order; g1..g4 hash the kernel's (type, input shapes) with
-- those of the next zero to three compute kernels (stage_signature's forward boundaries).
-- All from one sort of the kernels (same partition and order).
WITH cfg AS (SELECT * FROM rules_stages),
sig AS MATERIALIZED (
    SELECT type, name,
           regexp_matches(coalesce(type, ''), cfg.vae_pattern, 'i')
             OR regexp_matches(regexp_replace(coalesce(name, ''), '[_0-9]+$', ''), cfg.vae_pattern, 'i') AS vae_sig
    FROM (SELECT DISTINCT type, name FROM kernels), cfg
),
k AS (
    SELECT c.rank, coalesce(c.step, -1) AS part, c.start_ns, c.end_ns, c.dur_ns, c.category, c.is_comm,
           coalesce(c.type, '') AS t, coalesce(c.input_shapes, '') AS shapes, s.vae_sig,
           CASE WHEN c.is_comm THEN 0.0 ELSE (s.vae_sig::INTEGER - cfg.vae_share) * c.dur_ns END AS score,
           c.name AS sort_name, c.stream_id AS sort_stream
    FROM kernel_categories c
    JOIN sig s ON s.type IS NOT DISTINCT FROM c.type AND s.name IS NOT DISTINCT FROM c.name
    CROSS JOIN cfg
    -- ranks staged by an override or by markers never use signatures (stage_windows_raw)
    WHERE c.rank NOT IN (SELECT rank FROM stage_overrides UNION ALL SELECT rank FROM stage_markers)
),
run AS (
    SELECT rank, part, start_ns, end_ns, dur_ns, category, is_comm, t, shapes, vae_sig,
           row_number() OVER w AS i, score,
           coalesce(sum(score) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS p0,
           sum(score) OVER (w ROWS UNBOUNDED PRECEDING) AS p1,
           -- idle time before the kernel: its start minus the latest end of the kernels before it
           start_ns - max(end_ns) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS gap,
           CASE WHEN NOT is_comm THEN count(ct) OVER (w ROWS UNBOUNDED PRECEDING) END AS ci,
           CASE WHEN NOT is_comm THEN hash(t, shapes, NULL::VARCHAR, NULL::VARCHAR, NULL::VARCHAR,
                                          NULL::VARCHAR, NULL::VARCHAR, NULL::VARCHAR) END AS g1,
           CASE WHEN NOT is_comm THEN hash(t, shapes, lead(ct, 1 IGNORE NULLS) OVER w, lead(cs, 1 IGNORE NULLS) OVER w,
                                          NULL::VARCHAR, NULL::VARCHAR, NULL::VARCHAR, NULL::VARCHAR) END AS g2,
           CASE WHEN NOT is_comm THEN hash(t, shapes, lead(ct, 1 IGNORE NULLS) OVER w, lead(cs, 1 IGNORE NULLS) OVER w,
                                          lead(ct, 2 IGNORE NULLS) OVER w, lead(cs, 2 IGNORE NULLS) OVER w,
                                          NULL::VARCHAR, NULL::VARCHAR) END AS g3,
           CASE WHEN NOT is_comm THEN hash(t, shapes, lead(ct, 1 IGNORE NULLS) OVER w, lead(cs, 1 IGNORE NULLS) OVER w,
                                          lead(ct, 2 IGNORE NULLS) OVER w, lead(cs, 2 IGNORE NULLS) OVER w,
                                          lead(ct, 3 IGNORE NULLS) OVER w, lead(cs, 3 IGNORE NULLS) OVER w) END AS g4
    FROM (SELECT *, CASE WHEN NOT is_comm THEN t END AS ct, CASE WHEN NOT is_comm THEN shapes END AS cs FROM k)
    WINDOW w AS (PARTITION BY rank, part ORDER BY start_ns, end_ns, sort_name, sort_stream)
)
SELECT * FROM run
