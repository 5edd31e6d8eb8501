-- per rank, at the collectives it shares with other ranks (the same call, as communication.json names it, in the same group): how many, its own wait (ms), its peers' mean wait in those same calls, how often it waited least (came last), waited_for: the rank its group's others wait for (in one of its groups), waits_for: the rank it waits for (in the group where it waits most; none where it never waits), with its step time and exposed comm per step to compare
-- A fast rank waits at every collective for the slow one, so the rank with the most comm time is
-- usually a waiting one. In each group the rank waited for is the one that comes last to most of
-- the calls and whose peers wait longest per call beyond its own wait.
-- The ranks' communication.json, else (a rank not loaded, or without one) msprof-analyze's
-- cluster_communication.json; not of the ranks apart (another run's calls are not these, a cut
-- rank's are not all there).
-- An op that took no time is one the profiler matched no task to: its wait of 0 is unknown, not
-- the least (a rank of such ops came last to every call); it is numbered, not compared.
WITH source AS (
    SELECT rank, group_name, op_name, wait_ms, elapse_ms, start_us FROM comm_ops
    UNION ALL
    SELECT rank, group_name, op_name, wait_ms, elapse_ms, start_us FROM cluster_comm_ops
    WHERE rank NOT IN (SELECT rank FROM comm_ops)
),
kept AS (SELECT * FROM source WHERE rank NOT IN (SELECT rank FROM ranks_apart)),
calls AS (
    SELECT * FROM (
        SELECT rank, group_name, op_name, wait_ms, elapse_ms,
               row_number() OVER (PARTITION BY rank, group_name, op_name ORDER BY start_us) AS nth
        FROM kept)
    WHERE wait_ms IS NOT NULL AND elapse_ms IS DISTINCT FROM 0
),
shared AS (
    SELECT *, count(*) OVER k AS ranks, sum(wait_ms) OVER k AS total_wait, min(wait_ms) OVER k AS least_wait
    FROM calls
    WINDOW k AS (PARTITION BY group_name, op_name, nth ORDER BY rank
                 ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
),
per_group AS (
    SELECT group_name, rank, count(*) AS collectives, sum(wait_ms ORDER BY op_name, nth) AS wait_ms,
           sum((total_wait - wait_ms) / (ranks - 1) ORDER BY op_name, nth) AS peers_wait_ms,
           count(*) FILTER (WHERE wait_ms = least_wait) AS times_last
    FROM shared WHERE ranks >= 2
    GROUP BY group_name, rank
),
picked AS (
    SELECT *, coalesce(row_number() OVER (PARTITION BY group_name ORDER BY (peers_wait_ms - wait_ms) / collectives DESC, rank) = 1
                       AND peers_wait_ms > wait_ms AND times_last * 2 > collectives, false) AS waited_for
    FROM per_group
),
group_waited AS (SELECT group_name, rank AS waited FROM picked WHERE waited_for),
per_rank AS (
    SELECT p.rank, sum(p.collectives) AS collectives, sum(p.wait_ms ORDER BY p.group_name) AS wait_ms,
           sum(p.peers_wait_ms ORDER BY p.group_name) AS peers_wait_ms,
           sum(p.times_last) AS times_last, bool_or(p.waited_for) AS waited_for,
           arg_max(g.waited, [p.wait_ms, -g.waited]) FILTER (WHERE g.waited <> p.rank AND p.wait_ms > 0) AS waits_for
    FROM picked p LEFT JOIN group_waited g ON g.group_name IS NOT DISTINCT FROM p.group_name
    GROUP BY p.rank
)
-- every rank, those without communication.json with their step and exposed comm only (and
-- waited_for NULL: not known, not false)
SELECT coalesce(s.rank, p.rank) AS rank, p.collectives, p.wait_ms, p.peers_wait_ms, p.times_last,
       p.peers_wait_ms - p.wait_ms AS caused_wait_ms, p.waited_for, p.waits_for,
       s.step_time_us, s.exposed_comm_us
FROM rank_summary s FULL JOIN per_rank p ON p.rank = s.rank
