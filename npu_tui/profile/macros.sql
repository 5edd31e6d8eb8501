-- Parsing helpers shared by every loader. Profiler text is messy: trailing TABs after timestamps,
-- msprof's quotes inside values, `N/A` for missing, Excel-mangled numbers (`1.69512E+15`).
-- DuckDB binds a macro by writing its body out at each call, and nullif is one (its argument twice):
-- nested, they doubled the expression at every level, and binding one loader's INSERT took 50 ms
-- (a 2-row step_trace_time.csv). Each body here names its argument a few times, never nested.

-- Text cell -> NULL when empty or N/A, else trimmed of blanks and stray quotes.
CREATE OR REPLACE MACRO clean_text(x) AS
    CASE WHEN trim(x, E' \t\r\n"') IN ('', 'N/A', 'NA', 'None') THEN NULL ELSE trim(x, E' \t\r\n"') END;

-- The casts below try the cell as it is first (DuckDB's casts skip blanks and TABs) and trim
-- quotes only when that fails: most cells are clean, and trimming every one doubled load time.
-- Last, a number a spreadsheet wrote with thousands separators ("79,089.52", quoted), without
-- them: only where it cannot be a decimal comma (a point after the groups, or more than one
-- group), since a profiler's 3 decimals would read a thousand times too big ("53,741" is 53.741 in
-- Germany); '' for any other text. (x named once: no body grows with it.)
CREATE OR REPLACE MACRO ungrouped(x) AS
    replace(regexp_extract(CAST(x AS VARCHAR), '^[ \t"]*(-?[0-9]{1,3}(?:,[0-9]{3})+\.[0-9]+|-?[0-9]{1,3}(?:,[0-9]{3}){2,})[ \t\r\n"]*$', 1), ',', '');

-- Plain decimal text -> DECIMAL; an exponent means a rounded, hand-edited value (`1.69512E+15`),
-- and inf / nan / anything else unparsable is NULL too.
CREATE OR REPLACE MACRO us_decimal(x) AS
    CASE WHEN NOT contains(CAST(x AS VARCHAR), 'E') AND NOT contains(CAST(x AS VARCHAR), 'e')
         THEN COALESCE(TRY_CAST(CAST(x AS VARCHAR) AS DECIMAL(20, 3)),
                       TRY_CAST(trim(CAST(x AS VARCHAR), E' \t\r\n"') AS DECIMAL(20, 3)),
                       TRY_CAST(ungrouped(x) AS DECIMAL(20, 3))) END;

-- Microseconds as text or number -> integer nanoseconds, exact to the profiler's 3 decimals.
-- TRY: a hand-edited 17-digit value overflows BIGINT ns, and one such cell must not fail the file.
CREATE OR REPLACE MACRO us_to_ns(x) AS TRY_CAST(us_decimal(x) * 1000 AS BIGINT);

-- A moment in microseconds -> integer ns, NULL before the clock's zero as well: the profilers'
-- clocks (the epoch, the boot) never read negative, and one such start, hand-edited or garbage,
-- would stretch its step over decades. (Unsigned first: a negative value does not cast.)
CREATE OR REPLACE MACRO ts_to_ns(x) AS TRY_CAST(TRY_CAST(us_decimal(x) * 1000 AS UBIGINT) AS BIGINT);

-- A trace's ts or dur, read as DECIMAL(28, 3) µs (chrome_trace) -> ns, a DECIMAL(38, 3): room
-- enough, where one read as DECIMAL(38, 3) past 1e32 µs failed the multiply, and the file.
CREATE OR REPLACE MACRO trace_ns(x) AS x * 1000;

-- DOUBLE -> NULL for NaN and +-inf, which would poison every sum over the column.
CREATE OR REPLACE MACRO finite(x) AS CASE WHEN isfinite(x) THEN x END;

-- A time (ms) or size (MB) of one op -> itself, NULL when it cannot be one: not finite, negative,
-- or past 1e15 (31,000 years, a zettabyte: garbage, which would overflow exact sums).
CREATE OR REPLACE MACRO amount(x) AS CASE WHEN isfinite(x) AND x >= 0 AND x < 1e15 THEN x END;
-- A value given that is not an amount: its row is skipped (and counted), never kept as NULL.
CREATE OR REPLACE MACRO not_amount(x) AS x IS NOT NULL AND amount(x) IS NULL;
-- not_amount of a JSON value typed as a number, where one that is none (text, null, a list) is
-- typed NULL: the raw JSON ``raw`` tells it, given at ``path``, from one not given; and a boolean,
-- typed 1 or 0. (A CASE: the raw JSON is parsed for the NULLs and where it writes a boolean
-- somewhere alone, where an OR parsed it for every row, 0.45 s on 18k ops.)
CREATE OR REPLACE MACRO json_not_amount(x, raw, path) AS
    CASE WHEN x IS NULL THEN json_exists(raw, path)
         WHEN amount(x) IS NULL THEN true
         WHEN contains(CAST(raw AS VARCHAR), 'true') OR contains(CAST(raw AS VARCHAR), 'false')
         THEN json_type(raw, path) = 'BOOLEAN'
         ELSE false END;
-- A JSON pointer to the key ``k`` (its '~' and '/' escaped), after ``within`` (a pointer, or '').
CREATE OR REPLACE MACRO json_pointer(within, k) AS within || '/' || replace(replace(k, '~', '~0'), '/', '~1');

-- A MAP read from a JSON object -> itself, NULL where the object gives a key twice: DuckDB 2.0
-- makes no MAP of it, but one before 2.0 (all that Python 3.9 and 3.10 get) keeps both entries,
-- which would load twice, uncounted.
CREATE OR REPLACE MACRO map_once(m) AS CASE WHEN len(map_keys(m)) = len(list_distinct(map_keys(m))) THEN m END;

-- Numeric cell -> DOUBLE, NULL for N/A, NaN, inf and anything unparsable (N/A and the other
-- words clean_text drops do not parse either, so trimming is all the second try needs).
CREATE OR REPLACE MACRO num(x) AS
    finite(COALESCE(TRY_CAST(CAST(x AS VARCHAR) AS DOUBLE),
                    TRY_CAST(trim(CAST(x AS VARCHAR), E' \t\r\n"') AS DOUBLE),
                    TRY_CAST(ungrouped(x) AS DOUBLE)));
-- not_amount of a cell read as text (N/A and the other words clean_text drops are no value given).
-- A plain number in range, nearly every cell, is told by the cast alone: the whole test costs each
-- column of a 55k-row file 40 ms, which six columns of operator_memory.csv made a quarter second.
CREATE OR REPLACE MACRO text_not_amount(x) AS
    CASE WHEN TRY_CAST(x AS DOUBLE) >= 0 AND TRY_CAST(x AS DOUBLE) < 1e15 THEN false
         ELSE clean_text(x) IS NOT NULL AND amount(num(x)) IS NULL END;
-- A figure in µs a profiler wrote -> DOUBLE, NULL for text that is no number and for one a
-- spreadsheet rounded to a power of ten ("1.42E+03" for 1423.208: Python writes an exponent only
-- for tiny values, "3e-05"). (x named twice: num's body once.)
CREATE OR REPLACE MACRO us_num(x) AS CASE WHEN NOT contains(upper(CAST(x AS VARCHAR)), 'E+') THEN num(x) END;
CREATE OR REPLACE MACRO text_not_us(x) AS clean_text(x) IS NOT NULL AND us_num(x) IS NULL;
-- A cell given that is no number at all (a unit after it, "12us"; a word): its row is skipped and
-- counted, never kept with the cell NULL, which a loader would read as "not recorded".
CREATE OR REPLACE MACRO text_not_number(x) AS
    CASE WHEN isfinite(TRY_CAST(x AS DOUBLE)) THEN false ELSE clean_text(x) IS NOT NULL AND num(x) IS NULL END;

-- A whole number grouped in thousands, without the separators: a count is no decimal, so "1,234"
-- is grouped; '' for any other text.
CREATE OR REPLACE MACRO ungrouped_int(x) AS
    replace(regexp_extract(CAST(x AS VARCHAR), '^[ \t"]*(-?[0-9]{1,3}(?:,[0-9]{3})+)[ \t\r\n"]*$', 1), ',', '');

-- Integer cell -> BIGINT, NULL for N/A and anything unparsable.
CREATE OR REPLACE MACRO int_or_null(x) AS
    COALESCE(TRY_CAST(CAST(x AS VARCHAR) AS BIGINT),
             TRY_CAST(trim(CAST(x AS VARCHAR), E' \t\r\n"') AS BIGINT),
             TRY_CAST(ungrouped_int(x) AS BIGINT));
-- The same for an INTEGER column (a device, a step, a block count): a value past 32 bits is no
-- such thing, and NULL, where a failed cast would lose the whole file.
CREATE OR REPLACE MACRO int32_or_null(x) AS TRY_CAST(int_or_null(x) AS INTEGER);
-- As text_not_number, for an integer cell: a fraction ("57.5", which the cast rounds) is none.
CREATE OR REPLACE MACRO text_not_int(x) AS
    clean_text(x) IS NOT NULL
    AND (int_or_null(x) IS NULL OR contains(CAST(x AS VARCHAR), '.') AND num(x) <> int_or_null(x));

-- Level0 profiles write N/A for every Type: recover it from the kernel name, as the profiler names
-- it at Level1 (checked on the real samples): `aclnnMm_MatMulCommon_MatMulV2` -> MatMulV2,
-- `trans_TransData_17` -> TransData, `Conv2D1` -> Conv2D, `hcom_allReduce__586_0_1` -> hcom_allReduce_.
CREATE OR REPLACE MACRO type_from_name(n) AS
    CASE WHEN regexp_matches(n, '^hcom_[A-Za-z]+') THEN regexp_extract(n, '^(hcom_[A-Za-z]+_?)', 1)
         WHEN regexp_matches(regexp_replace(n, '(_[0-9]*)+$', ''), '_')
         THEN regexp_extract(regexp_replace(n, '(_[0-9]*)+$', ''), '([^_]+)$', 1)
         ELSE regexp_replace(n, '[0-9]+$', '') END;

-- The timeline process that holds the collective ops: HCCL in older exports, Communication in
-- newer CANN's (msprof's own trace and the trace_view.json torch_npu passes it through to); each
-- has a thread of ops per group and "Plane N" threads of their tasks.
CREATE OR REPLACE MACRO comm_process(p) AS p IN ('HCCL', 'Communication');

-- A step as the profilers write it ("50", "50.0" or "step50") -> its number (INTEGER), NULL for
-- none, and for a fraction ("5.5", which a cast rounds to 6). Plain digits, nearly every row of a
-- kernel file, take the cheap cast alone (the pattern on every row cost 0.19 s for 2M rows
-- against 0.02 s).
CREATE OR REPLACE MACRO whole_step(s) AS
    CASE WHEN TRY_CAST(s AS DOUBLE) = TRY_CAST(s AS INTEGER) THEN TRY_CAST(s AS INTEGER) END;
CREATE OR REPLACE MACRO step_of(x) AS
    CASE WHEN TRY_CAST(x AS INTEGER) IS NOT NULL AND NOT contains(CAST(x AS VARCHAR), '.')
         THEN TRY_CAST(x AS INTEGER)
         ELSE whole_step(regexp_replace(clean_text(x), '^step\s*', '', 'i')) END;

-- The step a `ProfilerStep#N` range marks (what prof.step() records), NULL for any other name.
CREATE OR REPLACE MACRO profiler_step(n) AS
    CASE WHEN regexp_full_match(n, 'ProfilerStep#[0-9]+') THEN TRY_CAST(regexp_extract(n, '#([0-9]+)$', 1) AS INTEGER) END;

-- A Kineto op's input shapes in torch_npu's notation (`1,77;77`: `;` between tensors, `,` between
-- dims) from its `Input Dims` ([[1, 77], [77]]); its `Input type` list the same way for dtypes.
-- `j` is extracted JSON, written without spaces: a space left is inside a name (`unsigned char`).
CREATE OR REPLACE MACRO kineto_list(j) AS
    nullif(replace(replace(replace(replace(replace(
        regexp_replace(CAST(j AS VARCHAR), '^\[|\]$', '', 'g'), '],[', ';'), '","', ';'), '[', ''), ']', ''),
        '"', ''), '');

-- MB as the profiler writes them (binary: 2^20 bytes) -> bytes, to the byte; NULL stays NULL.
CREATE OR REPLACE MACRO mb_bytes(x) AS TRY_CAST(round(x * 1048576) AS BIGINT);
-- KB as msprof writes its own memory files -> bytes, as mb_bytes.
CREATE OR REPLACE MACRO kb_bytes(x) AS TRY_CAST(round(x * 1024) AS BIGINT);

-- A comm file's op key names its op and, after its last '@', the communication group
-- (`hcom_allReduce__586_0_1@8123456789`, `allreduce-top1@8123456789`): the group, NULL where the
-- key names none, and the op without it.
CREATE OR REPLACE MACRO op_group(k) AS nullif(regexp_extract(k, '@([^@]*)$', 1), '');
CREATE OR REPLACE MACRO op_without_group(k) AS regexp_replace(k, '@[^@]*$', '');
