-- range_operators(r, t0, t1): the operators of rank r in [t0, t1) (ns) by type and input shapes: kernels, time inside the range (total, mean, longest) and share of the range's kernel time
SELECT type, op, input_shapes, any_value(category) AS category, count(*) AS count, sum(in_range_ns) / 1e3 AS total_us,
       sum(in_range_ns) / 1e3 / count(*) AS mean_us, max(in_range_us) AS max_us,
       sum(in_range_ns) / nullif(sum(sum(in_range_ns)) OVER (), 0) AS share
FROM range_kernels(r, t0, t1)
GROUP BY type, op, input_shapes
