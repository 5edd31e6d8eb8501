"""macros_before_2.sql, which DuckDB before 2.0 loads times through (its cast of text to a wide
DECIMAL takes ~20 µs a value), gives the same ns as macros.sql and the trace reader's DECIMAL(38, 3)
do: checked on whichever DuckDB runs the tests, each value both ways."""

import json
from importlib import resources

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu_tui.profile.sources.chrome_trace import DECIMAL_TIME

EPOCH = "1736408883704643"
TEXTS = [
    f"{EPOCH}.212", f"{EPOCH}.212\t", f" {EPOCH}.2125", f"{EPOCH}.2135", f"{EPOCH}.9995", EPOCH, f"{EPOCH}.",
    f"000{EPOCH}.5", f"{EPOCH}0000.5", "99999999999999999999999.1", f"-{EPOCH}.212", f"+{EPOCH}.5",
    "1736408883-04643.212", "17364088837+4643.212", "1736408883 704643.2", f"{EPOCH}.212.5", f"{EPOCH},212",
    f'"{EPOCH}.212"', f"{EPOCH}.5\r\n", "1.736408883704643E+15", "1.5e2", "12.345", "0.0005", "-0.0005", "-12.5",
    "999999999999999.9995", "999999999999999.999", "79,089.52", "1,736,408,883,704,643.212", "", " ", "\t",
    "N/A", "abc", "nan", "inf", "-0", "0", ".5", "5.", "1234567.0004999", "12.12345678901234567890123456789",
    "1" * 37, "1" * 45 + ".5",  # (a product past HUGEINT had raised, failing the file)
]


def _con(before_2: bool) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for name in ("macros.sql", "macros_before_2.sql")[:1 + before_2]:
        con.execute(resources.files("npu_tui.profile").joinpath(name).read_text(encoding="utf-8"))
    return con


WIDE, SPLIT = _con(False), _con(True)
CSV_TIMES = "SELECT x, us_to_ns(x), ts_to_ns(x) FROM (SELECT unnest($xs::VARCHAR[]) AS x)"


def _same_csv_times(texts) -> None:
    assert SPLIT.execute(CSV_TIMES, {"xs": texts}).fetchall() == WIDE.execute(CSV_TIMES, {"xs": texts}).fetchall()


def test_a_table_cell_s_time_is_the_same_either_way():
    _same_csv_times(TEXTS)
    # the cells that decide: some parsed, some not
    got = dict((x, ns) for x, ns, _ in SPLIT.execute(CSV_TIMES, {"xs": TEXTS}).fetchall())
    assert (got[f"{EPOCH}.212\t"], got[f" {EPOCH}.2125"], got[f"{EPOCH}.9995"]) == (
        1736408883704643212, 1736408883704643213, 1736408883704644000)
    assert (got["999999999999999.9995"], got["79,089.52"], got["0.0005"]) == (1000000000000000000, 79089520, 1)
    assert got[f"{EPOCH}0000.5"] is got["1.5e2"] is got["1736408883-04643.212"] is got["N/A"] is None


def test_a_typed_cell_s_time_is_the_same_either_way():
    """A db export's columns arrive typed: integers and doubles go through the same text."""
    for value, sql_type in ((1736408883704643, "BIGINT"), (12.5, "DOUBLE"), (1.7364088837046432e15, "DOUBLE"),
                            (-3, "INTEGER"), (None, "BIGINT")):
        sql = f"SELECT us_to_ns($v::{sql_type}), ts_to_ns($v::{sql_type})"
        assert SPLIT.execute(sql, {"v": value}).fetchone() == WIDE.execute(sql, {"v": value}).fetchone()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.builds(
    lambda pad, sign, whole, point, frac, end: f"{pad}{sign}{whole}{point}{frac}{end}",
    st.sampled_from(["", " ", '"']), st.sampled_from(["", "-", "+"]), st.text("0123456789", max_size=45),
    st.sampled_from(["", ".", ","]), st.text("0123456789", max_size=7), st.sampled_from(["", "\t", '"', "x"])),
    min_size=1, max_size=40))
def test_any_number_like_text_gives_the_same_time_either_way(texts):
    _same_csv_times(texts)


@pytest.mark.parametrize("values", [
    [f"{EPOCH}.212", f"{EPOCH}.212\t", f"{EPOCH}.2125", EPOCH, f"{EPOCH}0000.5", "12.345", "0.0005", "-1.5",
     "1.5e2", "abc", "", "99999999999999999999999.1", "1" * 33, "-" + "1" * 33, "1" * 37 + ".5"],
    [75.0015, 3, 0.25, 1e-05, 1e33, -1e33],  # numbers a double holds exactly enough (a bigger one: README)
])
def test_a_trace_s_times_read_as_text_are_those_read_as_decimal(tmp_path, values):
    """chrome_trace reads ts and dur as a DECIMAL on DuckDB 2.0, as text before it; a value too big
    for ns is none (the event untimed), where one past 1e32 µs had failed the file."""
    path = tmp_path / "events.json"
    path.write_text(json.dumps([{"ts": v} for v in values]))
    sql = ("SELECT TRY_CAST(trace_ns(ts) + 5 AS BIGINT) FROM read_json($p, format = 'array', "
           "columns = {'ts': '%s'}, ignore_errors = true)")
    wide = WIDE.execute(sql % DECIMAL_TIME, {"p": str(path)}).fetchall()
    assert SPLIT.execute(sql % "VARCHAR", {"p": str(path)}).fetchall() == wide
    assert wide[0] == (1736408883704643217,) if isinstance(values[0], str) else wide[0] == (75002 + 5,)
    assert wide[-2:] == [(None,)] * 2
