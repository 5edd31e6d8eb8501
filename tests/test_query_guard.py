"""The profile's tables, views and macros cannot be changed from the console; temp objects can."""

import duckdb
import pytest

from npu_tui.profile import connect
from npu_tui.query import ProtectedError, QueryEngine, QueryError, statement_at

ROWS = [(0, "mm_1", "MatMulV3", 0, 40), (0, "add_1", "Add", 40, 10), (1, "mm_1", "MatMulV3", 0, 50)]


def _fill(c):
    c.executemany("INSERT INTO kernels (rank, name, type, start_ns, dur_ns) VALUES (?, ?, ?, ?, ?)",
                  ROWS)
    c.execute("CREATE VIEW type_time AS SELECT type, sum(dur_ns) AS t FROM kernels GROUP BY type")
    return c


@pytest.fixture
def con():
    return _fill(connect())


@pytest.fixture
def reopened(tmp_path):
    """The profile as a reopened cache file: read-only, so DuckDB refuses a change first."""
    path = str(tmp_path / "cache.duckdb")
    _fill(connect(path)).close()
    return duckdb.connect(path, read_only=True)


@pytest.fixture(params=["loaded", "reopened"])
def any_con(request):
    return request.getfixturevalue("con" if request.param == "loaded" else "reopened")


def run(engine, sql):
    return engine.run(sql, statement_at(sql, len(sql)))


def state(con):
    return (con.execute("SELECT * FROM kernels ORDER BY rank, start_ns").fetchall(),
            con.execute("SELECT * FROM type_time ORDER BY type").fetchall(),
            con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'type_time'").fetchall())


@pytest.mark.parametrize("sql,says", [
    ("DROP TABLE kernels", "table kernels"),
    ("DROP VIEW type_time", "view type_time"),
    ("CREATE OR REPLACE VIEW type_time AS SELECT 1 AS t", "view type_time"),
    ("ALTER TABLE kernels ADD COLUMN extra INTEGER", "table kernels"),
    ("ALTER TABLE kernels RENAME TO k2", "table kernels"),
    ("CREATE OR REPLACE TABLE kernels AS FROM kernels", "table kernels"),
    ("UPDATE kernels SET dur_ns = 0", "rows cannot be changed"),
    ("DELETE FROM kernels WHERE rank = 1", "rows cannot be changed"),
    ("TRUNCATE kernels", "rows cannot be changed"),
    ("INSERT INTO kernels (rank, start_ns, dur_ns) VALUES (9, 0, 1)", "rows cannot be changed"),
    ("EXPLAIN ANALYZE DELETE FROM kernels", "rows cannot be changed"),
    ("CREATE OR REPLACE MACRO num(x) AS x", "macro num"),
    ("CREATE TEMP VIEW kernels AS SELECT 1 AS rank", "would hide"),
    ("CREATE TABLE scratch (a INTEGER)", "temp schema"),
    ("CREATE OR REPLACE TABLE main.scratch AS FROM kernels", "CREATE TEMP TABLE scratch"),
    ('DROP VIEW "type_time"', "view type_time"),
    ("CREATE SCHEMA mine", "no temp schemas: schema mine cannot be made"),
    ("CREATE INDEX kix ON kernels (name)", "no temp indexes: index kix cannot be made"),
    ("CREATE SEQUENCE ids", "use CREATE TEMP SEQUENCE ids"),
])
def test_changes_to_the_profile_are_refused_and_rolled_back(any_con, sql, says):
    con = any_con
    before = state(con)
    engine = QueryEngine(con)
    with pytest.raises(ProtectedError) as e:
        run(engine, sql)
    assert says in str(e.value) and str(e.value).startswith("refused:")
    assert state(con) == before
    # The refusal leaves the console usable, with no transaction left open.
    run(engine, "SELECT count(*) FROM kernels")
    assert engine.page(0, 1) == [(3,)]


@pytest.mark.parametrize("sql,says", [
    ("COMMENT ON TABLE kernels IS 'mine'", "Make your own objects in the temp schema"),
])
def test_a_reopened_profile_refuses_what_it_cannot_name_in_general_terms(reopened, sql, says):
    with pytest.raises(ProtectedError) as e:
        run(QueryEngine(reopened), sql)
    assert says in str(e.value) and str(e.value).startswith("refused:")


def test_a_comment_on_the_profiles_table_is_a_change_to_it(con):
    with pytest.raises(ProtectedError) as e:
        run(QueryEngine(con), "COMMENT ON TABLE kernels IS 'mine'")
    assert "table kernels belongs to the loaded profile" in str(e.value)
    assert con.execute("SELECT comment FROM duckdb_tables() WHERE table_name = 'kernels'").fetchone() == (None,)


def test_temp_tables_and_views_are_the_users_own(any_con):
    con = any_con
    engine = QueryEngine(con)
    engine.run_all("CREATE TEMP TABLE mm AS FROM kernels WHERE type = 'MatMulV3';"
                   "UPDATE mm SET dur_ns = dur_ns * 2;"
                   "CREATE TEMP VIEW mm_total AS SELECT sum(dur_ns) AS t FROM mm;")
    run(engine, "SELECT t FROM mm_total")
    assert engine.page(0, 1) == [((40 + 50) * 2,)]
    run(engine, "DROP VIEW mm_total")
    run(engine, "DROP TABLE mm")
    assert con.execute("SELECT sum(dur_ns) FROM kernels").fetchone()[0] == 100


def test_transactions_are_refused_with_a_reason(con):
    with pytest.raises(QueryError) as e:
        run(QueryEngine(con), "BEGIN TRANSACTION")
    assert "each statement commits on its own" in str(e.value)


def test_a_refused_statement_in_a_batch_stops_the_rest(any_con):
    con = any_con
    engine = QueryEngine(con)
    with pytest.raises(ProtectedError):
        engine.run_all("CREATE TEMP TABLE a AS SELECT 1 AS x; DELETE FROM kernels; "
                       "CREATE TEMP TABLE b AS SELECT 2 AS x")
    run(engine, "SELECT count(*) FROM duckdb_tables() WHERE temporary AND table_name IN ('a', 'b')")
    assert engine.page(0, 1) == [(1,)]


def test_views_reinstalled_by_the_app_do_not_trip_the_guard(con):
    engine = QueryEngine(con)
    # The app recreates its views (new rules) on its own connection while the console is open.
    con.execute("CREATE OR REPLACE VIEW type_time AS SELECT type, max(dur_ns) AS t FROM kernels "
                "GROUP BY type")
    run(engine, "CREATE TEMP TABLE mine AS SELECT 1 AS x")
    with pytest.raises(ProtectedError):
        run(engine, "DROP VIEW type_time")
