"""The console engine on a real profile: statements, paging, errors with positions, cancel, export."""

import csv
import json
import threading
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from npu_tui.analysis.rules import load_rules
from npu_tui.analysis.views import install_views
from npu_tui.profile import load_profile
from npu_tui.query import (Cancelled, QueryEngine, QueryError, split_statements, starter_queries,
                           statement_at)

RANK0 = "msinsight-pt-2rank-levels/text/level1/rank0_ascend_pt"


@pytest.fixture(scope="module")
def profile(real):
    loaded = load_profile(real / "msinsight-pt-2rank-levels" / "text" / "level1")
    install_views(loaded.con, load_rules())
    return loaded


def _kernel_csv(real):
    with open(real / RANK0 / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", newline="") as f:
        return list(csv.DictReader(f))


def run(engine, sql):
    return engine.run(sql, statement_at(sql, len(sql)))


def test_split_ignores_semicolons_in_strings_and_comments():
    sql = "select ';' as a; -- not; here\nselect $$x;y$$ ;\n\n  select 3"
    assert [s.text for s in split_statements(sql)] == ["select ';' as a", "select $$x;y$$",
                                                       "select 3"]
    # The cursor on the blank line after the second statement still means the second one.
    assert statement_at(sql, sql.index("\n\n") + 1).text == "select $$x;y$$"
    assert statement_at(sql, 0).text == "select ';' as a"


def test_query_rows_match_the_profilers_csv(real, profile):
    rows = [r for r in _kernel_csv(real) if r["Type"] == "TransData"]
    expected_ns = sum(int(Decimal(r["Duration(us)"]) * 1000) for r in rows)
    engine = QueryEngine(profile.con)
    res = run(engine, "SELECT count(*) AS n, sum(dur_ns) AS total FROM kernels "
                      "WHERE rank = 0 AND type = 'TransData'")
    assert res.columns == ["n", "total"] and res.row_count == 1
    assert engine.page(0, 10) == [(len(rows), expected_ns)]
    assert res.elapsed_s > 0


def test_pages_come_from_duckdb_in_order(profile):
    engine = QueryEngine(profile.con)
    res = run(engine, "SELECT i FROM range(1000) t(i) ORDER BY i DESC")
    assert res.row_count == 1000
    assert engine.page(0, 3) == [(999,), (998,), (997,)]
    assert engine.page(998, 10) == [(1,), (0,)]


def test_a_damaged_block_is_told_by_duckdb_s_words_in_either_version():
    """DuckDB before 2.0 puts the error's class before them ("IO Error: ")."""
    from npu_tui.query.errors import is_damaged

    said = "Corrupt database file: computed checksum 1 does not match stored checksum 2 in block at location 3"
    assert is_damaged(said) and is_damaged(f"IO Error: {said}")
    assert not is_damaged('Binder Error: Referenced column "Corrupt database file" not found')


def test_syntax_error_points_at_the_token_in_the_console_text(profile):
    engine = QueryEngine(profile.con)
    sql = "SELECT 1;\n\nSELECT name\n  FORM kernels"
    with pytest.raises(QueryError) as e:
        engine.run(sql, statement_at(sql, len(sql)))
    assert "syntax error" in e.value.message
    # DuckDB blames `kernels` (it reads FORM as an alias): line 4, column 8 of the whole text.
    assert (e.value.line, e.value.column) == (3, 7)
    assert sql[e.value.offset:].startswith("kernels")


def test_binder_error_position_survives_the_result_wrapper(profile):
    engine = QueryEngine(profile.con)
    sql = "select 1 as a,\n   nope + 1 from kernels"
    with pytest.raises(QueryError) as e:
        run(engine, sql)
    assert "nope" in e.value.message and (e.value.line, e.value.column) == (1, 3)


def test_cancel_interrupts_a_slow_query_and_the_engine_goes_on(profile):
    engine = QueryEngine(profile.con)
    timer = threading.Timer(0.3, engine.cancel)
    timer.start()
    with pytest.raises(Cancelled):
        run(engine, "SELECT count(*) FROM range(1000000000000) a")
    timer.join()
    assert run(engine, "SELECT 41 + 1").row_count == 1 and engine.page(0, 1) == [(42,)]


def test_temp_objects_live_as_long_as_the_console(profile):
    engine = QueryEngine(profile.con)
    engine.run_all("CREATE TEMP TABLE mine AS SELECT * FROM kernels WHERE rank = 0; "
                   "UPDATE mine SET dur_ns = 0 WHERE type = 'TransData'")
    total = profile.con.execute("SELECT sum(dur_ns) FROM kernels WHERE rank = 0 "
                                "AND type <> 'TransData'").fetchone()[0]
    run(engine, "SELECT sum(dur_ns) FROM mine")
    assert engine.page(0, 1) == [(total,)]
    # Another console (another cursor) does not see them.
    with pytest.raises(QueryError):
        run(QueryEngine(profile.con), "SELECT * FROM mine")


@pytest.mark.parametrize("fmt,reader", [("csv", "read_csv"), ("parquet", "read_parquet"),
                                        ("json", "read_json")])
def test_export_reads_back_equal(profile, tmp_path, fmt, reader):
    engine = QueryEngine(profile.con)
    sql = "SELECT rank, name, dur_ns FROM kernels ORDER BY rank, start_ns"
    res = run(engine, sql)
    target = engine.export(tmp_path / f"out.{fmt}", fmt)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"out.{fmt}"]  # no partial file left
    back = duckdb.connect().execute(f"SELECT * FROM {reader}(?)", [str(target)]).fetchall()
    assert back == profile.con.execute(sql).fetchall() and len(back) == res.row_count


def test_export_of_json_is_one_array(profile, tmp_path):
    engine = QueryEngine(profile.con)
    run(engine, "SELECT 1 AS a, 'x' AS b UNION ALL SELECT 2, 'y'")
    out = engine.export(tmp_path / "r.json", "json")
    assert json.loads(out.read_text()) == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]


def test_export_failure_leaves_nothing(profile, tmp_path):
    engine = QueryEngine(profile.con)
    run(engine, "SELECT 1")
    with pytest.raises(QueryError):
        engine.export(tmp_path / "missing-dir" / "r.csv", "csv")
    assert list(tmp_path.iterdir()) == []


def test_starter_queries_run_on_a_real_profile(real, profile):
    engine = QueryEngine(profile.con)
    names = [name for name, _ in starter_queries()]
    assert {"Top kernels by total time", "Kernels of one type by input shape",
            "Exposed communication per stage", "Step breakdown per rank"} <= set(names)
    results = {name: run(engine, sql) for name, sql in starter_queries()}
    assert all(r.row_count > 0 for r in results.values())
    # Step 50 as the profiler reported it (PROVENANCE.md, step_trace_time.csv, us).
    run(engine, dict(starter_queries())["Step breakdown per rank"])
    rank0 = engine.page(0, 1)[0]
    assert rank0[:2] == (0, 50)
    assert [rank0[2], rank0[3], rank0[5], rank0[6]] == pytest.approx(
        [8873.756, 101963.203, 25744.050, 136581.0], abs=1e-3)
    # The top kernel by total time, from the profiler's own csv files of both ranks.
    totals = {}
    for rank in ("rank0_ascend_pt", "rank1_ascend_pt"):
        path = real / "msinsight-pt-2rank-levels/text/level1" / rank / "ASCEND_PROFILER_OUTPUT"
        with open(path / "kernel_details.csv", newline="") as f:
            for r in csv.DictReader(f):
                key = (r["Name"], r["Type"])
                totals[key] = totals.get(key, 0) + int(Decimal(r["Duration(us)"]) * 1000)
    (name, typ), total_ns = max(totals.items(), key=lambda kv: kv[1])
    run(engine, dict(starter_queries())["Top kernels by total time"])
    assert engine.page(0, 1)[0][:2] == (name, typ)
    assert engine.page(0, 1)[0][3] == pytest.approx(total_ns / 1000, abs=1e-3)


def test_catalog_lists_tables_with_columns_and_functions(profile):
    engine = QueryEngine(profile.con)
    run(engine, "SELECT 1")
    cat = engine.catalog()
    assert ("dur_ns", "BIGINT") in cat.relation("kernels").columns
    assert cat.relation("_console_result") is None  # the engine's own result table stays hidden
    assert "regexp_matches" in cat.functions and "SELECT" in cat.keywords


def test_engine_imports_no_ui():
    import subprocess
    import sys
    code = ("import sys, npu_tui.query, npu_tui.cli; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def test_a_catalog_read_on_another_thread_never_finds_the_engine_busy(profile):
    # The console reads the catalog on a worker when the analysis is rebuilt, perhaps while a
    # statement is being parsed: the engine's one cursor must be taken in turn, not refused.
    engine = QueryEngine(profile.con)
    stop, errors = threading.Event(), []

    def read_catalogs():
        while not stop.is_set():
            try:
                engine.catalog()
            except duckdb.Error as e:
                errors.append(e)

    reader = threading.Thread(target=read_catalogs)
    reader.start()
    try:
        for _ in range(100):
            assert run(engine, "select 40 + 2 as answer").row_count == 1
    finally:
        stop.set()
        reader.join()
    assert errors == []
