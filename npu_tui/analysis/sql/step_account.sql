-- per rank, step and stage, where the step's time went, in parts that add up to the step's span: compute by category, exposed communication (split into transit, wait, synchronization and idle where communication.json gives them), memory copies, free time; then the device's idle time before the next step (stage NULL, part between)
-- part: compute | comm_exposed | copy | free | between; detail: the category, the comm split
-- (transit, wait, synchronization, idle; unsplit without communication.json), or NULL.
-- Each step is cut by the pieces its stages hold (step_pieces). Busy time comes from
-- busy_segments (cut at every window and step edge), compute time is split by category in
-- proportion to the kernels' own time, exposed communication in proportion to the comm ops' transit,
-- wait (less synchronization), synchronization and idle, which make up their elapse
-- (synchronization is the part of the wait before the first transfer; what they leave of the
-- elapse, unsplit).
WITH pieces AS (SELECT rank, step, stage, start_ns AS a, end_ns AS b FROM step_pieces),
busy AS (
    SELECT p.rank, p.step, p.stage,
           coalesce(sum(g.end_ns - g.start_ns) FILTER (WHERE g.compute), 0) AS compute_ns,
           coalesce(sum(g.end_ns - g.start_ns) FILTER (WHERE g.comm AND NOT g.compute), 0) AS exposed_ns,
           coalesce(sum(g.end_ns - g.start_ns) FILTER (WHERE g.copy AND NOT g.comm AND NOT g.compute), 0) AS copy_ns
    FROM busy_segments g
    ASOF JOIN pieces p ON g.rank = p.rank AND g.start_ns >= p.a
    WHERE g.start_ns < p.b
    GROUP BY ALL
),
spans AS (
    SELECT p.rank, p.step, p.stage, sum(p.b - p.a) AS span_ns,
           any_value(coalesce(b.compute_ns, 0)) AS compute_ns, any_value(coalesce(b.exposed_ns, 0)) AS exposed_ns,
           any_value(coalesce(b.copy_ns, 0)) AS copy_ns
    FROM pieces p LEFT JOIN busy b ON b.rank = p.rank AND b.step IS NOT DISTINCT FROM p.step AND b.stage = p.stage
    GROUP BY p.rank, p.step, p.stage
),
compute_by_category AS (
    SELECT rank, step, stage, category, sum(dur_ns) AS ns FROM kernel_stages WHERE is_compute GROUP BY ALL
),
-- each comm op where its kernel is (same rank and name, the nearest in time), else where it starts:
-- its own Start Timestamp can fall a few ns before the kernel's, in the stage before
comm_at AS (
    SELECT o.*, coalesce(k.start_ns, o.op_ns) AS at_ns
    FROM (SELECT *, CAST(start_us * 1000 AS BIGINT) AS op_ns FROM comm_ops WHERE start_us IS NOT NULL) o
    LEFT JOIN kernels k ON k.rank = o.rank AND k.name = o.op_name
    QUALIFY row_number() OVER (PARTITION BY o.rank, o.op_name, o.op_ns ORDER BY abs(k.start_ns - o.op_ns)) = 1
),
-- what the elapse is made of; what transit, wait and idle leave of it is unsplit
comm AS (
    SELECT p.rank, p.step, p.stage, exact_sum(o.transit_ms) AS transit,
           exact_sum(o.wait_ms - coalesce(o.sync_ms, 0)) AS wait, exact_sum(o.sync_ms) AS sync, exact_sum(o.idle_ms) AS idle,
           -- (rounding in the file's ms figures aside)
           exact_sum(o.elapse_ms) AS elapse,
           exact_sum(coalesce(o.transit_ms, 0) + coalesce(o.wait_ms, 0) + coalesce(o.idle_ms, 0)) AS parts,
           CASE WHEN elapse - parts > 1e-3 * elapse THEN elapse - parts ELSE 0 END AS rest
    FROM comm_at o
    ASOF JOIN pieces p ON o.rank = p.rank AND o.at_ns >= p.a
    WHERE o.at_ns < p.b
    GROUP BY ALL
),
parts AS (
    SELECT s.rank, s.step, s.stage, 'compute' AS part, c.category AS detail,
           s.compute_ns * c.ns / sum(c.ns) OVER (PARTITION BY s.rank, s.step, s.stage) AS ns
    FROM spans s JOIN compute_by_category c ON c.rank = s.rank AND c.step IS NOT DISTINCT FROM s.step AND c.stage = s.stage
    UNION ALL
    -- (ops whose times are all 0, matched to no task by the profiler, give no split: unsplit)
    SELECT rank, step, stage, 'comm_exposed', detail,
           CASE WHEN elapse IS NOT NULL THEN exposed_ns * value / elapse WHEN detail = 'unsplit' THEN exposed_ns END
    FROM (SELECT s.rank, s.step, s.stage, s.exposed_ns,
                 nullif(coalesce(m.transit, 0) + coalesce(m.wait, 0) + coalesce(m.sync, 0) + coalesce(m.idle, 0) + m.rest, 0)
                     AS elapse,
                 unnest(['transit', 'wait', 'synchronization', 'idle', 'unsplit']) AS detail,
                 unnest([m.transit, m.wait, m.sync, m.idle, m.rest]) AS value
          FROM spans s JOIN comm m ON m.rank = s.rank AND m.step IS NOT DISTINCT FROM s.step AND m.stage = s.stage
          WHERE s.exposed_ns > 0)
    UNION ALL
    SELECT s.rank, s.step, s.stage, 'comm_exposed', 'unsplit', s.exposed_ns
    FROM spans s ANTI JOIN comm m ON m.rank = s.rank AND m.step IS NOT DISTINCT FROM s.step AND m.stage = s.stage
    WHERE s.exposed_ns > 0
    UNION ALL
    SELECT rank, step, stage, 'copy', NULL, copy_ns FROM spans WHERE copy_ns > 0
    UNION ALL
    SELECT rank, step, stage, 'free', NULL, greatest(span_ns - compute_ns - exposed_ns - copy_ns, 0) FROM spans
    UNION ALL
    -- up to the next step only: a schedule that cycles leaves steps out between its cycles
    SELECT rank, step, NULL, 'between', NULL, next_start - end_ns
    FROM (SELECT rank, step, end_ns, lead(start_ns) OVER w AS next_start, lead(step) OVER w AS next_step
          FROM step_windows WINDOW w AS (PARTITION BY rank ORDER BY start_ns))
    WHERE next_start > end_ns AND next_step = step + 1
)
SELECT p.rank, p.step, p.stage, p.part, p.detail, p.ns / 1e3 AS us, coalesce(f.outlier, false) AS outlier
FROM parts p LEFT JOIN step_flags f ON f.rank = p.rank AND f.step IS NOT DISTINCT FROM p.step
WHERE p.ns > 0
