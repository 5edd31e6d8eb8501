-- Helpers the analysis views share, installed before them.

-- An operator's identity: its name without the per-call suffix a profiler appends, so the calls of
-- one operator group (and pair across runs) as one: HCCL's run id and call index
-- (`hcom_allReduce__586_0_1` -> `hcom_allReduce`), a numbered instance (`trans_TransData_17` ->
-- `trans_TransData`), MindSpore's op index (`.../Conv2D-op31` -> `.../Conv2D`), with a call
-- index after it (`.../AllReduce-op534_0`). Digits written into the name itself (`MatMulV3`,
-- `Conv2D`) stay.
CREATE OR REPLACE MACRO op_name(n) AS
    coalesce(nullif(regexp_replace(n, '(-op[0-9]+)?(_+[0-9]+)*$', ''), ''), n);

-- A kernel's type for grouping: the profiler's missing value folded into one group.
CREATE OR REPLACE MACRO type_key(t) AS coalesce(nullif(t, ''), 'N/A');

-- A sum of ms or MB figures to 1e-9 of their unit, added as integers: exact, so the same in any
-- order. Rows arrive in another order on each load (ranks load on parallel threads) and DuckDB's
-- threads add them in whatever order they finish; a sum of doubles then differs in its last digits
-- from one report to the next. (An ordered sum sorts: 9x slower over 1.5M links.) Infinities and
-- NaN, which no profiler writes, are left out.
CREATE OR REPLACE MACRO exact_sum(x) AS sum(TRY_CAST(round(x * 1e9) AS HUGEINT)) / 1e9;
