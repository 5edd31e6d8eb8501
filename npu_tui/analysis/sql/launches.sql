-- per rank, each moment the host launched device work (host_ts_ns) and the device start of the last kernel launched then (device_ts_ns): where the work the host had queued by that moment runs
-- A host op may launch several kernels at one moment: one row a moment, so an ASOF join on it has
-- one answer (among rows of one key it picks any: DuckDB 1.4 and 2.0 picked differently).
SELECT rank, host_ts_ns, max(device_ts_ns) AS device_ts_ns
FROM flows
WHERE device_ts_ns IS NOT NULL
GROUP BY rank, host_ts_ns
