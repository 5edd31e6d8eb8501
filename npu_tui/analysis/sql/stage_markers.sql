-- host ranges that mark a stage (npu_tui:stage:NAME, diffusers' record_function names, MSTX, model classes) and their device windows, on ranks with a DiT or VAE marker that holds what it says
-- Only outermost marker ranges count (a FluxTransformer2DModel range holds many TransformerBlock
-- ones), and a rank with any npu_tui:stage marker uses only those. A range maps to the device
-- through the flows of the kernels it launched; on a CPU-only trace its kernels are the host ops it
-- holds; otherwise (device kernels, no flows) the kernels that start from the range's host start
-- until the next marker's (device work follows its launch in order). A VAE range must hold
-- VAE-signature kernels (Conv, GroupNorm, upsampling: an LLM's decoder layer holds none); a rank
-- keeps its markers only when a DiT or VAE marker remains.
WITH cfg AS (SELECT * FROM rules_stages),
names AS (
    SELECT DISTINCT name FROM host_events WHERE dur_ns > 0 AND name IS NOT NULL
),
stage_of AS MATERIALIZED (
    SELECT n.name, regexp_extract(n.name, cfg.own_marker, 1) AS stage, true AS own
    FROM names n, cfg
    WHERE regexp_matches(n.name, cfg.own_marker)
    UNION ALL
    SELECT n.name, arg_min(m.stage, m.ord), false
    FROM names n, cfg, rules_stage_markers m
    WHERE regexp_matches(n.name, m.pattern)
      AND NOT regexp_matches(n.name, cfg.own_marker)
      AND (NOT regexp_matches(n.name, cfg.ignore_marker) OR regexp_matches(n.name, cfg.frame_marker))
    GROUP BY n.name
),
cand AS MATERIALIZED (
    SELECT h.rank, h.name, s.stage, s.own, h.start_ns AS host_start_ns,
           h.start_ns + h.dur_ns AS host_end_ns
    FROM host_events h JOIN stage_of s USING (name)
    WHERE h.dur_ns > 0
),
chosen AS (
    SELECT * FROM cand c
    WHERE c.own OR NOT EXISTS (SELECT 1 FROM cand o WHERE o.rank = c.rank AND o.own)
),
-- A range is inside another when one starting earlier ends at or after it, or one starting with it
-- ends later: two running maxima of the end instead of comparing every pair.
reach AS (
    SELECT c.*,
           max(c.host_end_ns) OVER (PARTITION BY c.rank ORDER BY c.host_start_ns
                                    RANGE BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS end_before,
           max(c.host_end_ns) OVER (PARTITION BY c.rank, c.host_start_ns) AS end_same_start
    FROM chosen c
),
outer_ranges AS MATERIALIZED (
    SELECT r.* EXCLUDE (end_before, end_same_start),
           row_number() OVER (PARTITION BY r.rank ORDER BY r.host_start_ns, r.host_end_ns DESC) AS marker
    FROM reach r
    WHERE (r.end_before IS NULL OR r.end_before < r.host_end_ns) AND r.end_same_start = r.host_end_ns
    -- identical ranges (a module and its record_function twin) collapse to one
    QUALIFY row_number() OVER (PARTITION BY r.rank, r.host_start_ns, r.host_end_ns ORDER BY r.name) = 1
),
flow_ranks AS (SELECT DISTINCT rank FROM flows),
-- kernels that are the host's own ops (a CPU-only trace): a range holds those starting inside it
host_op_ranks AS (SELECT rank FROM kernels GROUP BY rank HAVING bool_and(core = 'CPU')),
-- No outer range holds another, so in start order their ends rise too: the ranges holding a launch
-- are the markers from the first one ending at or after it to the last one starting at or before it.
launches AS (
    SELECT f.rank, f.device_ts_ns, unnest(range(q.marker, p.marker + 1)) AS marker
    FROM flows f
    ASOF JOIN outer_ranges p ON f.rank = p.rank AND f.host_ts_ns >= p.host_start_ns
    ASOF JOIN outer_ranges q ON f.rank = q.rank AND f.host_ts_ns <= q.host_end_ns
    WHERE q.marker <= p.marker
),
by_flow AS (
    SELECT f.rank, f.marker, k.start_ns, k.end_ns, k.vae_sig
    FROM launches f
    JOIN kernel_categories k ON k.rank = f.rank AND k.start_ns = f.device_ts_ns
),
-- starts are distinct, so the range a kernel follows is the last one starting at or before it
by_order AS (
    SELECT o.rank, o.marker, k.start_ns, k.end_ns, k.vae_sig
    FROM kernel_categories k
    ASOF JOIN (SELECT * FROM outer_ranges WHERE rank NOT IN (SELECT rank FROM flow_ranks)) o
      ON k.rank = o.rank AND k.start_ns >= o.host_start_ns
    WHERE k.rank NOT IN (SELECT rank FROM host_op_ranks)
       OR k.start_ns < o.host_end_ns
),
mapped AS (
    SELECT rank, marker, min(start_ns) AS start_ns, max(end_ns) AS end_ns, count(*) AS kernels,
           count(*) FILTER (WHERE vae_sig) AS vae_kernels
    FROM (SELECT * FROM by_flow UNION ALL SELECT * FROM by_order)
    GROUP BY rank, marker
),
held AS (
    SELECT o.rank, o.stage, o.name, o.own, o.host_start_ns, o.host_end_ns, d.start_ns, d.end_ns, d.kernels,
           CASE WHEN o.rank IN (SELECT rank FROM flow_ranks) THEN 'flows'
                WHEN o.rank IN (SELECT rank FROM host_op_ranks) THEN 'host_ops'
                ELSE 'launch_order' END AS mapped_by
    FROM outer_ranges o
    JOIN mapped d USING (rank, marker)
    CROSS JOIN cfg
    WHERE o.own OR o.stage <> cfg.vae_stage OR d.vae_kernels >= cfg.vae_marker_min_kernels
)
SELECT * FROM held
WHERE rank IN (SELECT rank FROM held, cfg WHERE own OR stage IN (cfg.dit_stage, cfg.vae_stage))
