-- the windows each rank's stage detection chose (override > markers > signature > single), before kernels are assigned; forwards: the transformer forwards a DiT window holds (a marker's, one; a signature cycle of unbatched guidance's, two; a window set by hand, not known)
WITH cfg AS (SELECT * FROM rules_stages),
overridden AS MATERIALIZED (
    SELECT rank, stage, start_ns, end_ns, 'override' AS method, 1.0 AS confidence, NULL::INTEGER AS forwards
    FROM stage_overrides
),
-- Other ranges (text encoders, the scheduler) only bounded the stage ranges before them: kernels
-- outside every window are Other anyway.
marked AS MATERIALIZED (
    SELECT rank, stage, start_ns, end_ns, 'markers' AS method, 1.0 AS confidence,
           CASE WHEN stage = cfg.dit_stage THEN 1 END AS forwards
    FROM stage_markers, cfg
    WHERE rank NOT IN (SELECT rank FROM overridden) AND stage <> cfg.rest_stage
),
signed AS (
    SELECT rank, stage, start_ns, end_ns, 'signature' AS method, confidence, forwards FROM stage_signature
    WHERE rank NOT IN (SELECT rank FROM overridden UNION ALL SELECT rank FROM marked)
),
chosen AS MATERIALIZED (
    SELECT * FROM overridden UNION ALL SELECT * FROM marked UNION ALL SELECT * FROM signed
),
single AS (
    SELECT k.rank, cfg.default_stage AS stage, min(k.start_ns) AS start_ns, max(k.start_ns + k.dur_ns) AS end_ns,
           'single' AS method, NULL::DOUBLE AS confidence, NULL::INTEGER AS forwards
    FROM kernels k, cfg
    WHERE k.rank NOT IN (SELECT rank FROM chosen)
    GROUP BY k.rank, cfg.default_stage
)
SELECT *, row_number() OVER (PARTITION BY rank ORDER BY start_ns, end_ns, stage) AS win
FROM (SELECT * FROM chosen UNION ALL SELECT * FROM single)
