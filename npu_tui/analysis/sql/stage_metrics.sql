-- the numbers findings test: share per stage and category, exposed_share per stage, spread across ranks; basis_us is the time per step a fix acts on
WITH steps AS (
    SELECT rank, greatest(count(*), 1) AS steps FROM step_breakdown GROUP BY rank
)
SELECT c.rank, c.stage, 'share' AS metric, c.category, c.share AS value, c.time_us,
       c.time_us / coalesce(s.steps, 1) AS basis_us
FROM stage_categories c LEFT JOIN steps s USING (rank)
UNION ALL
SELECT e.rank, e.stage, 'exposed_share', NULL, e.exposed_share, e.exposed_us,
       e.exposed_us / coalesce(s.steps, 1)
FROM comm_exposure e LEFT JOIN steps s USING (rank)
UNION ALL
SELECT slow_rank, NULL, 'spread', measure, spread, max_us, max_us - mean_us
FROM rank_spread
