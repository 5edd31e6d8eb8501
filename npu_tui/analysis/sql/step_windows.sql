-- per rank and step (NULL: no step ids), the device span of its kernels
SELECT rank, step, min(start_ns) AS start_ns, max(start_ns + dur_ns) AS end_ns
FROM kernels GROUP BY rank, step
