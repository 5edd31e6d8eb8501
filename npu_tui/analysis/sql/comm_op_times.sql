-- comm ops per rank and op type: count, elapse / transit / wait / sync (ms) and wait share (waiting vs moving data)
SELECT rank, type_from_name(op_name) AS op_type, kind, count(*) AS ops, sum(elapse_ms) AS elapse_ms,
       sum(transit_ms) AS transit_ms, sum(wait_ms) AS wait_ms, sum(sync_ms) AS sync_ms,
       sum(wait_ms) / nullif(sum(wait_ms) + sum(transit_ms), 0) AS wait_ratio
FROM comm_ops
GROUP BY rank, type_from_name(op_name), kind
ORDER BY rank, elapse_ms DESC
