-- the global find (ctrl+f): each kernel name with its operator (type, identity, input shapes), how many kernels carry it and their total time (us), over every rank and stage
SELECT type_key(type) AS type, op, input_shapes, name, count(*) AS kernels, sum(dur_ns) / 1e3 AS total_us
FROM kernel_stages
GROUP BY ALL
