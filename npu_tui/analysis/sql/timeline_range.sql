-- timeline_range(r, t0, t1): what a Timeline selection holds on rank r in [t0, t1) (ns): per category (kind 'category') its kernels, their time inside the range and its share of the range's kernel time; then (kind 'lane') exposed comm and free time inside the range as the Timeline's lanes draw them, share of the range's length
WITH lanes AS (
    SELECT lane_no, sum(least(end_ns, t1) - greatest(start_ns, t0)) AS ns
    FROM timeline_spans
    WHERE rank = r AND lane_no IN (3, 4) AND end_ns > t0 AND start_ns < t1
    GROUP BY lane_no
)
SELECT r AS rank, category AS part, 'category' AS kind, count(*) AS kernels, sum(in_range_ns) / 1e3 AS time_us,
       sum(in_range_ns) / nullif(sum(sum(in_range_ns)) OVER (), 0) AS share
FROM range_kernels(r, t0, t1)
GROUP BY category
UNION ALL
SELECT r, p.part, 'lane', NULL, coalesce(l.ns, 0) / 1e3, coalesce(l.ns, 0) / (t1 - t0)
FROM (VALUES (3, 'exposed comm'), (4, 'free')) p(lane_no, part) LEFT JOIN lanes l USING (lane_no)
