-- stage windows from kernel signatures, per rank and step: the denoising loop as the same transformer forward repeated (one window per cycle of the loop, and the forwards it holds: two where a cycle is two forwards alike, unbatched guidance's), the Conv-led VAE after it; confidence is the share of the loop's kernels that are the same a cycle later
-- The loop is a run of identical cycles (a forward, or the forwards of one denoising step under
-- unbatched CFG, with the scheduler's kernels after them). A kernel token (type, input shapes) that
-- occurs m times a cycle recurs after exactly m occurrences at the cycle's period, in every cycle:
-- for each token, the smallest m (1..4) whose distance to the m-th next occurrence takes one value
-- for nearly all of them is its period, and the kernels at that distance support it. A block of
-- the transformer repeats too, and so do the text encoder's layers or the VAE's frames: a cycle
-- must hold attention, no VAE (fewer VAE-signature kernels than vae_min_kernels) and blocks of its
-- own (block_min_kernels kernels that occur twice in it). The loop is where the most kernels
-- repeat, and of the periods repeating there the longest: a forward holds its blocks. What
-- runs before the first cycle is the text encoder and set-up (Other), but for forwards of the
-- loop's attention outside its cycles (a step cache's full forwards, before or after its cached
-- ones); after the last cycle, from the first to the last VAE-signature kernel, the VAE when it
-- holds vae_min_kernels of them (and so before the first cycle: a decode run after the step
-- before ended).
-- Without such a loop a step has no windows: a repeated block alone (a ResNet's, an LLM layer's)
-- is no evidence of a diffusion pipeline.
WITH cfg AS (SELECT * FROM rules_stages),
k AS (SELECT * FROM signature_scan),
leads AS MATERIALIZED (
    SELECT rank, part, g, ci, ci - lag(ci) OVER w AS back,
           lead(ci, 1) OVER w - ci AS d1, lead(ci, 2) OVER w - ci AS d2,
           lead(ci, 3) OVER w - ci AS d3, lead(ci, 4) OVER w - ci AS d4
    FROM k
    WINDOW w AS (PARTITION BY rank, part, g ORDER BY ci)
),
modes AS (
    SELECT rank, part, g, mode(d1) AS p1, mode(d2) AS p2, mode(d3) AS p3, mode(d4) AS p4,
           count(d1) AS n1, count(d2) AS n2, count(d3) AS n3, count(d4) AS n4
    FROM leads GROUP BY ALL HAVING count(d1) > 0
),
-- agreeing: all but one of the distances when two or more agree (the first or last cycle may differ
-- by a few kernels: a scheduler sets itself up on its first step); or, of several pipeline calls in
-- one step (a profile without steps, or a step a denoising step), at least half, every other one
-- longer: the gap from one call's loop to the next's
support AS (
    SELECT l.rank, l.part, l.g, any_value(m.p1) AS p1, any_value(m.p2) AS p2, any_value(m.p3) AS p3,
           any_value(m.p4) AS p4,
           count(*) FILTER (WHERE l.d1 = m.p1) AS a1, count(*) FILTER (WHERE l.d2 = m.p2) AS a2,
           count(*) FILTER (WHERE l.d3 = m.p3) AS a3, count(*) FILTER (WHERE l.d4 = m.p4) AS a4,
           count(*) FILTER (WHERE l.d1 < m.p1) AS s1, count(*) FILTER (WHERE l.d2 < m.p2) AS s2,
           count(*) FILTER (WHERE l.d3 < m.p3) AS s3, count(*) FILTER (WHERE l.d4 < m.p4) AS s4,
           any_value(m.n1) AS n1, any_value(m.n2) AS n2, any_value(m.n3) AS n3, any_value(m.n4) AS n4
    FROM leads l JOIN modes m USING (rank, part, g)
    GROUP BY l.rank, l.part, l.g
),
agreeing AS (
    SELECT s.*,
           a1 = n1 OR (a1 >= 2 AND (a1 >= cfg.period_support * n1 - 1 OR (s1 = 0 AND 2 * a1 >= n1))) AS r1,
           n2 > 0 AND (a2 = n2 OR (a2 >= 2 AND (a2 >= cfg.period_support * n2 - 1 OR (s2 = 0 AND 2 * a2 >= n2)))) AS r2,
           n3 > 0 AND (a3 = n3 OR (a3 >= 2 AND (a3 >= cfg.period_support * n3 - 1 OR (s3 = 0 AND 2 * a3 >= n3)))) AS r3,
           n4 > 0 AND (a4 = n4 OR (a4 >= 2 AND (a4 >= cfg.period_support * n4 - 1 OR (s4 = 0 AND 2 * a4 >= n4)))) AS r4
    FROM support s, cfg
),
token_period AS MATERIALIZED (
    SELECT rank, part, g,
           CASE WHEN r1 THEN 1 WHEN r2 THEN 2 WHEN r3 THEN 3 WHEN r4 THEN 4 END AS m,
           CASE WHEN r1 THEN p1 WHEN r2 THEN p2 WHEN r3 THEN p3 WHEN r4 THEN p4 END AS p
    FROM agreeing WHERE r1 OR r2 OR r3 OR r4
),
-- the kernels that recur at their token's period: each supports that period
supporting AS MATERIALIZED (
    SELECT l.rank, l.part, l.ci, l.back, t.p
    FROM leads l JOIN token_period t USING (rank, part, g)
    WHERE CASE t.m WHEN 1 THEN l.d1 WHEN 2 THEN l.d2 WHEN 3 THEN l.d3 ELSE l.d4 END = t.p
),
-- what a period covers: the union of [ci, ci + p) over its supporting kernels (the last one only
-- itself: what follows it need not repeat), in kernels and in kernel time
reach AS (
    SELECT rank, part, p, ci, ci + coalesce(least(p, lead(ci) OVER (PARTITION BY rank, part, p ORDER BY ci) - ci), 1) - 1 AS ce
    FROM supporting
),
covered AS MATERIALIZED (
    SELECT r.rank, r.part, r.p, count(*) AS kernels, min(r.ci) AS first_ci, max(r.ci) AS last_ci,
           sum(r.ce - r.ci + 1) AS covers, sum(b.dur_through - coalesce(a.dur_through, 0)) AS covers_ns
    FROM reach r
    LEFT JOIN k a ON a.rank = r.rank AND a.part = r.part AND a.ci = r.ci - 1
    JOIN k b ON b.rank = r.rank AND b.part = r.part AND b.ci = r.ce
    GROUP BY r.rank, r.part, r.p
),
candidates AS (
    SELECT c.*, b.fa_through - coalesce(a.fa_through, 0) AS attention,
           b.sig_through - coalesce(a.sig_through, 0) AS vae_kernels
    FROM covered c
    LEFT JOIN k a ON a.rank = c.rank AND a.part = c.part AND a.ci = c.first_ci - 1
    JOIN k b ON b.rank = c.rank AND b.part = c.part AND b.ci = least(c.first_ci + c.p - 1, c.last_ci)
),
-- (a rank scanned whole: a cycle no longer than its longest step, the premise of that scan: the
-- whole pipeline call repeats too)
step_sizes AS (
    SELECT rank, max(n) AS longest FROM (SELECT rank, step, count(*) AS n FROM k WHERE part = -2 GROUP BY ALL)
    GROUP BY ALL
),
plausible AS MATERIALIZED (
    SELECT c.* FROM candidates c
    LEFT JOIN step_sizes l ON l.rank = c.rank AND c.part = -2
    CROSS JOIN cfg
    WHERE c.kernels >= cfg.period_min_kernels AND c.attention > 0 AND c.vae_kernels < cfg.vae_min_kernels
      AND c.p <= coalesce(l.longest, c.p)
),
-- a forward holds its blocks: kernels that occur twice or more within one cycle (an LLM's layer
-- repeated, or a ResNet's, holds next to none)
blocks AS (
    SELECT rank, part, p, count(*) AS repeated FROM (
        SELECT c.rank, c.part, c.p, k.g FROM plausible c
        JOIN k ON k.rank = c.rank AND k.part = c.part AND k.ci BETWEEN c.first_ci AND c.first_ci + c.p - 1
        GROUP BY ALL HAVING count(*) >= 2
    ) GROUP BY ALL
),
valid AS (
    SELECT c.* FROM plausible c JOIN blocks b USING (rank, part, p), cfg WHERE b.repeated >= cfg.block_min_kernels
),
-- the loop is where the most kernels repeat, for two cycles or more (a prompt and a negative
-- prompt encoded in turn make one); counted in kernels, not time, so that a text encoder slowed
-- by a busy host cannot outweigh it; of the periods repeating there (a block's, the forward's),
-- the longest
best AS (
    SELECT * FROM valid
    QUALIFY row_number() OVER (PARTITION BY rank, part
                               ORDER BY (last_ci - first_ci) // p >= 1 DESC, covers DESC, covers_ns DESC, p DESC) = 1
),
period AS (
    SELECT v.rank, v.part, max(v.p) AS p
    FROM valid v JOIN best b USING (rank, part)
    WHERE least(v.last_ci, b.last_ci) - greatest(v.first_ci, b.first_ci)
          >= 0.5 * least(v.last_ci - v.first_ci, b.last_ci - b.first_ci)
    GROUP BY ALL
),
-- the loop: runs of the period's supporting kernels (a new run after a gap of more than a cycle,
-- another pipeline call in the same step); its last cycle is where the last run's kernels recur.
-- When the run's first kernel occurred less than two cycles before, that is where the loop starts:
-- its first cycle differs in length (and so supports nothing).
runs AS MATERIALIZED (
    SELECT rank, part, p, ci, back, sum(new_run) OVER (PARTITION BY rank, part ORDER BY ci ROWS UNBOUNDED PRECEDING) AS run
    FROM (
        SELECT s.rank, s.part, s.p, s.ci, s.back,
               coalesce(s.ci - lag(s.ci) OVER (PARTITION BY s.rank, s.part ORDER BY s.ci) > s.p, false)::INTEGER
                   AS new_run
        FROM supporting s JOIN period USING (rank, part, p)
    )
),
first_cycle AS (
    SELECT r.rank, r.part, r.run, any_value(r.p) AS p, min(r.ci) AS c0
    FROM runs r GROUP BY ALL
),
-- where the kernels of the run's first cycle occurred a cycle (give or take) before: the loop's
-- true first cycle, whose length differed; as far back as most of them did (a few tokens of the
-- forward occur last in the call before, its decode and text encoders between)
before_first AS (
    SELECT f.rank, f.part, f.run, any_value(f.c0) - mode(r.back) AS f0, count(*) AS kernels
    FROM runs r JOIN first_cycle f USING (rank, part, run)
    WHERE r.ci < f.c0 + f.p AND r.back < 2 * f.p AND r.back >= f.p / 2
    GROUP BY ALL
),
-- the cycles a run's kernels recur from: those holding at least half as many as the typical one
-- (what follows the last cycle can resemble a cycle's start for a kernel or two)
per_cycle AS (
    SELECT r.rank, r.part, r.run, (r.ci - f.c0) // f.p AS n, count(*) AS kernels
    FROM runs r JOIN first_cycle f USING (rank, part, run)
    GROUP BY ALL
),
source_cycles AS (
    SELECT c.rank, c.part, c.run, count(*) FILTER (WHERE c.kernels >= 0.5 * m.typical) AS cycles,
           sum(c.kernels) FILTER (WHERE c.kernels >= 0.5 * m.typical) AS kernels
    FROM per_cycle c
    JOIN (SELECT rank, part, run, median(kernels) AS typical FROM per_cycle GROUP BY ALL) m USING (rank, part, run)
    GROUP BY ALL
),
-- A run is a pipeline call's loop, its cycles holding about as many of the period's kernels as
-- another call's (half the most a run's do, or more): a few kernels recurring at the period by
-- chance, a VAE's, are none.
loops AS MATERIALIZED (
    SELECT f.rank, f.part, f.run, f.p, f.c0, CASE WHEN b.kernels * 2 >= fc.kernels THEN b.f0 END AS f0,
           s.kernels, s.cycles + 1 AS cycles
    FROM first_cycle f JOIN source_cycles s USING (rank, part, run)
    JOIN per_cycle fc ON fc.rank = f.rank AND fc.part = f.part AND fc.run = f.run AND fc.n = 0
    LEFT JOIN before_first b USING (rank, part, run)
    QUALIFY s.kernels / s.cycles >= 0.5 * max(s.kernels / s.cycles) OVER (PARTITION BY f.rank, f.part)
),
-- The last cycle runs as far as its kernels are those of the cycle before (type and input shapes,
-- a cycle back): a loop of cycles of two forwards (a step cache's full and cached one) can end
-- in half a cycle, and what follows it there is the decode.
last_match AS (
    SELECT l.rank, l.part, l.run, max(a.ci) AS ci
    FROM loops l
    JOIN k a ON a.rank = l.rank AND a.part = l.part
            AND a.ci BETWEEN l.c0 + (l.cycles - 1) * l.p AND l.c0 + l.cycles * l.p - 1
    JOIN k b ON b.rank = a.rank AND b.part = a.part AND b.ci = a.ci - l.p
    WHERE a.g1 = b.g1
    GROUP BY ALL
),
-- (a first cycle found before a run is none where it lies in the run before: the last forward of
-- the pipeline call before, with its VAE and text encoders after it)
loop_span AS MATERIALIZED (
    SELECT *, lead(c0) OVER w AS next_c0, lead(f0) OVER w AS next_f0, lead(run) OVER w AS next_run,
           lag(run) OVER w AS prev_run, lag(c1) OVER w AS prev_c1
    FROM (SELECT * EXCLUDE (f0), CASE WHEN f0 > coalesce(lag(c1) OVER w, -1) THEN f0 END AS f0
          FROM (SELECT l.*, least(coalesce(m.ci, l.c0 + (l.cycles - 1) * l.p - 1), e.last_ci) AS c1, e.last_ci
                FROM loops l JOIN (SELECT rank, part, max(ci) AS last_ci FROM k GROUP BY ALL) e USING (rank, part)
                LEFT JOIN last_match m USING (rank, part, run))
          WINDOW w AS (PARTITION BY rank, part ORDER BY c0))
    WINDOW w AS (PARTITION BY rank, part ORDER BY c0)
),
cycle_ranges AS MATERIALIZED (
    SELECT rank, part, run, c0 + n * p AS a, least(c0 + (n + 1) * p, c1 + 1) - 1 AS b, false AS before
    FROM (SELECT *, unnest(range(cycles)) AS n FROM loop_span)
    WHERE c0 + n * p <= c1
    UNION ALL
    SELECT rank, part, run, f0, c0 - 1, true FROM loop_span WHERE f0 IS NOT NULL
),
-- a cycle's forward ends at its last kernel of the forward categories (proj_out): the guidance and
-- scheduler arithmetic after it is not the transformer's. The last cycle of a run ends where the
-- others do (their median place; the first's, found before the run, only where there is no other:
-- it differs in length): what follows its forward there is the VAE's first convolutions.
forward_ends AS (
    SELECT r.rank, r.part, r.a, e.heavy_through - r.a AS off,
           r.b = max(r.b) OVER (PARTITION BY r.rank, r.part, r.run) AND count(*) OVER (PARTITION BY r.rank, r.part, r.run) > 1
               AS last,
           r.before, r.run
    FROM cycle_ranges r
    JOIN k e ON e.rank = r.rank AND e.part = r.part AND e.ci = r.b
    WHERE e.heavy_through >= r.a
),
dit AS (
    SELECT f.rank, f.part, f.run, f.a, f.a + f.end_off AS end_ci, a.step, a.start_ns, b.end_through AS end_ns
    FROM (SELECT *, CASE WHEN last THEN least(off, coalesce(quantile_disc(off, 0.5) FILTER (WHERE NOT last AND NOT before) OVER w,
                                                            quantile_disc(off, 0.5) FILTER (WHERE NOT last) OVER w))
                         ELSE off END AS end_off
          FROM forward_ends
          WINDOW w AS (PARTITION BY rank, part, run)) f
    JOIN k a ON a.rank = f.rank AND a.part = f.part AND a.ci = f.a
    JOIN k b ON b.rank = f.rank AND b.part = f.part AND b.ci = f.a + f.end_off
),
-- Unbatched guidance runs the transformer twice a step, with the prompt and without: a cycle of two
-- forwards alike, the second f kernels after the first. What a forward runs once (its embeddings,
-- its output projection) occurs twice a cycle, f and p - f apart, the two together most of the
-- cycle (period_support of it: a ControlNet's forward before the transformer's is alike its
-- start only). A window whose first f kernels are of the types of those f later (period_support
-- of them, of half a forward or more; their shapes differ where the negative prompt is of another
-- length), both halves attending, holds two forwards. (One window still: the second forward's
-- start is only as sure as the cycle's phase.)
pairs AS (
    SELECT l.rank, l.part, l.run, l.p, mode(least(x.d1, l.p - x.d1)) AS f
    FROM loop_span l
    JOIN leads x ON x.rank = l.rank AND x.part = l.part AND x.ci BETWEEN l.c0 AND l.c1 AND x.d2 = l.p
    CROSS JOIN cfg
    WHERE 2 * least(x.d1, l.p - x.d1) >= cfg.period_support * l.p
    GROUP BY ALL
),
paired AS (SELECT d.*, p.f FROM dit d JOIN pairs p USING (rank, part, run)),
halves AS (
    SELECT d.rank, d.part, d.a
    FROM (SELECT * FROM k SEMI JOIN (SELECT DISTINCT rank, part FROM paired) USING (rank, part)) x
    ASOF JOIN paired d ON d.rank = x.rank AND d.part = x.part AND x.ci >= d.a
    JOIN k y ON y.rank = x.rank AND y.part = x.part AND y.ci = x.ci + d.f
    CROSS JOIN cfg
    WHERE x.ci < least(d.a + d.f, d.end_ci - d.f + 1)
    GROUP BY d.rank, d.part, d.a, d.f, cfg.period_support
    HAVING count(*) FILTER (WHERE x.t = y.t) >= cfg.period_support * count(*) AND 2 * count(*) >= d.f
       AND bool_or(x.fa) AND bool_or(y.fa)
),
-- after the loop, until the next loop or the step's end: from its first VAE-signature kernel to its last
sig_kernels AS (SELECT rank, part, ci, sig_through FROM k WHERE sig),
vae_first AS (
    SELECT l.rank, l.part, l.run, l.next_run, coalesce(l.next_f0, l.next_c0) AS next_c0, l.last_ci, s.ci AS v0,
           s.sig_through AS through0
    FROM loop_span l ASOF JOIN sig_kernels s ON s.rank = l.rank AND s.part = l.part AND s.ci > l.c1
),
-- Forwards of the same transformer before a run's first cycle, its cycles not yet begun (a step
-- cache's full forwards before the cached ones): the attention kernels of the run's own (type and
-- input shapes) between the decode after the run before and it, as far back as they follow one
-- another no further apart than the run's do; from the first of them back over the kernels of the
-- run's first cycle (the forward's start), to the last kernel of the forward categories before the
-- run: one window, however many forwards it holds. (Text encoders run attention of other shapes.)
lead_bounds AS (
    SELECT l.rank, l.part, l.run, l.c0, l.p, l.c1, coalesce(l.f0, l.c0) AS s,
           coalesce(CASE WHEN v.v0 < coalesce(l.f0, l.c0) THEN v.v0 END, l.prev_c1, 0) AS after
    FROM loop_span l LEFT JOIN vae_first v ON v.rank = l.rank AND v.part = l.part AND v.run = l.prev_run
),
run_attention AS (
    SELECT b.rank, b.part, b.run, k.ci, k.g1, k.ci >= b.c0 AS in_cycles
    FROM lead_bounds b JOIN k ON k.rank = b.rank AND k.part = b.part AND k.fa AND k.ci BETWEEN b.s AND b.c1
),
attention_spread AS (
    SELECT rank, part, run, min(ci) AS first_ci, max(gap) FILTER (WHERE in_cycles) AS gap
    FROM (SELECT *, lead(ci) OVER (PARTITION BY rank, part, run ORDER BY ci) - ci AS gap FROM run_attention)
    GROUP BY ALL
),
lead_attention AS (
    SELECT b.rank, b.part, b.run, x.ci,
           coalesce(lead(x.ci, 1, a.first_ci) OVER (PARTITION BY b.rank, b.part, b.run ORDER BY x.ci) - x.ci > a.gap,
                    true) AS breaks
    FROM lead_bounds b
    JOIN attention_spread a USING (rank, part, run)
    JOIN k x ON x.rank = b.rank AND x.part = b.part AND x.fa AND x.ci > b.after AND x.ci < b.s
    SEMI JOIN run_attention r ON r.rank = b.rank AND r.part = b.part AND r.run = b.run AND r.in_cycles AND r.g1 = x.g1
),
lead_first AS (
    SELECT b.*, f.a
    FROM lead_bounds b
    JOIN (SELECT rank, part, run, min(ci) FILTER (WHERE ci > coalesce(last_break, -1)) AS a
          FROM (SELECT *, max(ci) FILTER (WHERE breaks) OVER (PARTITION BY rank, part, run) AS last_break
                FROM lead_attention)
          GROUP BY ALL) f USING (rank, part, run)
    WHERE f.a IS NOT NULL
),
-- (what a run's first cycle runs: kernels of no other are not its forward's)
cycle_tokens AS (
    SELECT DISTINCT l.rank, l.part, l.run, k.g1
    FROM loop_span l JOIN k ON k.rank = l.rank AND k.part = l.part AND k.ci BETWEEN l.c0 AND l.c0 + l.p - 1
),
lead_forwards AS (
    SELECT f.rank, f.part, f.run, coalesce(max(x.ci), f.after) + 1 AS a, any_value(e.heavy_through) AS b
    FROM lead_first f
    JOIN k e ON e.rank = f.rank AND e.part = f.part AND e.ci = f.s - 1
    LEFT JOIN (SELECT f.rank, f.part, f.run, x.ci
               FROM lead_first f JOIN k x ON x.rank = f.rank AND x.part = f.part AND x.ci > f.after AND x.ci < f.a
               ANTI JOIN cycle_tokens t ON t.rank = f.rank AND t.part = f.part AND t.run = f.run AND t.g1 = x.g1) x
      ON x.rank = f.rank AND x.part = f.part AND x.run = f.run
    GROUP BY f.rank, f.part, f.run, f.after, f.a
    HAVING any_value(e.heavy_through) >= f.a
),
-- And after its last cycle's forward, the same forward (a cache's full forwards after its cached
-- ones), up to the decode or the next run (its forwards before its first cycle too): the run's
-- attention kernels chained on from its last, a window to the last of them and on to its forward's
-- end: no further than the run's windows reach past their last attention (the least: a cycle can
-- end in a forward without attention, a cached one), nor past a kernel its first cycle does not run.
trail_attention AS (
    SELECT b.rank, b.part, b.run, x.ci, a.gap, b.bound,
           coalesce(x.ci - lag(x.ci, 1, a.last_ci) OVER (PARTITION BY b.rank, b.part, b.run ORDER BY x.ci) > a.gap,
                    true) AS breaks
    FROM (SELECT l.rank, l.part, l.run, l.c1,
                 least(coalesce(v.v0, l.last_ci + 1), coalesce(n.a, l.next_f0, l.next_c0, l.last_ci + 1)) AS bound
          FROM loop_span l LEFT JOIN vae_first v USING (rank, part, run)
          LEFT JOIN lead_forwards n ON n.rank = l.rank AND n.part = l.part AND n.run = l.next_run) b
    JOIN (SELECT rank, part, run, max(ci) AS last_ci, any_value(gap) AS gap
          FROM run_attention JOIN attention_spread USING (rank, part, run) GROUP BY ALL) a USING (rank, part, run)
    JOIN k x ON x.rank = b.rank AND x.part = b.part AND x.fa AND x.ci > b.c1 AND x.ci < b.bound
    SEMI JOIN run_attention r ON r.rank = b.rank AND r.part = b.part AND r.run = b.run AND r.in_cycles AND r.g1 = x.g1
),
forward_tails AS (
    SELECT d.rank, d.part, d.run, max(d.end_ci) AS end_ci, min(d.end_ci - r.ci) AS tail
    FROM dit d ASOF JOIN run_attention r ON r.rank = d.rank AND r.part = d.part AND r.run = d.run AND r.ci <= d.end_ci
    GROUP BY ALL
),
trail_last AS (
    SELECT t.rank, t.part, t.run, f.end_ci, least(t.bound - 1, t.last_ci + f.tail) AS reach, t.last_ci
    FROM (SELECT rank, part, run, any_value(bound) AS bound,
                 max(ci) FILTER (WHERE ci < coalesce(first_break, ci + 1)) AS last_ci
          FROM (SELECT *, min(ci) FILTER (WHERE breaks) OVER (PARTITION BY rank, part, run) AS first_break
                FROM trail_attention)
          GROUP BY ALL) t
    JOIN forward_tails f USING (rank, part, run)
    WHERE t.last_ci IS NOT NULL
),
trail_forwards AS (
    SELECT t.rank, t.part, t.run, t.end_ci + 1 AS a, any_value(e.heavy_through) AS b
    FROM trail_last t
    LEFT JOIN (SELECT t.rank, t.part, t.run, min(x.ci) AS ci
               FROM trail_last t JOIN k x ON x.rank = t.rank AND x.part = t.part AND x.ci > t.last_ci AND x.ci <= t.reach
               ANTI JOIN cycle_tokens c ON c.rank = t.rank AND c.part = t.part AND c.run = t.run AND c.g1 = x.g1
               GROUP BY ALL) f ON f.rank = t.rank AND f.part = t.part AND f.run = t.run
    JOIN k e ON e.rank = t.rank AND e.part = t.part AND e.ci = least(t.reach, coalesce(f.ci - 1, t.reach))
    GROUP BY ALL
    HAVING any_value(e.heavy_through) > t.end_ci
),
vae_last AS (
    SELECT f.rank, f.part, f.v0, f.through0, s.ci AS v1, s.sig_through AS through1
    FROM (SELECT f.*, coalesce(n.a, f.next_c0) AS bound FROM vae_first f
          LEFT JOIN lead_forwards n ON n.rank = f.rank AND n.part = f.part AND n.run = f.next_run) f
    ASOF JOIN sig_kernels s ON s.rank = f.rank AND s.part = f.part AND s.ci <= coalesce(f.bound - 1, f.last_ci)
),
-- the VAE window opens where the kernel before its first one ended: communication launched for it
-- (a patch-parallel decode gathers the latents first) is the VAE's
vae AS (
    SELECT v.rank, v.part, a.step, coalesce(p.end_through, a.start_ns) AS start_ns, b.end_through AS end_ns
    FROM vae_last v
    JOIN k a ON a.rank = v.rank AND a.part = v.part AND a.ci = v.v0
    LEFT JOIN k p ON p.rank = v.rank AND p.part = v.part AND p.ci = v.v0 - 1
    JOIN k b ON b.rank = v.rank AND b.part = v.part AND b.ci = v.v1
    CROSS JOIN cfg
    WHERE v.v1 >= v.v0 AND v.through1 - v.through0 + 1 >= cfg.vae_min_kernels
),
-- before a step's first loop (and the forwards before it), a decode of the call before's latents
-- (run after its step ended), or in a step without a loop on a rank with one (the last call's,
-- after the last step): from its first VAE-signature kernel to its last before the loop, when it
-- holds vae_min_kernels of them (the text encoders before a loop hold none)
vae_before AS (
    SELECT s.rank, s.part, min(s.ci) AS v0, max(s.ci) AS v1
    FROM sig_kernels s
    LEFT JOIN (SELECT rank, part, min(a) AS loop_ci
               FROM (SELECT rank, part, coalesce(f0, c0) AS a FROM loop_span UNION ALL SELECT rank, part, a FROM lead_forwards)
               GROUP BY ALL) l USING (rank, part)
    CROSS JOIN cfg
    WHERE s.ci < coalesce(l.loop_ci, s.ci + 1) AND s.rank IN (SELECT rank FROM loop_span)
    GROUP BY s.rank, s.part, cfg.vae_min_kernels
    HAVING count(*) >= cfg.vae_min_kernels
),
-- confidence: the share of the loop's kernels (its first cycle aside) that are the same kernel as
-- the one a cycle later: 1.0 when every forward repeats the one before exactly
confidence AS (
    SELECT l.rank, l.part, count(*) FILTER (WHERE a.g1 = b.g1) / count(*) AS confidence
    FROM loop_span l
    JOIN k a ON a.rank = l.rank AND a.part = l.part AND a.ci BETWEEN l.c0 AND l.c1 - l.p
    JOIN k b ON b.rank = a.rank AND b.part = a.part AND b.ci = a.ci + l.p
    GROUP BY l.rank, l.part
),
windows AS (
    SELECT d.rank, d.part, d.step, cfg.dit_stage AS stage, d.start_ns, d.end_ns,
           CASE WHEN h.a IS NULL THEN 1 ELSE 2 END AS forwards
    FROM dit d LEFT JOIN halves h USING (rank, part, a), cfg
    UNION ALL
    SELECT rank, part, step, cfg.vae_stage, start_ns, end_ns, NULL FROM vae, cfg
    UNION ALL
    -- (windows from their first kernel to their last, by number)
    SELECT w.rank, w.part, a.step, w.stage, a.start_ns, b.end_through, w.forwards
    FROM (SELECT rank, part, cfg.vae_stage AS stage, v0 AS a, v1 AS b, NULL AS forwards FROM vae_before, cfg
          UNION ALL
          SELECT rank, part, cfg.dit_stage, a, b, 1 FROM lead_forwards, cfg
          UNION ALL
          SELECT rank, part, cfg.dit_stage, a, b, 1 FROM trail_forwards, cfg) w
    JOIN k a ON a.rank = w.rank AND a.part = w.part AND a.ci = w.a
    JOIN k b ON b.rank = w.rank AND b.part = w.part AND b.ci = w.b
),
-- A step's loop is of forwards when it holds a shorter loop (the forward's blocks) and is one: the
-- kernels recurring at its period reach across half a cycle or more (a few kernels a block apart in
-- two kinds of block, a period longer than what they reach, are none). The step is a pipeline
-- call. Without one its cycles may be the blocks, and the step a forward: a rank whose steps
-- mostly are is flat.
nested AS (
    SELECT p.rank, p.part,
           count(v.p) > 0 AND any_value(l.last_ci - l.first_ci) >= 0.5 * any_value(p.p) AS nested
    FROM period p JOIN best b USING (rank, part)
    JOIN valid l ON l.rank = p.rank AND l.part = p.part AND l.p = p.p
    LEFT JOIN valid v ON v.rank = p.rank AND v.part = p.part AND v.p < p.p
         AND least(v.last_ci, b.last_ci) - greatest(v.first_ci, b.first_ci)
             >= 0.5 * least(v.last_ci - v.first_ci, b.last_ci - b.first_ci)
    WHERE p.part <> -2
    GROUP BY ALL
),
flat AS (
    SELECT rank FROM nested GROUP BY rank HAVING 2 * count(*) FILTER (WHERE nested) < count(*)
),
-- A rank scanned whole (part -2: of several steps) takes those windows when its steps are unlike
-- (signature_scan) or flat, and its loops hold about a cycle a step, more than half and fewer than
-- two: prof.step() at each denoising step, where a step holds a forward. Its steps are staged one
-- by one otherwise, each a pipeline call holding every cycle of its loop.
whole AS (
    SELECT rank
    FROM (SELECT r.rank, r.run, count(*) AS cycles, max(b.step) - min(a.step) + 1 AS steps
          FROM cycle_ranges r
          JOIN k a ON a.rank = r.rank AND a.part = r.part AND a.ci = r.a
          JOIN k b ON b.rank = r.rank AND b.part = r.part AND b.ci = r.b
          WHERE r.part = -2
          GROUP BY ALL)
    WHERE rank IN (SELECT rank FROM k WHERE part = -2 AND unlike) OR rank IN (SELECT rank FROM flat)
    GROUP BY rank
    HAVING 2 * sum(cycles) > sum(steps) AND sum(cycles) < 2 * sum(steps)
)
-- (a step without a loop, its VAE alone: the rank's loops' confidence)
SELECT w.rank, w.step, w.stage, w.start_ns, w.end_ns,
       least(coalesce(c.confidence, min(c.confidence) OVER (PARTITION BY w.rank)), 1.0) AS confidence, w.forwards
FROM windows w LEFT JOIN confidence c USING (rank, part)
WHERE (w.part = -2) = (w.rank IN (SELECT rank FROM whole))
