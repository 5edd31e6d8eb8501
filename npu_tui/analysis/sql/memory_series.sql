-- device memory over time per rank (MB): allocated, reserved and active as the framework's allocator (memory_record's PTA component) tracks them, else the reserved memory of the whole process (APP), else (a CPU-only Kineto trace) the CPU allocator's; with the stage window each sample falls in (window_no, stage; outside every window NULL)
WITH best AS (
    SELECT rank, arg_min(component, CASE component WHEN 'PTA' THEN 0 WHEN 'APP' THEN 1 ELSE 2 END) AS component
    FROM memory_record WHERE component IN ('PTA', 'APP', 'CPU') GROUP BY rank
),
samples AS (
    SELECT m.rank, m.ts_ns, m.allocated_mb, m.reserved_mb, m.active_mb, m.component
    FROM memory_record m JOIN best b USING (rank, component)
)
SELECT s.rank, s.ts_ns, s.allocated_mb, s.reserved_mb, s.active_mb, s.component,
       CASE WHEN s.ts_ns < w.end_ns THEN w.window_no END AS window_no,
       CASE WHEN s.ts_ns < w.end_ns THEN w.stage END AS stage
FROM samples s
ASOF LEFT JOIN stage_windows w ON w.rank = s.rank AND s.ts_ns >= w.start_ns
