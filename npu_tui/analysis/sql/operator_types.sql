-- the Operators pane: kernel types over every rank and stage, with count, total, mean and longest call (us) and share of all kernel time
SELECT type, sum(count) AS count, sum(time_us) AS total_us, sum(time_us) / sum(count) AS mean_us,
       max(max_us) AS max_us, sum(time_us) / nullif(sum(sum(time_us)) OVER (), 0) AS share
FROM top_operators
GROUP BY type
