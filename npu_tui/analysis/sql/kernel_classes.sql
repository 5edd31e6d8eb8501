-- each distinct (type, name, core) of the kernels: its operator identity (op: the name without its per-call suffix), category (rules file), and whether it counts as compute / comm / a memory copy, and whether it is a VAE-signature kernel (Conv, GroupNorm, upsampling)
-- Type first, then name, then core: the first rule (in file order) matching the earliest field;
-- names are matched by their operator identity (op_name). Stored (a few thousand rows at most):
-- the rules' patterns are table values, which DuckDB compiles again for every row it matches, so
-- this is worked out once, not in every query over the kernels.
WITH raw AS (SELECT DISTINCT type, name, core FROM kernels),
k AS MATERIALIZED (
    SELECT type, name, core, op_name(name) AS op, coalesce(type, '') AS type_key,
           coalesce(op_name(name), '') AS name_key,
           lower(coalesce(core, '')) AS core_key
    FROM raw
),
keys AS (SELECT DISTINCT type_key, name_key, core_key FROM k),
matched AS (
    SELECT k.type_key, k.name_key, k.core_key,
           arg_min(r.category, CASE r.field WHEN 'type' THEN 0 WHEN 'name' THEN 1 ELSE 2 END * 100000 + r.ord)
               AS category
    FROM keys k
    JOIN rules_categories r
      ON CASE r.field
             WHEN 'type' THEN regexp_matches(k.type_key, r.pattern, 'i')
             WHEN 'name' THEN regexp_matches(k.name_key, r.pattern, 'i')
             ELSE k.core_key = r.pattern
         END
    GROUP BY ALL
),
labelled AS MATERIALIZED (
    SELECT m.*,
           m.category = (SELECT any_value(comm_category) FROM rules_compute) AS is_comm,
           m.category IN (SELECT category FROM rules_compute WHERE category IS NOT NULL)
             OR m.core_key IN (SELECT core FROM rules_compute WHERE core IS NOT NULL) AS compute_rule
    FROM matched m
),
by_raw AS (
    SELECT k.type, k.name, k.core, k.op,
           coalesce(l.category, (SELECT any_value(default_category) FROM rules_compute)) AS category,
           coalesce(l.compute_rule AND NOT l.is_comm, false) AS is_compute,
           coalesce(l.is_comm, false) AS is_comm,
           regexp_matches(k.type_key, s.vae_pattern, 'i') OR regexp_matches(k.name_key, s.vae_pattern, 'i') AS vae_sig,
           NOT coalesce(l.is_comm, false) AND NOT coalesce(l.compute_rule, false)
             AND (regexp_matches(k.type_key, c.copies, 'i') OR regexp_matches(k.name_key, c.copies, 'i')
                  OR regexp_matches(k.core_key, c.copies, 'i')) AS is_copy
    FROM k LEFT JOIN labelled l USING (type_key, name_key, core_key)
    CROSS JOIN rules_stages s
    CROSS JOIN (SELECT any_value(copies) AS copies FROM rules_compute) c
)
SELECT * FROM by_raw
