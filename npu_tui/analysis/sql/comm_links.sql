-- the Comm pane's links: per src -> dst link, communication group and transport (communication_matrix.json, else msprof-analyze's cluster matrix), else per rank and transport (communication.json): the rank whose file reported it, the group (its name where the job gave one, else as the files name it), the job's src and dst ranks (NULL: a rank not loaded, numbered within the group as src_local / dst_local), entries, MB moved, transit time (ms), GB/s, and slow: far below the median of its transport's links (rules [comm] slow_link_ratio)
-- The profiler's <op>-total entry sums every op of its kind; the others (top1, middle, bottom1..3)
-- are samples of the same ops: a kind with a total counts by it alone (per group: the key ends in
-- @group, where the file gives one). torch_npu 5.0's file keeps every op and their sum, "Total Op
-- Info", which is left out; so is msprof-analyze's own in its cluster matrix (with or without
-- @group), used without the ranks' communication_matrix.json. A rank's own file numbers the ranks
-- of each group within it (src_global / dst_global: the job's); links stay apart per reporting
-- rank and group.
WITH entries AS (
    SELECT rank, step, op_key, src_rank AS src_local, dst_rank AS dst_local, src_global AS src_rank,
           dst_global AS dst_rank, transport, transit_size_mb, transit_time_ms FROM comm_matrix
    WHERE op_key NOT LIKE 'Total Op Info%'
    UNION ALL
    SELECT NULL, step, op_key, NULL, NULL, src_rank, dst_rank, transport, transit_size_mb, transit_time_ms
    FROM cluster_comm_matrix
    WHERE NOT EXISTS (SELECT 1 FROM comm_matrix) AND op_key NOT LIKE 'Total Op Info%'
),
kinds AS (
    SELECT *, regexp_extract(op_without_group(op_key), '^(.*)-[^-]*$', 1) AS op_kind, op_group(op_key) AS grp,
           op_without_group(op_key) LIKE '%-total' AS total
    FROM entries
),
kept AS (SELECT * FROM kinds QUALIFY total OR NOT bool_or(total) OVER (PARTITION BY rank, step, grp, op_kind)),
labels AS (SELECT group_name AS grp, any_value(label) AS label FROM comm_groups GROUP BY ALL),
-- Sums the same on every load (exact_sum): the grid sorts by them.
matrix AS (
    SELECT k.rank AS reported_by, coalesce(any_value(l.label), k.grp) AS comm_group, k.src_rank, k.dst_rank,
           k.src_local, k.dst_local, k.transport, count(*) AS ops, exact_sum(k.transit_size_mb) AS size_mb,
           exact_sum(k.transit_time_ms) AS time_ms
    FROM kept k LEFT JOIN labels l USING (grp)
    GROUP BY k.rank, k.grp, k.src_rank, k.dst_rank, k.src_local, k.dst_local, k.transport
),
per_rank AS (
    SELECT rank, NULL, rank, NULL::INTEGER, NULL::INTEGER, NULL::INTEGER, transport, count(*), exact_sum(transit_size_mb),
           exact_sum(transit_time_ms)
    FROM comm_bandwidth b
    -- SDMA is the total of the rank's HCCS, PCIE and SIO (link_bandwidth.part_of): not a link more
    WHERE NOT EXISTS (SELECT 1 FROM entries)
      AND NOT (transport = 'SDMA' AND EXISTS (SELECT 1 FROM comm_bandwidth p WHERE p.rank = b.rank
                                              AND p.transport IN ('HCCS', 'HCCS_SW', 'PCIE', 'SIO')))
    GROUP BY rank, transport
),
links AS (
    SELECT *, size_mb / nullif(time_ms, 0) AS gbps
    FROM (SELECT * FROM matrix UNION ALL SELECT * FROM per_rank)
),
-- Three links of a transport at least: of two, a slow one cannot be told from a fast one. A link
-- that moved nothing has no bandwidth to compare.
medians AS (
    SELECT transport, median(gbps) AS median_gbps, count(*) AS links FROM links
    WHERE upper(transport) <> 'LOCAL' AND size_mb > 0 AND gbps > 0 GROUP BY transport
)
SELECT l.*, m.median_gbps,
       coalesce(m.links >= 3 AND l.size_mb > 0 AND l.gbps < (SELECT slow_link_ratio FROM rules_comm) * m.median_gbps,
                false) AS slow
FROM links l LEFT JOIN medians m USING (transport)
