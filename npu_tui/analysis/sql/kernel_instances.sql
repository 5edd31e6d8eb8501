-- every kernel as the drill-downs list it: rank, stage, category, type, op, name, step, start (us from the rank's first kernel), duration, wait, shapes; start_ns / end_ns on the profile's clock
SELECT k.rank, k.stage, k.category, type_key(k.type) AS type, k.op, k.name, k.step,
       (k.start_ns - f.t0) / 1e3 AS start_us, k.dur_ns / 1e3 AS dur_us, k.wait_ns / 1e3 AS wait_us,
       k.block_dim, k.stream_id, k.core, k.input_shapes, k.input_dtypes, k.output_shapes,
       k.start_ns, k.end_ns
FROM kernel_stages k
JOIN (SELECT rank, min(start_ns) AS t0 FROM kernel_stages GROUP BY rank) f USING (rank)
