-- findings: each rule of the rules file whose metric passes its threshold, with the estimated saving per step (us)
SELECT f.rule, m.rank, m.stage, f.metric, m.category, m.value, f.threshold, f.direction, f.docs,
       f.estimate, m.time_us, m.basis_us * (1 - 1 / coalesce(f.speedup, 'inf'::DOUBLE)) AS step_saving_us
FROM rules_findings f
JOIN stage_metrics m
  ON m.metric = f.metric AND m.stage IS NOT DISTINCT FROM f.stage AND m.category IS NOT DISTINCT FROM f.category
WHERE m.value > f.threshold
ORDER BY step_saving_us DESC, f.ord, m.rank
