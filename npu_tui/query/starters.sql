-- Starter queries for the SQL console. Each begins with a `-- name:` line; times are shown in us.

-- name: Top kernels by total time
SELECT name, type, count(*) AS calls,
       round(sum(dur_ns) / 1e3, 3) AS total_us,
       round(avg(dur_ns) / 1e3, 3) AS avg_us,
       round(100 * sum(dur_ns) / sum(sum(dur_ns)) OVER (), 2) AS pct_of_kernel_time
FROM kernels
GROUP BY name, type
ORDER BY total_us DESC
LIMIT 50;

-- name: Kernels of one type by input shape
-- The type with the most time; replace the subquery with a literal ('MatMulV3') to pick another.
SELECT type, input_shapes, count(*) AS calls,
       round(sum(dur_ns) / 1e3, 3) AS total_us,
       round(avg(dur_ns) / 1e3, 3) AS avg_us,
       round(min(dur_ns) / 1e3, 3) AS min_us,
       round(max(dur_ns) / 1e3, 3) AS max_us
FROM kernels
WHERE type = (SELECT type FROM kernels GROUP BY type ORDER BY sum(dur_ns) DESC LIMIT 1)
GROUP BY type, input_shapes
ORDER BY total_us DESC;

-- name: Exposed communication per stage
-- comm_exposure: comm not covered by compute in each stage, per step (warm-up steps left out) and
-- its share of the stage's time per step, as comm_exposed_high tests it (analysis view).
SELECT rank, stage, steps, round(stage_us_per_step, 3) AS stage_us_per_step,
       round(comm_us_per_step, 3) AS comm_us_per_step, round(exposed_us_per_step, 3) AS exposed_us_per_step,
       round(exposed_share, 4) AS exposed_share, source
FROM comm_exposure
ORDER BY rank, stage;

-- name: Step breakdown per rank
-- step_breakdown: step_trace_time.csv when present, else the overlap lanes, else kernels.
SELECT rank, step, computing_us, comm_not_overlapped_us, overlapped_us, free_us, stage_us, bubble_us, step_us, source
FROM step_breakdown
ORDER BY rank, step;

-- name: What each file gave
SELECT rank, file, rows, skipped_rows, round(seconds, 3) AS seconds, note
FROM load_log
ORDER BY rank, file;
