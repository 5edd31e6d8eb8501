-- each rule of the rules file whose metric passes its threshold, per rank: value, cause, the direction and docs for that cause, the projected saving per step (us), and apart: why the rank is not compared with the others (ranks_apart: not loaded whole, another run's), NULL when it is
SELECT f.ord, f.rule, m.rank, m.stage, f.metric, m.category, m.cause, m.value, f.threshold,
       coalesce(c.direction, f.direction) AS direction, coalesce(c.docs, f.docs) AS docs,
       coalesce(c.estimate, f.estimate) AS estimate, m.waited_for, m.basis_us,
       m.basis_us * (1 - 1 / coalesce(c.speedup, f.speedup, 'inf'::DOUBLE)) AS saving_us, x.why AS apart
FROM rules_findings f
CROSS JOIN rules_stages s
JOIN stage_metrics m
  ON m.metric = f.metric AND m.category IS NOT DISTINCT FROM f.category
 -- a rule of the DiT applies to a rank's single stage when it has no diffusion stages
 AND (m.stage IS NOT DISTINCT FROM f.stage OR (f.stage = s.dit_stage AND m.stage = s.default_stage))
LEFT JOIN rules_finding_causes c ON c.rule = f.rule AND c.cause = m.cause
LEFT JOIN ranks_apart x ON x.rank = m.rank
WHERE m.value > f.threshold
