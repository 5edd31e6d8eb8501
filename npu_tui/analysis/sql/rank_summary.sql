-- per rank: device id, kernel count and time (NULL for a rank not loaded), span of its kernels, steps, and per step the mean step time, exposed comm (a pipeline's bubble aside: its receives waiting for the stage before), free time and own time (computing and free: the step less the comm it waits in) (warm-up outliers left out of the means, and counted); a rank whose own files are not here too, with msprof-analyze's copy of its step trace; apart: why the comparisons across ranks leave it out (ranks_apart: not loaded whole, another run, or of a rank not loaded other steps than the loaded ranks'), NULL when compared; compared: whether they take it (a rank with kernels or a step trace's steps, not apart); per: 'step', or 'profile' where the rank's profile numbers no steps (its one "step" is the whole profile, start-up and all), NULL without steps
WITH all_ranks AS (SELECT rank FROM ranks UNION SELECT DISTINCT rank FROM kernels UNION SELECT DISTINCT rank FROM step_breakdown),
k AS (
    SELECT rank, any_value(device_id) AS device_id, count(*) AS kernel_count, sum(dur_ns) / 1e3 AS kernel_time_us,
           (max(start_ns + dur_ns) - min(start_ns)) / 1e3 AS span_us
    FROM kernels GROUP BY rank
),
s AS (
    SELECT b.rank, count(*) AS steps, count(*) FILTER (WHERE f.outlier) AS outliers,
           avg(b.step_us) FILTER (WHERE NOT coalesce(f.outlier, false)) AS step_time_us,
           avg(greatest(b.comm_not_overlapped_us - coalesce(b.bubble_us, 0), 0)) FILTER (WHERE NOT coalesce(f.outlier, false)) AS exposed_comm_us,
           avg(b.free_us) FILTER (WHERE NOT coalesce(f.outlier, false)) AS free_us,
           avg(b.computing_us + b.free_us) FILTER (WHERE NOT coalesce(f.outlier, false)) AS own_us,
           -- (a step its step trace lost comes from lanes or kernels: the rank's source is the trace)
           arg_max(b.source, b.source NOT IN ('overlap_lanes', 'kernels')) AS step_source,
           bool_or(b.step IS NOT NULL) AS marked
    FROM step_breakdown b LEFT JOIN step_flags f ON f.rank = b.rank AND f.step IS NOT DISTINCT FROM b.step
    GROUP BY b.rank
)
-- Compared: a rank without a kernel (a trace cut before its device events) still has steps where
-- the host marked them, and no comm at all: 0 exposed comm is no measurement, and it would be the
-- rank the others wait for; a profiler's step trace (the rank's own, or the cluster's copy of it)
-- measured its steps, kernels or not. A rank with a file cut short has lost an unknown part of its
-- steps, and another run's ran other steps: their figures would pass for a fast or a slow rank.
-- A rank not loaded (the cluster step trace's) has kernels not known, not none.
SELECT a.rank, coalesce(r.device_id, k.device_id) AS device_id,
       CASE WHEN r.rank IS NOT NULL OR k.rank IS NOT NULL THEN coalesce(k.kernel_count, 0) END AS kernel_count,
       CASE WHEN r.rank IS NOT NULL OR k.rank IS NOT NULL THEN coalesce(k.kernel_time_us, 0.0) END AS kernel_time_us,
       k.span_us, coalesce(s.steps, 0) AS steps,
       coalesce(s.outliers, 0) AS outliers,
       s.step_time_us, s.exposed_comm_us, s.free_us, s.own_us, s.step_source,
       x.why AS apart,
       (coalesce(k.kernel_count, 0) > 0 OR coalesce(s.step_source NOT IN ('kernels', 'overlap_lanes'), false))
           AND x.why IS NULL AS compared,
       CASE WHEN s.marked THEN 'step' WHEN NOT s.marked THEN 'profile' END AS per
FROM all_ranks a
LEFT JOIN (SELECT rank, any_value(device_id) AS device_id FROM ranks GROUP BY rank) r USING (rank)
LEFT JOIN k USING (rank)
LEFT JOIN s USING (rank)
LEFT JOIN ranks_apart x USING (rank)
ORDER BY a.rank
