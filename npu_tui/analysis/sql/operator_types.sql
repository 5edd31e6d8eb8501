-- the Operators pane: kernel types over every rank and stage, with count, total, mean and longest call (us), share of all kernel time, and the type's operator names (what `/` matches besides the type)
-- Sums of integer ns: exact, so the same whatever order parallel threads add them in.
SELECT type, sum(count) AS count, sum(time_ns) / 1e3 AS total_us, sum(time_ns) / 1e3 / sum(count) AS mean_us,
       max(max_us) AS max_us, sum(time_ns) / nullif(sum(sum(time_ns)) OVER (), 0) AS share,
       string_agg(DISTINCT op, ' ' ORDER BY op) AS operators
FROM top_operators
GROUP BY type
