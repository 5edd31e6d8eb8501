-- across ranks: min, max and mean of step time, own time (rank_summary.own_us: computing and free) and exposed comm per step, spread = (max - min) / mean, and the slow rank: the longest, or for exposed comm the rank the others wait for at the collectives (rank_waits; without communication.json, the rank with the least: it comes last), and slow_by how it was found for exposed comm: waits | least_exposed; ties go to the lower rank; only the ranks rank_summary compares (with kernels or a step trace's steps, not apart)
-- A rank's own time is what to balance: one that starts its step late (its host slower) has the
-- shortest step, measured from its first kernel, while the ranks that wait for it at the first
-- collective have the longest. Its own time is not the waiting.
WITH m AS (
    SELECT rank, 'step_time' AS measure, step_time_us AS v FROM rank_summary WHERE compared
    UNION ALL
    SELECT rank, 'own_time', own_us FROM rank_summary WHERE compared
    UNION ALL
    SELECT rank, 'exposed_comm', exposed_comm_us FROM rank_summary WHERE compared
),
waited AS (
    SELECT w.rank FROM rank_waits w JOIN m USING (rank)
    WHERE w.waited_for AND m.measure = 'exposed_comm' AND m.v IS NOT NULL
    ORDER BY w.caused_wait_ms DESC, w.rank LIMIT 1
)
SELECT measure, count(*) AS ranks, min(v) AS min_us, max(v) AS max_us, avg(v ORDER BY rank) AS mean_us,
       CASE WHEN avg(v ORDER BY rank) > 0 THEN (max(v) - min(v)) / avg(v ORDER BY rank) ELSE 0.0 END AS spread,
       CASE measure WHEN 'exposed_comm' THEN coalesce((SELECT rank FROM waited), arg_min(rank, [v, rank]))
            ELSE arg_max(rank, [v, -rank]) END AS slow_rank,
       CASE measure WHEN 'exposed_comm'
            THEN CASE WHEN EXISTS (SELECT 1 FROM waited) THEN 'waits' ELSE 'least_exposed' END END AS slow_by
FROM m WHERE v IS NOT NULL
GROUP BY measure
HAVING count(*) >= 2
ORDER BY measure DESC
