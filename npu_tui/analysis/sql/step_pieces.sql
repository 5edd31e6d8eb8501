-- per rank, step and stage: the piece of the step's span the stage holds (start_ns, end_ns); a stage holds the time from its window's start to the next window's start, the first from the first step's start, the last to the last step's end
-- Idle time between windows is the earlier stage's, overlap the later one's. The step account
-- divides each step by these pieces, and comm_exposure measures inside them: one cut for both.
-- (A CPU-only trace's step is its ProfilerStep range, wider than its ops.)
WITH bounds AS (SELECT rank, min(start_ns) AS first_ns, max(end_ns) AS last_ns FROM step_windows GROUP BY rank),
stage_spans AS (
    SELECT w.rank, w.stage,
           CASE WHEN row_number() OVER r = 1 THEN least(w.start_ns, b.first_ns) ELSE w.start_ns END AS start_ns,
           coalesce(lead(w.start_ns) OVER r, greatest(w.end_ns, b.last_ns)) AS end_ns
    FROM stage_windows w JOIN bounds b USING (rank)
    WINDOW r AS (PARTITION BY w.rank ORDER BY w.start_ns, w.end_ns)
)
SELECT w.rank, s.step, w.stage, greatest(w.start_ns, s.start_ns) AS start_ns, least(w.end_ns, s.end_ns) AS end_ns
FROM stage_spans w JOIN step_windows s ON s.rank = w.rank AND w.start_ns < s.end_ns AND w.end_ns > s.start_ns
