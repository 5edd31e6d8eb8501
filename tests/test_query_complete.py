"""Completion candidates: columns, tables, aliases, functions."""

import pytest

from npu_tui.profile import connect
from npu_tui.query import QueryEngine, complete


@pytest.fixture(scope="module")
def catalog():
    engine = QueryEngine(connect())
    engine.run_all("CREATE TEMP TABLE my_steps (rank INTEGER, step_ms DOUBLE)")
    return engine.catalog()


def texts(sql, catalog, offset=None):
    result = complete(sql, len(sql) if offset is None else offset, catalog)
    return [c.text for c in result.candidates]


def test_column_of_a_named_table_comes_first(catalog):
    sql = "SELECT dur FROM kernels"
    result = complete(sql, sql.index(" FROM"), catalog)
    assert result.start == 7 and result.prefix == "dur"
    assert result.candidates[0].text == "dur_ns" and result.candidates[0].kind == "column"
    assert result.candidates[0].detail == "kernels BIGINT"


def test_alias_dot_offers_only_that_tables_columns(catalog):
    sql = "SELECT k. FROM kernels AS k"
    cols = texts(sql, catalog, sql.index(" FROM"))
    assert cols[:3] == ["rank", "device_id", "step"]
    assert "lane" not in cols  # overlap_lanes' column


def test_tables_views_functions_and_temp_tables(catalog):
    assert texts("SELECT * FROM overl", catalog)[0] == "overlap_lanes"
    assert "my_steps" in texts("SELECT * FROM my_", catalog)
    assert "regexp_extract" in texts("SELECT regexp_ex", catalog)
    assert "step_ms" in texts("SELECT step_m", catalog)


def test_nothing_to_complete_after_a_space(catalog):
    assert complete("SELECT ", 7, catalog) is None
