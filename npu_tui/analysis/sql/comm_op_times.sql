-- comm ops per rank and operation (its identity: run ids stripped): count, elapse / transit / wait / sync / idle (ms), wait and synchronization ratios (as msprof-analyze: each over itself plus transit), the groups it ran in, and exposed (ms: the time of its kernels no compute covers); from communication.json (or a db export's analysis), else msprof-analyze's cluster_communication.json (or cluster_analysis.db), else the kernels the rules file calls Comm (elapse = their time); exposed NULL for a rank without kernels or not loaded whole (not known)
WITH json_ranks AS (SELECT DISTINCT rank FROM comm_ops),
-- the file that gave a rank's comm_ops: its communication.json, else a db export's CommAnalyzerTime
-- (analysis.db, msprof's communication_analyzer.db)
json_sources AS (
    SELECT r.rank, coalesce((SELECT parse_filename(min(file)) FROM load_log l
                             WHERE l.rank = r.rank AND l.kind = 'communication' AND l.rows > 0),
                            (SELECT min(db) FROM db_tables d WHERE d.rank = r.rank AND d.name = 'CommAnalyzerTime'),
                            'communication.json') AS source
    FROM json_ranks r
),
from_json AS (
    SELECT rank, op_name(op_name) AS op_type, kind, s.source, count(*) AS ops,
           exact_sum(elapse_ms) AS elapse_ms, exact_sum(transit_ms) AS transit_ms, exact_sum(wait_ms) AS wait_ms,
           exact_sum(sync_ms) AS sync_ms, exact_sum(idle_ms) AS idle_ms,
           string_agg(DISTINCT group_name, ' ' ORDER BY group_name) AS groups
    FROM comm_ops JOIN json_sources s USING (rank) GROUP BY ALL
),
-- msprof-analyze's cluster_communication.json (or cluster_analysis.db) for a rank without its own communication.json
from_cluster AS (
    SELECT rank, op_name(op_name) AS op_type, NULL AS kind,
           (SELECT parse_filename(min(file)) FROM load_log
            WHERE kind IN ('cluster_communication', 'cluster_db') AND rows > 0) AS source, count(*) AS ops,
           exact_sum(elapse_ms), exact_sum(transit_ms), exact_sum(wait_ms), exact_sum(sync_ms), exact_sum(idle_ms),
           string_agg(DISTINCT group_name, ' ' ORDER BY group_name)
    FROM cluster_comm_ops WHERE rank NOT IN (SELECT rank FROM json_ranks) GROUP BY ALL
),
from_kernels AS (
    SELECT rank, op, NULL, 'kernels', count(*), sum(dur_ns) / 1e6, NULL, NULL, NULL, NULL, NULL
    FROM kernel_stages
    WHERE is_comm AND rank NOT IN (SELECT rank FROM json_ranks UNION ALL SELECT rank FROM from_cluster)
    GROUP BY rank, op
),
-- Every comm kernel's start and end is a cut of busy_segments, so its exposed time is the running
-- total of exposed comm at its end less the one at its start (the last segment ending by then).
comm_kernels AS (SELECT rank, op, start_ns, end_ns FROM kernel_stages WHERE is_comm AND dur_ns > 0),
at_end AS (
    SELECT k.rank, k.op, k.start_ns, s.exposed_through_ns AS through_end
    FROM comm_kernels k ASOF JOIN busy_segments s ON k.rank = s.rank AND k.end_ns >= s.end_ns
),
exposed AS (
    SELECT e.rank, e.op AS op_type, sum(e.through_end - coalesce(s.exposed_through_ns, 0)) / 1e6 AS exposed_ms
    FROM at_end e ASOF LEFT JOIN busy_segments s ON e.rank = s.rank AND e.start_ns >= s.end_ns
    GROUP BY ALL
)
-- A rank not loaded whole (ranks_apart) has lost an unknown part of its kernels: their exposed
-- time beside the elapse of every op communication.json gives would read as comm hidden.
SELECT o.*, o.wait_ms / nullif(o.wait_ms + o.transit_ms, 0) AS wait_ratio,
       o.sync_ms / nullif(o.sync_ms + o.transit_ms, 0) AS sync_ratio,
       CASE WHEN o.rank IN (SELECT DISTINCT rank FROM kernels)
             AND o.rank NOT IN (SELECT rank FROM ranks_apart WHERE why = 'not loaded whole')
            THEN coalesce(x.exposed_ms, 0) END AS exposed_ms
FROM (SELECT * FROM from_json UNION ALL SELECT * FROM from_cluster UNION ALL SELECT * FROM from_kernels) o
LEFT JOIN exposed x USING (rank, op_type)
ORDER BY o.rank, o.elapse_ms DESC, o.op_type
