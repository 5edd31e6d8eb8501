-- the operators behind each finding: of its rank and stage, in its category (share findings), the comm category (exposed comm) or the copies (copy share), all of the rank's otherwise; share of the finding's scope
-- stage is the finding's (NULL for a spread across ranks), kernel_stage the operators' own.
SELECT f.rule, f.rank, f.stage, t.stage AS kernel_stage, t.category, t.type, t.op, t.input_shapes,
       t.count, t.time_us AS total_us, t.time_us / t.count AS mean_us, t.max_us,
       CASE WHEN f.stage IS NULL THEN t.time_us / sum(t.time_us) OVER (PARTITION BY f.rule, f.rank)
            ELSE t.share END AS share
FROM finding_ranks f
JOIN top_operators t
  ON t.rank = f.rank
 AND (f.stage IS NULL OR t.stage = f.stage)
 AND (CASE f.metric WHEN 'share' THEN t.category = f.category
                    WHEN 'exposed_share' THEN t.category = (SELECT any_value(comm_category) FROM rules_compute)
                    WHEN 'copy_share' THEN t.is_copy
                    ELSE true END)
