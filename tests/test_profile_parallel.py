"""Loading in parallel (ranks side by side; a rank's big trace beside its kernel table when cores
are spare) gives the same rows as loading one file at a time, out of memory included."""

import shutil
import threading
import time

import duckdb
import pytest

from npu_tui.profile import LoadCancelled, load_profile, loader
from npu_tui.profile.errors import SourceError
from npu_tui.profile.health import failed, health
from npu_tui.profile.sources import kernel_details, trace_view

TABLES = ("kernels", "host_events", "flows", "overlap_lanes", "step_trace", "comm_ops", "ranks")


@pytest.fixture
def level1(real, tmp_path):
    src = tmp_path / "level1"
    shutil.copytree(real / "msinsight-pt-2rank-levels/text/level1", src)
    return src


def contents(p):
    return {t: sorted(p.con.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in TABLES}


def load_with_cores(path, monkeypatch, cores):
    monkeypatch.setattr(loader.os, "cpu_count", lambda: cores)
    return load_profile(path)


@pytest.fixture
def trace_threads(monkeypatch):
    """The thread each trace_view.json loaded on."""
    real_load, seen = trace_view.load, []

    def recorded(con, path, ctx):
        seen.append(threading.current_thread().name)
        return real_load(con, path, ctx)

    monkeypatch.setattr(trace_view, "load", recorded)
    return seen


def test_the_trace_loads_beside_the_kernels_with_the_same_rows(level1, monkeypatch, trace_threads):
    alone = contents(load_with_cores(level1, monkeypatch, 1))
    assert not any(name.endswith("-beside") for name in trace_threads)
    trace_threads.clear()
    beside = load_with_cores(level1, monkeypatch, 4)  # two ranks, two cores to spare
    assert sorted(trace_threads) == ["npu-tui-load-0-beside", "npu-tui-load-1-beside"]
    assert contents(beside) == alone
    # kernel_details.csv gave the kernels; the trace added none of its own
    assert beside.con.execute("SELECT count(*), count(DISTINCT source) FROM kernels").fetchone() == (382, 1)
    assert beside.con.execute("SELECT count(*) FROM host_events").fetchone()[0] > 0


def test_beside_a_kernel_table_that_gives_nothing_the_trace_gives_the_kernels(level1, monkeypatch,
                                                                              trace_threads):
    (level1 / "rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv").write_bytes(b"")
    alone = contents(load_with_cores(level1, monkeypatch, 1))
    trace_threads.clear()
    beside = load_with_cores(level1, monkeypatch, 4)
    assert len(trace_threads) == 2 and all(name.endswith("-beside") for name in trace_threads)
    assert contents(beside) == alone
    by_source = dict(beside.con.execute("SELECT rank, any_value(source) FROM kernels GROUP BY rank").fetchall())
    assert by_source == {0: "kernel_details", 1: "trace_view"}


def _out_of_memory_once(module, monkeypatch):
    real_load, calls = module.load, []

    def squeezed(con, path, ctx):
        calls.append(ctx.rank)
        if calls.count(ctx.rank) == 1:
            raise duckdb.OutOfMemoryException("Out of Memory Error: (simulated)")
        return real_load(con, path, ctx)

    monkeypatch.setattr(module, "load", squeezed)
    return calls


def test_out_of_memory_beside_other_ranks_is_loaded_again_alone(level1, monkeypatch):
    """DuckDB's memory cap can be hit while ranks load side by side; the file is retried alone."""
    alone = contents(load_with_cores(level1, monkeypatch, 1))
    calls = _out_of_memory_once(kernel_details, monkeypatch)
    p = load_with_cores(level1, monkeypatch, 2)  # one core a rank: nothing beside
    assert sorted(calls) == [0, 0, 1, 1]
    assert contents(p) == alone
    assert p.con.execute("SELECT count(*) FROM load_log WHERE note <> ''").fetchone()[0] == 0


@pytest.mark.parametrize("module", [kernel_details, trace_view], ids=["kernel table", "trace"])
def test_out_of_memory_on_either_side_loads_the_rank_again_alone(level1, monkeypatch, module):
    alone = contents(load_with_cores(level1, monkeypatch, 1))
    calls = _out_of_memory_once(module, monkeypatch)
    p = load_with_cores(level1, monkeypatch, 4)
    assert sorted(calls) == [0, 0, 1, 1]
    assert contents(p) == alone  # nothing lost, nothing twice
    assert p.con.execute("SELECT count(*) FROM load_log WHERE note <> ''").fetchone()[0] == 0


@pytest.mark.parametrize("cores", [1, 2], ids=["alone", "beside other ranks"])
def test_out_of_memory_beneath_a_loaders_cleanup_is_still_retried(level1, monkeypatch, cores):
    """DuckDB's out-of-memory error aborts the transaction; the loader's cleanup (its DROP of a
    staging table) then fails in turn, and that error, not the first, leaves the loader. It is
    still the memory cap's: loaded again, not said unreadable."""
    alone = contents(load_with_cores(level1, monkeypatch, 1))
    real_load, calls = kernel_details.load, []

    def squeezed(con, path, ctx):
        calls.append(ctx.rank)
        if calls.count(ctx.rank) == 1:
            try:
                raise duckdb.OutOfMemoryException("Out of Memory Error: (simulated)")
            finally:
                con.execute("SELECT * FROM no_such_staging_table")  # fails, as a cleanup would
        return real_load(con, path, ctx)

    monkeypatch.setattr(kernel_details, "load", squeezed)
    p = load_with_cores(level1, monkeypatch, cores)
    assert sorted(calls) == [0, 0, 1, 1]
    assert contents(p) == alone
    assert p.con.execute("SELECT count(*) FROM load_log WHERE note <> ''").fetchone()[0] == 0


def test_a_trace_that_failed_beside_is_not_loaded_again_with_its_rank(level1, monkeypatch):
    """The kernel table hits the cap beside the other rank after the trace beside it has failed
    on its own (and said so): the rank's files load again alone, but not that trace, once more."""
    logged = threading.Event()
    real_log, real_kd, calls = loader._log, kernel_details.load, []

    def log(con, rank, path, kind, *rest):
        real_log(con, rank, path, kind, *rest)
        if kind == "trace_view":
            logged.set()

    def kd(con, path, ctx):
        calls.append(ctx.rank)
        if calls.count(ctx.rank) == 1:
            assert logged.wait(30)
            raise duckdb.OutOfMemoryException("Out of Memory Error: (simulated)")
        return real_kd(con, path, ctx)

    def tv(con, path, ctx):
        raise SourceError("not a trace (simulated damage)")

    monkeypatch.setattr(loader, "_log", log)
    monkeypatch.setattr(kernel_details, "load", kd)
    monkeypatch.setattr(trace_view, "load", tv)
    p = load_with_cores(level1, monkeypatch, 4)  # two ranks, each trace beside its kernel table
    traces = p.con.execute("SELECT rank, count(*) FROM load_log WHERE kind = 'trace_view' GROUP BY rank "
                           "ORDER BY rank").fetchall()
    assert traces == [(0, 1), (1, 1)]
    assert len(failed(health(p))) == 2
    assert p.con.execute("SELECT count(DISTINCT rank) FROM kernels").fetchone()[0] == 2


def test_a_file_over_the_cap_even_alone_loads_under_the_machines_limit(level1, monkeypatch):
    """The memory cap protects the machine; it never turns a valid file away. A trace that needs
    more than the cap on its own is loaded again with the machine's limit, and the cap is put back."""
    alone = contents(load_with_cores(level1, monkeypatch, 1))
    real_load, limits = trace_view.load, []

    def hungry(con, path, ctx):
        limits.append(con.execute("SELECT current_setting('memory_limit')").fetchone()[0])
        if limits[-1] == limits[0]:
            raise duckdb.OutOfMemoryException("Out of Memory Error: (simulated) failed to allocate")
        return real_load(con, path, ctx)

    monkeypatch.setattr(trace_view, "load", hungry)
    p = load_with_cores(level1, monkeypatch, 1)
    assert contents(p) == alone
    assert p.con.execute("SELECT count(*) FROM load_log WHERE note <> ''").fetchone()[0] == 0
    assert len(limits) == 4 and limits[1] != limits[0]  # each rank's trace: capped, then the machine's
    assert p.con.execute("SELECT current_setting('memory_limit')").fetchone()[0] == limits[0]


def test_a_real_out_of_memory_under_a_small_cap_loses_nothing(level1, monkeypatch):
    """DuckDB's own out-of-memory error (its JSON reader's, not a simulated one), under a 16 MiB cap."""
    alone = contents(load_with_cores(level1, monkeypatch, 1))
    real_uncapped, retried = loader._uncapped, []

    def uncapped(con, module, path, ctx):
        retried.append(path.name)
        return real_uncapped(con, module, path, ctx)

    monkeypatch.setattr(loader, "_memory_limit", lambda size: 16 << 20)
    monkeypatch.setattr(loader, "_uncapped", uncapped)
    p = load_with_cores(level1, monkeypatch, 1)
    assert "trace_view.json" in retried
    assert contents(p) == alone
    assert p.con.execute("SELECT count(*) FROM load_log WHERE note <> ''").fetchone()[0] == 0


def test_a_file_over_the_machines_limit_is_named_not_dropped_silently(level1, monkeypatch):
    def hungry(con, path, ctx):
        raise duckdb.OutOfMemoryException("Out of Memory Error: (simulated) failed to allocate")

    monkeypatch.setattr(trace_view, "load", hungry)
    p = load_with_cores(level1, monkeypatch, 1)
    notes = [n for (n,) in p.con.execute("SELECT note FROM load_log WHERE kind = 'trace_view'").fetchall()]
    assert len(notes) == 2 and all(n.startswith("out of memory, even with ") for n in notes)
    failed_files = failed(health(p))  # the run is incomplete, and says why first
    assert len(failed_files) == 2 and all("did not fit in memory" in i.what for i in failed_files)


def test_cancel_stops_the_trace_beside_too(level1, monkeypatch):
    monkeypatch.setattr(loader.os, "cpu_count", lambda: 4)
    labels = []

    def cancelled():
        return any("trace_view" in label for label in labels)

    with pytest.raises(LoadCancelled):
        load_profile(level1, progress=lambda d, t, label: labels.append(label), cancelled=cancelled)
    assert not [t for t in threading.enumerate() if t.name.endswith("-beside")]


def test_a_statement_cut_short_by_a_stop_is_no_files_failure(level1, monkeypatch):
    """Stopping interrupts what DuckDB is running: the file's rows roll back and the stop is
    raised, not logged as an unreadable file."""
    inside = []

    def slow(con, path, ctx):
        con.execute("INSERT INTO host_events (rank, name, start_ns) VALUES (?, 'half', 0)", [ctx.rank])
        inside.append(time.monotonic())
        con.execute("SELECT count(*) FROM range(1000000000000)").fetchone()  # until interrupted
        raise AssertionError("not interrupted")

    monkeypatch.setattr(trace_view, "load", slow)
    logged = []
    real_log = loader._log
    monkeypatch.setattr(loader, "_log", lambda con, rank, path, kind, *rest: (
        logged.append((path.name, rest[-1])), real_log(con, rank, path, kind, *rest)))
    p = load_profile(level1, background=True)
    with pytest.raises(LoadCancelled):  # once the long statement is surely running
        p.load_pending(cancelled=lambda: bool(inside) and time.monotonic() - inside[0] > 0.3)
    assert [(name, note) for name, note in logged if name == "trace_view.json"] == []
    assert p.con.execute("SELECT count(*) FROM host_events").fetchone()[0] == 0


def test_a_stop_between_two_statements_of_a_file_cuts_the_next_one(level1, monkeypatch):
    """An interrupt reaches only a statement running at that moment: a rank between two
    statements of a file when the stop comes would run the rest of the file. The stop interrupts
    until every rank is out."""
    between, stop_seen, finished = threading.Event(), threading.Event(), []

    def two_statements(con, path, ctx):
        con.execute("INSERT INTO host_events (rank, name, start_ns) VALUES (?, 'half', 0)", [ctx.rank])
        between.set()
        stop_seen.wait(5)
        time.sleep(0.3)  # the stop's first interrupt has come and gone
        con.execute("SELECT count(*) FROM range(2000000000)").fetchone()  # seconds, uninterrupted
        finished.append(path.name)
        raise AssertionError("not interrupted")

    def cancelled():
        if between.is_set():
            stop_seen.set()
        return stop_seen.is_set()

    monkeypatch.setattr(trace_view, "load", two_statements)
    monkeypatch.setattr(loader.os, "cpu_count", lambda: 1)  # one rank at a time: one in between
    p = load_profile(level1, background=True)
    with pytest.raises(LoadCancelled):
        p.load_pending(cancelled=cancelled)
    assert finished == []
    assert p.con.execute("SELECT count(*) FROM host_events").fetchone()[0] == 0
