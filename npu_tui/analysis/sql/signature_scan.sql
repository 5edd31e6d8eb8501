-- per rank and step, the compute kernels in time order with what stage_signature looks for: ci (their number), g (a hash of its type and input shapes and the next two kernels'), t (of its type alone), attention, VAE-signature and forward-category flags, running counts, running kernel time, the latest end and the latest forward-category kernel so far (stored as a table); a rank of several steps is scanned whole too (part -2), with unlike: whether its steps are (text encoders and decodes in a few)
-- Ranks staged by an override or by markers never use signatures (stage_windows_raw), so they are
-- left out. All from one sort of the compute kernels.
-- A step is one pipeline call when the profile follows the recipe, and scanning each on its own
-- keeps one call's loop from running on into the next's. A user who calls prof.step() at each
-- denoising step has one forward a step, and only the rank scanned whole shows the loop
-- (stage_signature chooses between the two). Steps that are calls are alike; such a rank's steps
-- are not when the calls' text encoders and decodes run in a few of them (unlike: kernels, by type
-- and input shapes, that half its steps or more never run, as many as a VAE needs to be one). A
-- schedule inside one call records forwards alone, alike too: there only the steps' own loops
-- tell (blocks, not forwards). Alike steps that mostly decode (a VAE's worth of VAE-signature
-- kernels) are calls, and are not scanned whole.
WITH cfg AS (SELECT * FROM rules_stages),
c AS (
    SELECT c.*, coalesce(c.step, -1) AS part, hash(coalesce(c.type, ''), coalesce(c.input_shapes, '')) AS g1
    FROM kernel_categories c
    WHERE NOT c.is_comm
      AND c.rank NOT IN (SELECT rank FROM stage_overrides UNION ALL SELECT rank FROM stage_markers)
),
steps AS (SELECT rank, count(DISTINCT step) AS n FROM c GROUP BY rank HAVING count(DISTINCT step) > 1),
unlike AS (
    SELECT rank FROM (
        SELECT c.rank, c.g1, count(*) AS kernels FROM c JOIN steps s USING (rank)
        WHERE c.step IS NOT NULL
        GROUP BY c.rank, c.g1, s.n HAVING 2 * count(DISTINCT c.step) <= s.n
    ), cfg
    GROUP BY rank, cfg.vae_min_kernels HAVING sum(kernels) >= cfg.vae_min_kernels
),
decoding AS (
    SELECT rank FROM (SELECT rank, step, count(*) FILTER (WHERE vae_sig) AS sig FROM c WHERE step IS NOT NULL GROUP BY ALL),
                     cfg
    GROUP BY rank, cfg.vae_min_kernels HAVING 2 * count(*) FILTER (WHERE sig >= cfg.vae_min_kernels) > count(*)
),
parts AS (
    SELECT * FROM c
    UNION ALL
    SELECT * REPLACE (-2 AS part) FROM c
    WHERE rank IN (SELECT rank FROM steps) AND (rank IN (SELECT rank FROM unlike) OR rank NOT IN (SELECT rank FROM decoding))
),
k AS (
    SELECT c.rank, c.part, c.step, c.rank IN (SELECT rank FROM unlike) AS unlike, c.start_ns, c.end_ns, c.dur_ns, c.g1,
           hash(coalesce(c.type, '')) AS t,
           c.category = cfg.attention_category AS fa, c.vae_sig AS sig,
           list_contains(cfg.forward_categories, c.category) AS heavy, c.name AS sort_name, c.stream_id AS sort_stream
    FROM parts c
    CROSS JOIN cfg
)
SELECT rank, part, step, unlike, row_number_ci AS ci,
       -- a kernel's token: its type and input shapes with those of the two after it (specific
       -- enough where a trace gives no shapes: a type recurs all over a forward, three in a row not)
       hash(g1, lead(g1, 1) OVER w, lead(g1, 2) OVER w) AS g, g1, t,
       start_ns, end_ns, dur_ns, fa, sig, heavy,
       sum(fa::INTEGER) OVER (w ROWS UNBOUNDED PRECEDING) AS fa_through,
       sum(sig::INTEGER) OVER (w ROWS UNBOUNDED PRECEDING) AS sig_through,
       sum(dur_ns) OVER (w ROWS UNBOUNDED PRECEDING) AS dur_through,
       max(end_ns) OVER (w ROWS UNBOUNDED PRECEDING) AS end_through,
       max(CASE WHEN heavy THEN row_number_ci END) OVER (w ROWS UNBOUNDED PRECEDING) AS heavy_through
FROM (SELECT *, row_number() OVER w AS row_number_ci FROM k
      WINDOW w AS (PARTITION BY rank, part ORDER BY start_ns, end_ns, sort_name, sort_stream))
WINDOW w AS (PARTITION BY rank, part ORDER BY row_number_ci)
