-- comm ops per rank and operation (its identity: run ids stripped): count, elapse / transit / wait / sync / idle (ms), wait ratio; from communication.json, else the kernels the rules file calls Comm (elapse = their time)
WITH json_ranks AS (SELECT DISTINCT rank FROM comm_ops),
from_json AS (
    SELECT rank, op_name(op_name) AS op_type, kind, 'communication.json' AS source, count(*) AS ops,
           sum(elapse_ms) AS elapse_ms, sum(transit_ms) AS transit_ms, sum(wait_ms) AS wait_ms,
           sum(sync_ms) AS sync_ms, sum(idle_ms) AS idle_ms
    FROM comm_ops GROUP BY ALL
),
from_kernels AS (
    SELECT rank, op, NULL, 'kernels', count(*), sum(dur_ns) / 1e6, NULL, NULL, NULL, NULL
    FROM kernel_stages
    WHERE is_comm AND rank NOT IN (SELECT rank FROM json_ranks)
    GROUP BY rank, op
)
SELECT *, wait_ms / nullif(wait_ms + transit_ms, 0) AS wait_ratio
FROM (SELECT * FROM from_json UNION ALL SELECT * FROM from_kernels)
ORDER BY rank, elapse_ms DESC
