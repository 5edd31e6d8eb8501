-- the Operators pane: kernel types over every rank and stage, with count, total, mean and longest call (us), share of all kernel time, and the type's operator names (what `/` matches besides the type)
SELECT type, sum(count) AS count, sum(time_us) AS total_us, sum(time_us) / sum(count) AS mean_us,
       max(max_us) AS max_us, sum(time_us) / nullif(sum(sum(time_us)) OVER (), 0) AS share,
       string_agg(DISTINCT op, ' ' ORDER BY op) AS operators
FROM top_operators
GROUP BY type
