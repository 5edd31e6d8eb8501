-- per rank and step, kernels in time order with the running sums stage_signature searches (stored as a table)
-- score: (VAE signature kernel ? 1 : 0) - vae_share, times duration (comm: 0); p0 / p1: its running
-- sum before / through the kernel; m0: the least p0 so far; gap: idle time before the kernel.
WITH cfg AS (SELECT * FROM rules_stages),
sig_keys AS (
    SELECT DISTINCT coalesce(type, '') AS t, regexp_replace(coalesce(name, ''), '[_0-9]+$', '') AS n
    FROM kernels
),
sig AS MATERIALIZED (
    SELECT t, n, regexp_matches(t, cfg.vae_pattern, 'i') OR regexp_matches(n, cfg.vae_pattern, 'i') AS vae_sig
    FROM sig_keys, cfg
),
k AS MATERIALIZED (
    SELECT c.rank, coalesce(c.step, -1) AS part, c.start_ns, c.end_ns, c.dur_ns, c.category, c.is_comm,
           coalesce(c.type, '') AS t, coalesce(c.input_shapes, '') AS shapes, s.vae_sig,
           row_number() OVER (PARTITION BY c.rank, coalesce(c.step, -1)
                              ORDER BY c.start_ns, c.end_ns, c.name, c.stream_id) AS i
    FROM kernel_categories c
    JOIN sig s ON s.t = coalesce(c.type, '') AND s.n = regexp_replace(coalesce(c.name, ''), '[_0-9]+$', '')
),
run AS MATERIALIZED (
    SELECT *,
           coalesce(sum(score) OVER (PARTITION BY rank, part ORDER BY i
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS p0,
           sum(score) OVER (PARTITION BY rank, part ORDER BY i ROWS UNBOUNDED PRECEDING) AS p1,
           -- idle time before the kernel: its start minus the latest end of the kernels before it
           start_ns - max(end_ns) OVER (PARTITION BY rank, part ORDER BY i
                                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS gap
    FROM (SELECT k.*, CASE WHEN k.is_comm THEN 0.0
                           ELSE (k.vae_sig::INTEGER - cfg.vae_share) * k.dur_ns END AS score
          FROM k, cfg)
)
SELECT *, min(p0) OVER (PARTITION BY rank, part ORDER BY i ROWS UNBOUNDED PRECEDING) AS m0 FROM run
