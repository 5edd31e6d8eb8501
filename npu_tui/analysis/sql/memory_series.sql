-- device memory over time per rank (MB): allocated, reserved and active of the framework's allocators (memory_record's PTA+GE component, else PTA; MindSpore's MindSpore+GE, else MindSpore), else the reserved memory of the whole process (APP), else (a CPU-only Kineto trace) the CPU allocator's, of one device (memory_devices()); at_ns: the sample on the device's clock, and the stage window it falls in (window_no, stage; outside every window NULL)
-- The host writes a sample when it allocates, ahead of the device: it is placed at the device start
-- of the last kernel launched by then (the flows), so it lands in the stage the device was in
-- when that work ran. Without flows, at its own time.
WITH samples AS (
    SELECT m.rank, m.ts_ns, m.allocated_bytes / 1048576.0 AS allocated_mb, m.reserved_bytes / 1048576.0 AS reserved_mb,
           m.active_bytes / 1048576.0 AS active_mb, m.component
    FROM memory_record m
    JOIN memory_devices() d ON d.rank = m.rank AND d.component = m.component AND coalesce(m.device, d.device) = d.device
),
launched AS (
    SELECT s.*, coalesce(f.device_ts_ns, s.ts_ns) AS at_ns
    FROM samples s
    ASOF LEFT JOIN launches f
      ON f.rank = s.rank AND s.ts_ns >= f.host_ts_ns
)
SELECT l.rank, l.ts_ns, l.at_ns, l.allocated_mb, l.reserved_mb, l.active_mb, l.component,
       CASE WHEN l.at_ns < w.end_ns THEN w.window_no END AS window_no,
       CASE WHEN l.at_ns < w.end_ns THEN w.stage END AS stage
FROM launched l
ASOF LEFT JOIN stage_windows w ON w.rank = l.rank AND l.at_ns >= w.start_ns
