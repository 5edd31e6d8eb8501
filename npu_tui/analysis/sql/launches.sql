-- per rank, each moment the host launched device work (host_ts_ns) and the device start of the last kernel launched then (device_ts_ns): where the work the host had queued by that moment runs; on a rank whose trace was not loaded whole, a last row just after its last launch read, device_ts_ns NULL: where the host's work ran after the cut is unknown
-- A host op may launch several kernels at one moment: one row a moment, so an ASOF join on it has
-- one answer (among rows of one key it picks any: DuckDB 1.4 and 2.0 picked differently). A moment
-- past a cut stays at its own time (a NULL device start): placed on the last launch read, every
-- one of them fell on one instant.
SELECT rank, host_ts_ns, max(device_ts_ns) AS device_ts_ns
FROM flows
WHERE device_ts_ns IS NOT NULL
GROUP BY rank, host_ts_ns
UNION ALL
SELECT rank, max(host_ts_ns) + 1, NULL
FROM flows
WHERE device_ts_ns IS NOT NULL AND rank IN (SELECT rank FROM ranks_apart WHERE why = 'not loaded whole')
GROUP BY rank
