-- In place of macros.sql's time macros on DuckDB before 2.0 (all that pip gives Python 3.9 and
-- 3.10), which casts text to a DECIMAL wider than 18 digits, and such a DECIMAL to an integer,
-- at ~20 µs a value: 37 of the 40 s a 250k-kernel rank took to load. Plain digits are read in two
-- parts instead, the integer digits above the last six as an integer and the rest as
-- DECIMAL(18, 3); only other text takes the wide cast. The values are the same
-- (tests/test_time_macros.py).

-- Plain digits (a point and digits after them or not; the point at ``p``, or just past the end)
-- -> ns, a HUGEINT.
CREATE OR REPLACE MACRO digits_ns(s, p) AS
    CASE WHEN p > 7 THEN TRY_CAST(left(s, p - 7) AS BIGINT) * CAST(1000000000 AS HUGEINT) ELSE 0 END
    + TRY_CAST(TRY_CAST(substr(s, greatest(p - 6, 1)) AS DECIMAL(18, 3)) * 1000 AS BIGINT);
-- Text -> ns where it is plain digits, else NULL.
CREATE OR REPLACE MACRO plain_ns(s) AS
    CASE WHEN regexp_full_match(s, '[0-9]+(\.[0-9]*)?')
         THEN digits_ns(s, CASE WHEN contains(s, '.') THEN strpos(s, '.') ELSE length(s) + 1 END) END;
-- A trace's ts or dur, read as text (chrome_trace) -> ns, as macros.sql's of DECIMAL(28, 3).
CREATE OR REPLACE MACRO trace_ns(x) AS
    coalesce(plain_ns(trim(x, E' \t\r\n')), TRY_CAST(TRY_CAST(x AS DECIMAL(28, 3)) * 1000 AS HUGEINT));
-- As macros.sql's: us_decimal(x) * 1000 as an integer.
CREATE OR REPLACE MACRO us_to_ns(x) AS TRY_CAST(coalesce(
    CASE WHEN NOT contains(CAST(x AS VARCHAR), 'E') AND NOT contains(CAST(x AS VARCHAR), 'e')
         THEN plain_ns(trim(CAST(x AS VARCHAR), E' \t\r\n"')) END,
    TRY_CAST(us_decimal(x) * 1000 AS HUGEINT)) AS BIGINT);
CREATE OR REPLACE MACRO ts_to_ns(x) AS TRY_CAST(TRY_CAST(us_to_ns(x) AS UBIGINT) AS BIGINT);
