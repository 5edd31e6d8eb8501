-- the numbers findings test, per rank (and stage): category shares, exposed comm share of the stage's time per step and what the exposed time is (cause: transit, slow_link, wait, synchronization, idle, unsplit), device idle (cause: inside the steps or between them), copies, memory growth across DiT forwards, reserved memory held idle and the peak against the device's capacity, the VAE's share and the forwards per pipeline call, spreads across ranks; basis_us is the time per step a fix acts on (from step_account_mean: warm-up outliers left out)
WITH cfg AS (SELECT * FROM rules_stages),
part_us AS (SELECT * FROM step_account_mean),
rank_us AS (
    SELECT rank, sum(us_per_step ORDER BY stage, part, detail) FILTER (WHERE part <> 'between') AS step_us, sum(us_per_step ORDER BY stage, part, detail) AS cycle_us,
           coalesce(sum(us_per_step ORDER BY stage, part, detail) FILTER (WHERE part = 'free'), 0) AS free_us,
           coalesce(sum(us_per_step ORDER BY stage, part, detail) FILTER (WHERE part = 'between'), 0) AS between_us,
           coalesce(sum(us_per_step ORDER BY stage, part, detail) FILTER (WHERE part = 'copy'), 0) AS copy_us,
           any_value(steps) AS steps
    FROM part_us GROUP BY rank
),
stage_us AS (SELECT rank, stage, sum(us_per_step ORDER BY part, detail) AS us FROM part_us WHERE stage IS NOT NULL GROUP BY ALL),
-- exposed comm by cause: transit, wait, synchronization (waiting for the peers to reach the
-- collective), idle; unsplit without communication.json
exposed AS (
    SELECT rank, stage, detail AS cause, sum(us_per_step ORDER BY detail) AS us
    FROM part_us WHERE part = 'comm_exposed' GROUP BY ALL
),
-- The cause is the largest of transfer, waiting (wait and synchronization together) and idle;
-- waiting is then named by its larger part. Of equal ones, the first by name.
grouped AS (
    SELECT rank, stage, CASE WHEN cause IN ('wait', 'synchronization') THEN 'waiting' ELSE cause END AS kind,
           sum(us ORDER BY cause) AS us, first(cause ORDER BY us DESC, cause) AS part
    FROM exposed GROUP BY ALL
),
main_cause AS (
    SELECT rank, stage, first(CASE kind WHEN 'waiting' THEN part ELSE kind END ORDER BY us DESC, kind) AS cause,
           arg_max(us, us) AS cause_us, sum(us ORDER BY kind) AS exposed_us
    FROM grouped GROUP BY ALL
),
host_only AS (SELECT rank FROM kernels GROUP BY rank HAVING bool_and(core = 'CPU')),
-- The DiT forwards per pipeline call (a window's: two for a cycle of unbatched guidance found by
-- signatures): a call's windows follow each other closely; the next call's come after its VAE, or
-- after its text encoders (more kernels between them than twice the usual between two windows, or
-- a gap longer than a window), or in the next step where a step is a call (its steps hold more
-- than one window: one with a step per denoising step holds one). So a profile without steps
-- counts them per call too. A whole call runs the most of them (a profile that starts or stops
-- between denoising steps cuts a call short).
ordered AS (
    SELECT w.*, sum(CASE WHEN w.stage = cfg.rest_stage THEN w.kernel_count ELSE 0 END) OVER r AS other_through
    FROM stage_windows w, cfg
    WINDOW r AS (PARTITION BY w.rank ORDER BY w.start_ns, w.end_ns ROWS UNBOUNDED PRECEDING)
),
dit_windows AS (
    SELECT w.rank, w.stage, w.start_ns, w.end_ns, w.forwards, s.step, lag(w.stage) OVER r AS before,
           lag(s.step) OVER r AS step_before, w.start_ns - lag(w.end_ns) OVER r AS gap_ns,
           w.other_through - lag(w.other_through) OVER r AS between_kernels
    FROM ordered w
    ASOF LEFT JOIN step_windows s ON s.rank = w.rank AND w.start_ns >= s.start_ns
    CROSS JOIN cfg
    WHERE w.stage <> cfg.rest_stage
    WINDOW r AS (PARTITION BY w.rank ORDER BY w.start_ns, w.end_ns)
),
-- Two DiT windows of a step with nothing between them, and no third, are one denoising step's
-- forwards under unbatched guidance (marked each): a step of such a pair alone is a denoising step,
-- not a call. (Marked forwards that all touch, a trace without flows, run on past two.)
touching AS (
    SELECT d.rank, d.step, sum((d.before IS DISTINCT FROM cfg.dit_stage OR d.between_kernels > 0
                                OR d.step IS DISTINCT FROM d.step_before)::INTEGER)
                               OVER (PARTITION BY d.rank ORDER BY d.start_ns, d.end_ns ROWS UNBOUNDED PRECEDING) AS run
    FROM dit_windows d, cfg
    WHERE d.stage = cfg.dit_stage
),
typical AS (
    SELECT d.rank, median(d.end_ns - d.start_ns) AS forward_ns, any_value(p.per_step) AS per_step,
           -- (two forwards of unbatched guidance have none between them: the steps' count)
           median(d.between_kernels) FILTER (WHERE d.before = cfg.dit_stage AND d.between_kernels > 0)
               AS between_kernels
    FROM dit_windows d
    JOIN (SELECT rank, median(n) AS per_step
          FROM (SELECT rank, step, sum(CASE WHEN windows = 2 THEN 1 ELSE windows END) AS n
                FROM (SELECT rank, step, run, count(*) AS windows FROM touching GROUP BY ALL)
                GROUP BY ALL)
          GROUP BY rank) p USING (rank)
    CROSS JOIN cfg
    WHERE d.stage = cfg.dit_stage
    GROUP BY d.rank
),
calls AS (
    SELECT rank, call, sum(forwards) AS forwards
    FROM (SELECT d.rank, d.forwards,
                 sum((d.before IS DISTINCT FROM cfg.dit_stage OR d.gap_ns > t.forward_ns
                      OR d.between_kernels > 2 * t.between_kernels
                      OR d.step IS DISTINCT FROM d.step_before AND t.per_step > 1)::INTEGER)
                     OVER (PARTITION BY d.rank ORDER BY d.start_ns ROWS UNBOUNDED PRECEDING) AS call
          FROM dit_windows d JOIN typical t USING (rank) CROSS JOIN cfg
          WHERE d.stage = cfg.dit_stage)
    GROUP BY ALL
),
forwards AS (SELECT rank, max(forwards) AS forwards FROM calls GROUP BY rank)
SELECT c.rank, c.stage, 'share' AS metric, c.category, NULL AS cause, c.share AS value,
       coalesce(p.us_per_step, c.time_us / greatest(r.steps, 1)) AS basis_us, NULL::INTEGER AS waited_for
FROM stage_categories c
LEFT JOIN rank_us r USING (rank)
LEFT JOIN part_us p ON p.rank = c.rank AND p.stage = c.stage AND p.part = 'compute' AND p.detail = c.category
UNION ALL
-- exposed comm's share as the Comm pane shows it (comm_exposure); transit over a link of this rank
-- far slower than its peers' (comm_links) is the slow link's
SELECT m.rank, m.stage, 'exposed_share', NULL,
       CASE WHEN m.cause = 'transit' AND m.rank IN (SELECT reported_by FROM comm_links WHERE slow) THEN 'slow_link'
            ELSE m.cause END,
       e.exposed_share, m.cause_us,
       -- the rank it waits for at the collectives (rank_waits)
       CASE WHEN m.cause IN ('wait', 'synchronization') THEN (SELECT w.waits_for FROM rank_waits w WHERE w.rank = m.rank) END
FROM main_cause m JOIN comm_exposure e USING (rank, stage)
UNION ALL
-- device idle, inside the steps (free) or between them, whichever is more; not on a CPU-only trace
SELECT rank, NULL, 'idle_share', NULL, CASE WHEN between_us > free_us THEN 'between' ELSE 'inside' END,
       (free_us + between_us) / nullif(cycle_us, 0), free_us + between_us, NULL
FROM rank_us WHERE rank NOT IN (SELECT rank FROM host_only)
UNION ALL
SELECT rank, NULL, 'copy_share', NULL, NULL, copy_us / nullif(step_us, 0), copy_us, NULL FROM rank_us
UNION ALL
SELECT s.rank, s.stage, 'vae_share', NULL, NULL, s.us / nullif(r.step_us, 0), s.us, NULL
FROM stage_us s JOIN rank_us r USING (rank), cfg WHERE s.stage = cfg.vae_stage
UNION ALL
SELECT f.rank, cfg.dit_stage, 'forwards', NULL, NULL, f.forwards, s.us, NULL
FROM forwards f JOIN rank_us r USING (rank) CROSS JOIN cfg
LEFT JOIN stage_us s ON s.rank = f.rank AND s.stage = cfg.dit_stage
UNION ALL
-- memory: the DiT forwards' peaks growing from the first to the last; reserved memory the
-- allocator holds idle at the reserved peak
SELECT rank, cfg.dit_stage, 'memory_growth', NULL, NULL, growth, NULL, NULL
FROM memory_peaks, cfg WHERE stage IS NULL AND growth IS NOT NULL
UNION ALL
SELECT rank, NULL, 'memory_idle_reserved', NULL, NULL, idle_reserved_share, NULL, NULL
FROM memory_peaks WHERE stage IS NULL AND idle_reserved_share IS NOT NULL
UNION ALL
-- the peak against the device's capacity, where the profile states it; cause: the stage it is in
SELECT rank, NULL, 'memory_capacity_share', NULL, CASE WHEN peak_stage = cfg.vae_stage THEN 'vae' ELSE 'other' END,
       capacity_share, NULL, NULL
FROM memory_peaks, cfg WHERE stage IS NULL AND capacity_share IS NOT NULL
UNION ALL
SELECT slow_rank, NULL, 'spread', measure, slow_by, spread, max_us - mean_us,
       CASE measure WHEN 'exposed_comm' THEN slow_rank END
FROM rank_spread
