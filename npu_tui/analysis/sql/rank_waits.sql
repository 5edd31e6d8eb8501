-- per rank, at the collectives it shares with other ranks (the same call, as communication.json names it, in the same step and group): how many, its own wait (ms), its peers' mean wait in those same calls, how often it waited least (came last), and waited_for: the rank the others wait for (its peers wait far longer than it does), with its step time and exposed comm per step to compare
-- A fast rank waits at every collective for the slow one, so the rank with the most comm time is
-- usually a waiting one; the rank waited for is the one whose peers' wait most exceeds its own.
-- The ranks' communication.json, else msprof-analyze's cluster_communication.json (every rank's).
WITH source AS (
    SELECT rank, step, group_name, op_name, wait_ms, start_us FROM comm_ops
    UNION ALL
    SELECT rank, step, group_name, op_name, wait_ms, start_us FROM cluster_comm_ops
    WHERE NOT EXISTS (SELECT 1 FROM comm_ops)
),
calls AS (
    SELECT rank, step, group_name, op_name, wait_ms,
           row_number() OVER (PARTITION BY rank, step, group_name, op_name ORDER BY start_us) AS nth
    FROM source WHERE wait_ms IS NOT NULL
),
shared AS (
    SELECT *, count(*) OVER k AS ranks, sum(wait_ms) OVER k AS total_wait, min(wait_ms) OVER k AS least_wait
    FROM calls
    WINDOW k AS (PARTITION BY step, group_name, op_name, nth)
),
per_rank AS (
    SELECT rank, count(*) AS collectives, sum(wait_ms) AS wait_ms,
           sum((total_wait - wait_ms) / (ranks - 1)) AS peers_wait_ms,
           count(*) FILTER (WHERE wait_ms = least_wait) AS times_last
    FROM shared WHERE ranks >= 2
    GROUP BY rank
)
-- every rank, those without communication.json with their step and exposed comm only
SELECT coalesce(s.rank, p.rank) AS rank, p.collectives, p.wait_ms, p.peers_wait_ms, p.times_last, p.peers_wait_ms - p.wait_ms AS caused_wait_ms,
       coalesce(row_number() OVER (ORDER BY p.peers_wait_ms - p.wait_ms DESC NULLS LAST, coalesce(s.rank, p.rank)) = 1
                AND p.peers_wait_ms > p.wait_ms, false) AS waited_for,
       s.step_time_us, s.exposed_comm_us
FROM rank_summary s FULL JOIN per_rank p ON p.rank = s.rank
