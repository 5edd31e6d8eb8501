-- stage windows from kernel signatures, per rank and step: the VAE's Conv-heavy run, the DiT's repeated attention
-- VAE core: the maximum-sum run of (signature kernel ? 1 : 0) - vae_share, weighted by duration
-- (comm weighs nothing), so one patch-embedding Conv per DiT forward, or attention and MatMul
-- inside the decoder, cannot move it; it must hold vae_min_kernels signature kernels. The VAE
-- starts at the longest idle gap between the DiT's last attention and that core, and runs to the
-- end of the step.
-- DiT: the (type, input shapes) of attention-category kernels with the most time is the loop's
-- attention. Before its first kernel, the last encoder-category kernel whose (type, shapes) never
-- recurs inside the loop is the text encoder's. With two forwards or more the DiT starts where
-- the first forward's prologue does (below); with one, at the longest idle gap between the text
-- encoder and the attention. It runs up to the VAE (or the end of the step), one window per
-- forward: a forward starts wherever the first four compute kernels of the first forward recur.
-- A Conv-heavy run without the attention loop is no evidence of a diffusion pipeline (a ResNet
-- has one too): such a step yields no windows. Confidence: medium with both, low with the DiT alone.
WITH cfg AS (SELECT * FROM rules_stages),
k AS (SELECT * FROM signature_scan),
-- m0: the least p0 so far (a second sort, on these few columns only)
least_p0 AS MATERIALIZED (
    SELECT rank, part, i, p0, p1, min(p0) OVER (PARTITION BY rank, part ORDER BY i ROWS UNBOUNDED PRECEDING) AS m0
    FROM k
),
-- the run ending at the first kernel with the largest gain (an aggregate, not a sort)
best_gain AS (SELECT rank, part, max(p1 - m0) AS gain FROM least_p0 GROUP BY rank, part),
best AS (
    SELECT k.rank, k.part, min(k.i) AS j, arg_min(k.m0, k.i) AS m0, any_value(b.gain) AS gain
    FROM least_p0 k JOIN best_gain b ON b.rank = k.rank AND b.part = k.part AND k.p1 - k.m0 = b.gain
    GROUP BY k.rank, k.part
),
core_span AS (
    SELECT b.rank, b.part, max(r.i) AS i0, b.j FROM best b
    JOIN k r ON r.rank = b.rank AND r.part = b.part AND r.i <= b.j AND r.p0 = b.m0
    WHERE b.gain > 0
    GROUP BY ALL
),
core AS (
    SELECT c.rank, c.part, c.i0 FROM core_span c
    JOIN k r ON r.rank = c.rank AND r.part = c.part AND r.i BETWEEN c.i0 AND c.j
    GROUP BY ALL
    HAVING count(*) FILTER (WHERE r.vae_sig AND NOT r.is_comm) >= any_value((SELECT vae_min_kernels FROM cfg))
),
parts AS MATERIALIZED (
    SELECT r.rank, r.part, max(r.i) AS last_i, c.i0 AS core_i0
    FROM k r LEFT JOIN core c USING (rank, part) GROUP BY ALL
),
attention AS MATERIALIZED (
    SELECT rank, t, shapes FROM k, cfg WHERE k.category = cfg.attention_category
    GROUP BY rank, t, shapes
    QUALIFY row_number() OVER (PARTITION BY rank ORDER BY sum(dur_ns) DESC, t, shapes) = 1
),
attention_span AS (
    SELECT p.rank, p.part, p.last_i, p.core_i0, min(k.i) AS a, max(k.i) AS la
    FROM parts p
    JOIN k ON k.rank = p.rank AND k.part = p.part AND k.i < coalesce(p.core_i0, p.last_i + 1)
    JOIN attention att ON att.rank = k.rank AND att.t = k.t AND att.shapes = k.shapes
    GROUP BY ALL
),
vae_first AS (
    SELECT s.rank, s.part, r.i AS v0 FROM attention_span s
    JOIN k r ON r.rank = s.rank AND r.part = s.part AND r.i > s.la AND r.i <= s.core_i0
    QUALIFY row_number() OVER (PARTITION BY s.rank, s.part ORDER BY coalesce(r.gap, 0) DESC, r.i DESC) = 1
),
loop_span AS MATERIALIZED (
    SELECT s.rank, s.part, s.a, coalesce(v.v0 - 1, s.last_i) AS z, v.v0, s.last_i
    FROM attention_span s LEFT JOIN vae_first v USING (rank, part)
),
loop_sigs AS (
    SELECT DISTINCT k.rank, k.part, k.t, k.shapes
    FROM loop_span l JOIN k ON k.rank = l.rank AND k.part = l.part AND k.i BETWEEN l.a AND l.z
    CROSS JOIN cfg
    WHERE list_contains(cfg.encoder_categories, k.category)
),
encoder_kernels AS (
    SELECT k.rank, k.part, k.i
    FROM loop_span l JOIN k ON k.rank = l.rank AND k.part = l.part AND k.i < l.a
    CROSS JOIN cfg
    ANTI JOIN loop_sigs s ON s.rank = k.rank AND s.part = k.part AND s.t = k.t AND s.shapes = k.shapes
    WHERE list_contains(cfg.encoder_categories, k.category)
),
encoder_end AS (
    SELECT l.rank, l.part, l.a, l.z, coalesce(max(e.i), 0) AS e
    FROM loop_span l LEFT JOIN encoder_kernels e ON e.rank = l.rank AND e.part = l.part
    GROUP BY ALL
),
dit_first_by_gap AS (
    SELECT e.rank, e.part, e.z, r.i AS d0 FROM encoder_end e
    JOIN k r ON r.rank = e.rank AND r.part = e.part AND r.i > e.e AND r.i <= e.a
    QUALIFY row_number() OVER (PARTITION BY e.rank, e.part
                               ORDER BY CASE WHEN e.e = 0 THEN 0 ELSE coalesce(r.gap, 0) END DESC, r.i) = 1
),
-- With two forwards or more the first forward's start is exact: read the compute kernels backwards
-- from the loop's first attention and from each later one; the longest run that agrees is the
-- forward's prologue (the kernels before it differ: text encoder or latent set-up, versus the
-- previous forward's end).
comp AS MATERIALIZED (SELECT rank, part, i, t, shapes, ci FROM k WHERE NOT is_comm),
occurrences AS (
    SELECT c.rank, c.part, c.ci FROM loop_span l
    JOIN comp c ON c.rank = l.rank AND c.part = l.part AND c.i BETWEEN l.a AND l.z
    JOIN attention att ON att.rank = c.rank AND att.t = c.t AND att.shapes = c.shapes
),
first_occurrence AS (SELECT rank, part, min(ci) AS c1 FROM occurrences GROUP BY rank, part),
pairs AS MATERIALIZED (
    SELECT o.rank, o.part, o.ci AS cm, f.c1, j.range AS j, f.c1 - j.range AS cx, o.ci - j.range AS cy
    FROM occurrences o JOIN first_occurrence f USING (rank, part)
    CROSS JOIN range(1, (SELECT max_prologue_kernels FROM cfg) + 1) j
    WHERE o.ci > f.c1 AND j.range < f.c1
),
-- one side at a time: joined together, the planner pairs the two sides on (rank, part) first
pairs_x AS MATERIALIZED (
    SELECT p.*, x.t AS xt, x.shapes AS xs
    FROM pairs p JOIN comp x ON x.rank = p.rank AND x.part = p.part AND x.ci = p.cx
),
agreement AS (
    SELECT p.rank, p.part, p.cm, any_value(p.c1) AS c1,
           coalesce(min(p.j) FILTER (WHERE p.xt <> y.t OR p.xs <> y.shapes) - 1, max(p.j)) AS len
    FROM pairs_x p
    JOIN comp y ON y.rank = p.rank AND y.part = p.part AND y.ci = p.cy
    GROUP BY p.rank, p.part, p.cm
),
prologue AS (
    SELECT rank, part, any_value(c1) - max(len) AS c0 FROM agreement GROUP BY rank, part HAVING max(len) > 0
),
-- the forward starts right after the compute kernel before its prologue (comm launched with it included)
dit_first_by_prologue AS (
    SELECT p.rank, p.part, coalesce(b.i + 1, 1) AS d0
    FROM prologue p LEFT JOIN comp b ON b.rank = p.rank AND b.part = p.part AND b.ci = p.c0 - 1
),
dit_first AS MATERIALIZED (
    SELECT g.rank, g.part, g.z, coalesce(p.d0, g.d0) AS d0
    FROM dit_first_by_gap g LEFT JOIN dit_first_by_prologue p USING (rank, part)
),
-- Forward boundaries: each compute kernel's signature and the three after it in [d0, z], as one
-- hash (fewer near z: signature_scan's g1..g4).
grams_in AS (
    SELECT r.rank, r.part, r.i, r.ci, r.g1, r.g2, r.g3, r.g4
    FROM dit_first d JOIN k r ON r.rank = d.rank AND r.part = d.part AND r.i BETWEEN d.d0 AND d.z
    WHERE NOT r.is_comm
),
last_ci AS (SELECT rank, part, max(ci) AS cz FROM grams_in GROUP BY rank, part),
grams AS (
    SELECT g.rank, g.part, g.i,
           CASE least(l.cz - g.ci, 3) WHEN 0 THEN g.g1 WHEN 1 THEN g.g2 WHEN 2 THEN g.g3 ELSE g.g4 END AS g
    FROM grams_in g JOIN last_ci l USING (rank, part)
),
first_gram AS (
    SELECT rank, part, arg_min(g, i) AS g FROM grams GROUP BY rank, part
),
forward_starts AS (
    SELECT d.rank, d.part, d.d0 AS fs, d.z FROM dit_first d
    UNION
    SELECT g.rank, g.part, g.i, d.z FROM grams g
    JOIN first_gram f ON f.rank = g.rank AND f.part = g.part AND f.g = g.g
    JOIN dit_first d ON d.rank = g.rank AND d.part = g.part AND g.i > d.d0
),
forwards AS (
    SELECT rank, part, fs, coalesce(lead(fs) OVER (PARTITION BY rank, part ORDER BY fs) - 1, z) AS fe
    FROM forward_starts
),
-- forwards are runs of i: list each one's kernels and join on i (no range join, no sort of the kernels)
dit AS (
    SELECT f.rank, f.part, min(r.start_ns) AS start_ns, max(r.end_ns) AS end_ns
    FROM (SELECT rank, part, fs, unnest(range(fs, fe + 1)) AS i FROM forwards) f
    JOIN k r ON r.rank = f.rank AND r.part = f.part AND r.i = f.i
    GROUP BY f.rank, f.part, f.fs
),
vae AS (
    SELECT l.rank, l.part, min(r.start_ns) AS start_ns, max(r.end_ns) AS end_ns
    FROM loop_span l JOIN k r ON r.rank = l.rank AND r.part = l.part AND r.i BETWEEN l.v0 AND l.last_i
    GROUP BY l.rank, l.part
),
windows AS (
    SELECT rank, part, cfg.dit_stage AS stage, start_ns, end_ns FROM dit, cfg
    UNION ALL
    SELECT rank, part, cfg.vae_stage, start_ns, end_ns FROM vae, cfg
)
SELECT w.rank, w.part AS step, w.stage, w.start_ns, w.end_ns,
       CASE WHEN EXISTS (SELECT 1 FROM vae v WHERE v.rank = w.rank AND v.part = w.part)
            THEN 'medium' ELSE 'low' END AS confidence
FROM windows w
