-- host ranges that mark a stage (module, mstx, record_function, npu_tui:stage:NAME) and their device windows
-- Only outermost marker ranges count (a FluxTransformer2DModel range holds many TransformerBlock
-- ones), and a rank with any npu_tui:stage marker uses only those. A range maps to the device
-- through the flows of the kernels it launched; ranks without flows take the kernels that start
-- from the range's host start until the next marker's (device work follows its launch in order).
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
      AND NOT regexp_matches(n.name, cfg.ignore_marker)
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
outer_ranges AS MATERIALIZED (
    SELECT c.*, row_number() OVER (PARTITION BY c.rank ORDER BY c.host_start_ns, c.host_end_ns DESC) AS marker
    FROM chosen c
    WHERE NOT EXISTS (
        SELECT 1 FROM chosen o
        WHERE o.rank = c.rank AND o.host_start_ns <= c.host_start_ns AND o.host_end_ns >= c.host_end_ns
          AND (o.host_start_ns < c.host_start_ns OR o.host_end_ns > c.host_end_ns))
    -- identical ranges (a module and its record_function twin) collapse to one
    QUALIFY row_number() OVER (PARTITION BY c.rank, c.host_start_ns, c.host_end_ns ORDER BY c.name) = 1
),
flow_ranks AS (SELECT DISTINCT rank FROM flows),
by_flow AS (
    SELECT o.rank, o.marker, min(k.start_ns) AS start_ns, max(k.start_ns + k.dur_ns) AS end_ns,
           count(*) AS kernels
    FROM outer_ranges o
    JOIN flows f ON f.rank = o.rank AND f.host_ts_ns BETWEEN o.host_start_ns AND o.host_end_ns
    JOIN kernels k ON k.rank = f.rank AND k.start_ns = f.device_ts_ns
    GROUP BY ALL
),
bounded AS (
    SELECT o.*, lead(o.host_start_ns) OVER (PARTITION BY o.rank ORDER BY o.host_start_ns) AS next_start_ns
    FROM outer_ranges o
    WHERE o.rank NOT IN (SELECT rank FROM flow_ranks)
),
by_order AS (
    SELECT b.rank, b.marker, min(k.start_ns) AS start_ns, max(k.start_ns + k.dur_ns) AS end_ns,
           count(*) AS kernels
    FROM bounded b
    JOIN kernels k ON k.rank = b.rank AND k.start_ns >= b.host_start_ns
                  AND (b.next_start_ns IS NULL OR k.start_ns < b.next_start_ns)
    GROUP BY ALL
)
SELECT o.rank, o.stage, o.name, o.own, o.host_start_ns, o.host_end_ns, d.start_ns, d.end_ns, d.kernels,
       CASE WHEN o.rank IN (SELECT rank FROM flow_ranks) THEN 'flows' ELSE 'launch_order' END AS mapped_by
FROM outer_ranges o
JOIN (SELECT * FROM by_flow UNION ALL SELECT * FROM by_order) d USING (rank, marker)
