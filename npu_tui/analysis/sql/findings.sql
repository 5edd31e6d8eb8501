-- findings: each rule of the rules file whose metric passes its threshold, with the estimated saving per step (us)
SELECT f.rule, m.rank, m.stage, f.metric, m.category, m.value, f.threshold, f.direction, f.docs,
       f.estimate, m.time_us, m.basis_us * (1 - 1 / coalesce(f.speedup, 'inf'::DOUBLE)) AS step_saving_us
FROM rules_findings f
CROSS JOIN rules_stages s
JOIN stage_metrics m
  ON m.metric = f.metric AND m.category IS NOT DISTINCT FROM f.category
 -- a rule of the DiT applies to a rank's single stage when it has no diffusion stages
 AND (m.stage IS NOT DISTINCT FROM f.stage OR (f.stage = s.dit_stage AND m.stage = s.default_stage))
WHERE m.value > f.threshold
ORDER BY step_saving_us DESC, f.ord, m.rank
