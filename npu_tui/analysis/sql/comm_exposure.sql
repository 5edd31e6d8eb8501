-- per rank and stage: comm time and exposed comm (comm not covered by compute), totals in the stage's windows (wall_us, comm_us, exposed_us), and per step in the pieces of the steps the stage holds (step_pieces, the step account's cut; warm-up outliers left out, as of every mean): stage_us_per_step, comm_us_per_step, exposed_us_per_step, and exposed_share, the exposed comm's share of the stage's time per step (what comm_exposed_high tests); lanes when present (not for a rank not loaded whole), else kernels (exposed_lanes_us, exposed_kernels_us: both totals, to compare)
-- Time inside a span: the running totals at its end minus those at its start (see busy_segments).
-- A sum of nothing is NULL, as it would be summing the span's segments (no segment is empty).
-- The share is per step, not of the windows' wall: a rank without diffusion stages has one window
-- from its first kernel to its last, and the time between its steps (the host's) and a warm-up
-- step would count as the stage's.
WITH spans AS (
    SELECT rank, stage, start_ns, end_ns, false AS per_step FROM stage_windows
    UNION ALL
    SELECT p.rank, p.stage, p.start_ns, p.end_ns, true
    FROM step_pieces p LEFT JOIN step_flags f ON f.rank = p.rank AND f.step IS NOT DISTINCT FROM p.step
    WHERE NOT coalesce(f.outlier, false)
),
steps AS (
    SELECT p.rank, count(DISTINCT coalesce(p.step, -1)) AS steps
    FROM step_pieces p LEFT JOIN step_flags f ON f.rank = p.rank AND f.step IS NOT DISTINCT FROM p.step
    WHERE NOT coalesce(f.outlier, false)
    GROUP BY p.rank
),
from_kernels AS (
    SELECT w.rank, w.stage, w.per_step, sum(w.end_ns - w.start_ns) AS span_ns,
           nullif(sum(coalesce(b.exposed_through_ns + b.overlapped_through_ns, 0)
                      - coalesce(a.exposed_through_ns + a.overlapped_through_ns, 0)), 0) AS comm_ns,
           nullif(sum(coalesce(b.exposed_through_ns, 0) - coalesce(a.exposed_through_ns, 0)), 0) AS exposed_ns
    FROM spans w
    ASOF LEFT JOIN busy_segments a ON w.rank = a.rank AND w.start_ns > a.start_ns
    ASOF LEFT JOIN busy_segments b ON w.rank = b.rank AND w.end_ns > b.start_ns
    GROUP BY w.rank, w.stage, w.per_step
),
from_lanes AS (
    SELECT w.rank, w.stage, w.per_step,
           nullif(sum(coalesce(b.comm_through_ns, 0) - coalesce(a.comm_through_ns, 0)), 0) AS comm_ns,
           nullif(sum(coalesce(b.not_overlapped_through_ns, 0) - coalesce(a.not_overlapped_through_ns, 0)), 0)
               AS exposed_ns
    FROM spans w
    ASOF LEFT JOIN lane_segments a ON w.rank = a.rank AND w.start_ns > a.start_ns
    ASOF LEFT JOIN lane_segments b ON w.rank = b.rank AND w.end_ns > b.start_ns
    GROUP BY w.rank, w.stage, w.per_step
),
-- A rank not loaded whole (ranks_apart) is measured by its kernels, as its step account is: its
-- trace cut short beside a whole kernel file leaves lanes that stop at the cut, and the rest
-- would read as nothing exposed.
lane_ranks AS (
    SELECT DISTINCT rank FROM overlap_lanes WHERE lane = 'Communication(Not Overlapped)'
    EXCEPT SELECT rank FROM ranks_apart WHERE why = 'not loaded whole'
),
merged AS (
    SELECT k.rank, k.stage, k.per_step, k.span_ns, k.rank IN (SELECT rank FROM lane_ranks) AS has_lanes,
           coalesce(k.comm_ns, 0) AS k_comm, coalesce(k.exposed_ns, 0) AS k_exposed,
           coalesce(l.comm_ns, k.comm_ns, 0) AS l_comm, coalesce(l.exposed_ns, 0) AS l_exposed
    FROM from_kernels k LEFT JOIN from_lanes l USING (rank, stage, per_step)
),
measured AS (
    SELECT *, CASE WHEN has_lanes THEN l_comm ELSE k_comm END AS comm_ns,
           CASE WHEN has_lanes THEN l_exposed ELSE k_exposed END AS exposed_ns
    FROM merged
)
SELECT s.rank, s.stage, s.wall_us,
       t.comm_ns / 1e3 AS comm_us, t.exposed_ns / 1e3 AS exposed_us,
       n.steps, p.span_ns / 1e3 / n.steps AS stage_us_per_step, p.comm_ns / 1e3 / n.steps AS comm_us_per_step,
       p.exposed_ns / 1e3 / n.steps AS exposed_us_per_step,
       coalesce(p.exposed_ns / nullif(p.span_ns, 0), 0.0) AS exposed_share,
       CASE WHEN t.has_lanes THEN 'overlap_lanes' ELSE 'kernels' END AS source,
       CASE WHEN t.has_lanes THEN t.l_exposed / 1e3 END AS exposed_lanes_us, t.k_exposed / 1e3 AS exposed_kernels_us
FROM stage_summary s
JOIN measured t ON t.rank = s.rank AND t.stage = s.stage AND NOT t.per_step
LEFT JOIN measured p ON p.rank = s.rank AND p.stage = s.stage AND p.per_step
LEFT JOIN steps n ON n.rank = s.rank
