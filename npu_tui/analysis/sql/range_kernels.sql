-- range_kernels(r, t0, t1): the kernels of rank r that run in [t0, t1) (ns on the profile's clock), as kernel_instances lists them, with in_range_us: the part of each inside the range
SELECT *, (least(end_ns, t1) - greatest(start_ns, t0)) / 1e3 AS in_range_us,
       least(end_ns, t1) - greatest(start_ns, t0) AS in_range_ns
FROM kernel_instances
WHERE rank = r AND end_ns > t0 AND start_ns < t1
