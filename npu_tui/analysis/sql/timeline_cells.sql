-- The Timeline's cells: timeline_draw's spans (aligned ns) of ranks $r0 to $r1 cut into $n buckets of $w ns
-- from $t0; per rank, lane and bucket the dominant colour code (the most time; memory: the highest), the time covered and the
-- number of spans. Most spans fall in one bucket and are placed without a list; only those across
-- bucket edges are cut into one row a bucket.
WITH b AS (
    SELECT rank, lane_no, code, start_ns, end_ns,
           greatest((start_ns - $t0::BIGINT) // $w::BIGINT, 0) AS b0,
           least((end_ns - 1 - $t0::BIGINT) // $w::BIGINT, $n::BIGINT - 1) AS b1
    FROM timeline_draw
    WHERE rank BETWEEN $r0 AND $r1 AND end_ns > $t0::BIGINT AND start_ns < $t0::BIGINT + $w::BIGINT * $n::BIGINT
),
cut AS (
    SELECT rank, lane_no, code, b0 AS b,
           least(end_ns, $t0::BIGINT + (b0 + 1) * $w::BIGINT) - greatest(start_ns, $t0::BIGINT + b0 * $w::BIGINT) AS ns
    FROM b WHERE b0 = b1
    UNION ALL
    SELECT rank, lane_no, code, bb,
           least(end_ns, $t0::BIGINT + (bb + 1) * $w::BIGINT) - greatest(start_ns, $t0::BIGINT + bb * $w::BIGINT)
    FROM (SELECT *, unnest(range(b0, b1 + 1)) AS bb FROM b WHERE b1 > b0)
),
per AS (SELECT rank, lane_no, b, code, sum(ns) AS ns, count(*) AS spans FROM cut GROUP BY ALL)
-- the memory lane (5) shows the highest level in the bucket, not the longest: a short peak stays seen
-- (its codes, 'memory 1' .. 'memory 8', number in that order)
SELECT rank, lane_no, b, CASE WHEN lane_no = 5 THEN max(code) ELSE arg_max(code, ns) END AS code,
       sum(ns) AS ns, sum(spans) AS spans
FROM per
GROUP BY rank, lane_no, b
