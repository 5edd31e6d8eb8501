-- per rank and operator (operator_memory: operator_memory.csv, or a Kineto trace's [memory] events): allocations, MB allocated in all and the largest, how long they were held (mean ms; one never released counts to the end), the memory held over time (MB·s), those never released, and the stage of its largest allocation (of equal ones the first)
SELECT rank, name, count(*) AS allocations, exact_sum(size_mb) AS total_mb, max(size_mb) AS max_mb,
       exact_sum(held_to_end_ms) / count(held_to_end_ms) AS mean_held_ms,
       exact_sum(size_mb * held_to_end_ms / 1e3) AS held_mb_s,
       count(*) FILTER (WHERE kept) AS never_released, arg_max(stage, [size_mb, -at_us]) AS stage
FROM memory_allocations
GROUP BY rank, name
