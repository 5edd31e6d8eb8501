"""The per-profile cache: a second open comes from it, a change or corruption rebuilds it."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from npu_tui.profile import LoadCancelled, ProfileError, load_profile
from npu_tui.profile.cache import cache_dir
from npu_tui.profile.health import health
from npu_tui.profile.schema import connect

ROOT = Path(__file__).resolve().parents[1]

TABLES = ("kernels", "host_events", "flows", "overlap_lanes", "step_trace", "comm_ops", "load_log")


@pytest.fixture
def profile_copy(real, tmp_path, monkeypatch):
    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "level1"
    shutil.copytree(real / "msinsight-pt-2rank-levels/text/level1", src)
    return src


def counts(p):
    return {t: p.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}


def labels(path):
    """Open with the cache, and store what was loaded, as the CLI and the TUI do."""
    seen = []
    p = load_profile(path, cache=True, progress=lambda d, t, label: seen.append(label))
    p.save_cache()
    return p, seen


def test_second_open_comes_from_the_cache_with_the_same_rows(profile_copy):
    first, seen1 = labels(profile_copy)
    second, seen2 = labels(profile_copy)
    assert "opened from cache" not in seen1 and seen2 == ["opened from cache"]
    assert counts(second) == counts(first) and counts(first)["kernels"] == 382
    assert second.ranks == first.ranks == [0, 1]
    assert len(list(cache_dir().glob("*.duckdb"))) == 1
    assert not any(f.name.endswith(".tmp") for f in cache_dir().iterdir())
    # Nothing was written beside the profile.
    assert not any(f.suffix == ".duckdb" for f in profile_copy.rglob("*"))


class _NoFsyncMode:
    """A connection of a DuckDB before 2.0, which has no fsync_mode setting (all else passed on)."""

    def __init__(self, con):
        self._con = con

    def execute(self, sql, *args):
        if "fsync_mode" in sql:
            raise duckdb.CatalogException('Catalog Error: unrecognized configuration parameter "fsync_mode"')
        return self._con.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._con, name)


def test_every_connection_runs_asof_joins_as_such(profile_copy):
    """DuckDB runs an ASOF join as a nested loop where it expects under 64 rows on the left, and
    before 2.0 it expects none of a CTE: a Kineto trace's 80k launches took 32 s instead of 1.4 s."""
    for p, _ in (labels(profile_copy), labels(profile_copy)):  # loaded, then reopened from the cache
        assert p.con.execute("SELECT current_setting('asof_loop_join_threshold')").fetchone() == (0,)


def test_a_duckdb_without_fsync_mode_still_caches(profile_copy, monkeypatch):
    """The store's SET fsync_mode, unknown before DuckDB 2.0 (Python 3.9, 3.10), had made every
    load there uncached: each open loaded the files again."""
    from npu_tui.profile import cache

    monkeypatch.setattr(cache, "connect", lambda path: _NoFsyncMode(connect(path)))
    first, _ = labels(profile_copy)
    second, seen = labels(profile_copy)
    assert seen == ["opened from cache"] and counts(second) == counts(first)


def test_a_profile_opened_by_another_name_names_its_files_by_that_name(profile_copy, monkeypatch):
    """The cache is shared by every name of the profile's folder, from any working folder: its
    tables name files whole, and what is said names them as this open names the profile, as a
    fresh load from there would."""
    out = "rank1_ascend_pt/ASCEND_PROFILER_OUTPUT"
    (profile_copy / out / "communication.json").unlink()  # a health item: a folder to act on
    monkeypatch.chdir(profile_copy.parent)
    first, _ = labels(Path(profile_copy.name))  # relative to the working folder
    Path("link").symlink_to(profile_copy.name)

    def said(p):
        ranks = [p.named(path) for (path,) in p.con.execute("SELECT path FROM ranks ORDER BY rank").fetchall()]
        return ranks, [h.file for h in health(p)]

    assert said(first) == ([f"{profile_copy.name}/rank{r}_ascend_pt" for r in (0, 1)],
                           [profile_copy.name, f"{profile_copy.name}/rank1_ascend_pt"])
    for cwd, path, cached in [(profile_copy / out, profile_copy, True),  # absolute, from inside it
                              (profile_copy / "rank1_ascend_pt", Path(".."), True),
                              (profile_copy / out, Path(".."), False),  # rank 1 alone: loaded, cached
                              (profile_copy / out, Path("../.."), True),  # its folder above its output
                              (profile_copy / out, Path("."), True),  # rank 1 again, named by its output
                              (profile_copy.parent.parent, Path(profile_copy.parent.name, profile_copy.name), True),
                              (profile_copy.parent, Path("link"), True)]:  # another name of its folder
        monkeypatch.chdir(cwd)
        again, seen = labels(path)
        assert (seen == ["opened from cache"]) == cached, (cwd, path)
        assert said(again) == said(load_profile(path)), (cwd, path)
        assert all(Path(f).exists() for f in said(again)[0] + said(again)[1])
        assert all(os.path.isabs(f) for (f,) in again.con.execute("SELECT file FROM load_log").fetchall())


def test_a_cache_written_through_a_link_since_removed_names_files_by_this_open(profile_copy, monkeypatch):
    monkeypatch.chdir(profile_copy.parent)
    Path("link").symlink_to(profile_copy.name)
    labels(Path("link"))  # the cache written with the link's paths
    Path("link").unlink()
    again, seen = labels(Path(profile_copy.name))
    assert seen == ["opened from cache"]
    assert [again.named(p) for (p,) in again.con.execute("SELECT path FROM ranks ORDER BY rank").fetchall()] == [
        f"{profile_copy.name}/rank{r}_ascend_pt" for r in (0, 1)]


def test_a_changed_file_rebuilds(profile_copy):
    labels(profile_copy)
    kd = profile_copy / "rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv"
    lines = kd.read_bytes().splitlines(keepends=True)
    kd.write_bytes(b"".join(lines[:-1]))  # one kernel fewer
    p, seen = labels(profile_copy)
    assert "opened from cache" not in seen
    assert counts(p)["kernels"] == 381


def test_a_corrupt_cache_is_rebuilt_not_trusted(profile_copy):
    labels(profile_copy)
    (entry,) = list(cache_dir().glob("*.duckdb"))
    entry.write_bytes(b"not a database" * 1000)
    p, seen = labels(profile_copy)
    assert "opened from cache" not in seen and counts(p)["kernels"] == 382
    _, seen = labels(profile_copy)
    assert seen == ["opened from cache"]


def test_cancel_stops_the_load(profile_copy):
    with pytest.raises(LoadCancelled):
        load_profile(profile_copy, cancelled=lambda: True)


def test_a_fresh_load_goes_into_its_cache_file_named_only_once_saved(profile_copy):
    p = load_profile(profile_copy, cache=True)
    assert p.store is not None
    # Loading: a temporary file of this process, no file under a key.
    assert [f.name for f in cache_dir().iterdir() if not f.name.endswith(".wal")] == [p.store.path.name]
    p.save_cache()
    assert [f.name for f in cache_dir().iterdir()] == [f"{p.cache_key}.duckdb"]
    assert counts(p)["kernels"] == 382  # and the connection goes on working after the rename


def test_a_load_that_is_cancelled_or_fails_leaves_nothing_in_the_cache(profile_copy, tmp_path):
    with pytest.raises(LoadCancelled):
        load_profile(profile_copy, cache=True, cancelled=lambda: True)
    empty = tmp_path / "empty"
    (empty / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (empty / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").write_text("Name,Start Time(us),Duration(us)\n")
    with pytest.raises(ProfileError):
        load_profile(empty, cache=True)
    assert list(cache_dir().iterdir()) == []


def test_a_load_never_saved_leaves_nothing_when_the_process_ends(profile_copy):
    # As when the app quits before its trace is in: the load is incomplete, so it is not cached.
    code = ("import sys; from npu_tui.profile import load_profile; "
            "p = load_profile(sys.argv[1], cache=True, background=True); "
            "assert p.pending and p.store.path.exists()")
    subprocess.run([sys.executable, "-c", code, str(profile_copy)], check=True, cwd=ROOT, env=os.environ)
    assert list(cache_dir().iterdir()) == []


def test_the_files_of_a_load_whose_process_is_gone_are_removed_by_the_next(profile_copy):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    # Named as stores are now (the process's nth store) and as an older version named them.
    orphans = [folder / f".0123abcd.{gone}.3.tmp", folder / f".0123abcd.{gone}.3.tmp.wal",
               folder / f".89abcdef.{gone}.tmp"]
    running = folder / f".4567abcd.{os.getppid()}.0.tmp"  # another process's load, still going
    for f in orphans + [running]:
        f.write_bytes(b"partial")
    labels(profile_copy)
    assert not any(f.exists() for f in orphans) and running.exists()


def test_a_load_in_another_container_sharing_the_folder_keeps_its_files(profile_copy):
    """Containers sharing a home each number their processes: a store named by a pid that is none
    here may be a live load in another, whose files had been removed under it. Its DuckDB holds a
    lock on the store: while held, the store and its log stay; once let go, they go."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    store, log = folder / f".0123abcd.{gone}.0.tmp", folder / f".0123abcd.{gone}.0.tmp.wal"
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys; c = duckdb.connect(sys.argv[1]); "
                               "c.execute('CREATE TABLE t (a INTEGER)'); print('held', flush=True); sys.stdin.read()",
                               str(store)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        log.write_bytes(b"log")
        labels(profile_copy)
        assert store.exists() and log.exists()
    finally:
        holder.communicate("")
    shutil.rmtree(profile_copy / "rank1_ascend_pt")  # another profile: a fresh load sweeps again
    labels(profile_copy)
    assert not store.exists() and not log.exists()


def test_an_orphan_this_user_cannot_remove_leaves_the_cache_working(profile_copy, monkeypatch):
    """A shared cache folder (sticky, another user's temporary file of a load long gone): it is
    left, and this load is still cached."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    theirs = folder / ".0123abcd.999999999.0.tmp"  # no such process
    theirs.write_bytes(b"partial")
    real_unlink = Path.unlink

    def unlink(self, missing_ok=False):
        if self == theirs:
            raise PermissionError(13, "Operation not permitted", str(self))
        return real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink)
    labels(profile_copy)
    assert theirs.exists() and len(list(folder.glob("*.duckdb"))) == 1
    assert load_profile(profile_copy, cache=True).from_cache


def test_an_analysis_stopped_part_way_is_none_not_the_one_before(profile_copy, tmp_path, monkeypatch):
    """Ctrl-C while a cached profile is analysed again under other rules: the next open under
    the shipped rules analyses afresh, never taking the half-made tables for its own."""
    from npu_tui.analysis import views
    from npu_tui.session import Session

    labels(profile_copy)
    shipped = Session.load(profile_copy)
    expected = shipped.analyse()
    shipped.con.close()

    rules = tmp_path / "rules.toml"
    rules.write_text('[[finding]]\nrule = "comm_exposed_high"\nthreshold = 0.99\n')
    real_create = views._create

    def create(con, name):
        if name == "findings":
            raise KeyboardInterrupt
        real_create(con, name)

    monkeypatch.setattr(views, "_create", create)
    other = Session.load(profile_copy, rules)
    with pytest.raises(KeyboardInterrupt):
        other.analyse()
    other.con.close()
    monkeypatch.setattr(views, "_create", real_create)

    again = Session.load(profile_copy)
    assert again.profile.from_cache and not again.analysed
    assert again.analyse() == expected


def test_a_profile_loaded_again_while_its_first_load_is_held_loads_once(profile_copy):
    """The app holds its session until a reload is shown. With the cache file gone meanwhile (a
    damaged one removed, or evicted), the reload's load went into the held database, by the
    same temporary name: every kernel twice, two ranks of one, and no cache file written."""
    from npu_tui.session import Session

    held = Session.load(profile_copy)
    held.analyse()
    kernels = held.con.execute("SELECT count(*) FROM kernels").fetchone()[0]
    for f in cache_dir().glob("*.duckdb"):
        f.unlink()
    again = Session.load(profile_copy)
    again.analyse()
    assert again.ranks == held.ranks
    assert again.con.execute("SELECT count(*) FROM kernels").fetchone()[0] == kernels
    assert held.con.execute("SELECT count(*) FROM kernels").fetchone()[0] == kernels
    assert len(list(cache_dir().glob("*.duckdb"))) == 1


def test_without_room_in_the_cache_folder_the_load_stays_in_memory(profile_copy, monkeypatch):
    from npu_tui.profile import cache

    monkeypatch.setattr(cache.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**12, 10**12, 0))
    p, _ = labels(profile_copy)
    assert p.store is None and counts(p)["kernels"] == 382
    assert not cache_dir().exists() or list(cache_dir().iterdir()) == []


def test_the_room_asked_for_covers_a_small_profile_s_cache_file(profile_copy, monkeypatch):
    """A cache file holds about 14 MB of tables and analysis however small the profile: room for
    the input's size alone was not enough (a 3 MB profile filled a 4 MB disk)."""
    from npu_tui.cli import main
    from npu_tui.profile import cache

    size = sum(f.stat().st_size for f in profile_copy.rglob("*") if f.is_file())
    with monkeypatch.context() as m:
        m.setattr(cache.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(
            10**12, 10**12, cache.STORE_ROOM))
        assert main(["report", str(profile_copy), "--partial"]) == 0
        assert not cache_dir().exists() or list(cache_dir().iterdir()) == []
    assert main(["report", str(profile_copy), "--partial"]) == 0
    (saved,) = cache_dir().iterdir()
    assert size < saved.stat().st_size < cache.STORE_ROOM


FULL_DISK = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails, as on a full disk
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
from npu_tui.cli import main
sys.exit(main(sys.argv[2:]))
"""


# Limits that fill it as the files load, as the analysis is added, as it is written out.
@pytest.mark.parametrize("kib", [256, 2048, 8192], ids=lambda k: f"{k}KiB")
def test_a_cache_file_whose_disk_fills_gives_way_to_a_load_in_memory(profile_copy, kib, capsys, monkeypatch, tmp_path):
    """The disk fills at some point of the cache file's life: as the files load into it, as the
    analysis is added, or as it is written out (which takes DuckDB's database with it). Every
    command still answers from a load in memory, and leaves no temporary file behind."""
    from npu_tui.cli import main

    sql = "SELECT count(*) AS n, sum(dur_ns) AS ns FROM kernels"
    with monkeypatch.context() as m:
        m.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "roomy"))
        assert main(["sql", str(profile_copy), sql]) == 0
    expected = capsys.readouterr().out
    for command in (["sql", str(profile_copy), sql], ["report", str(profile_copy), "--format", "json"]):
        out = subprocess.run([sys.executable, "-c", FULL_DISK, str(kib << 10), *command],
                             capture_output=True, text=True, cwd=ROOT, env=os.environ)
        assert "Traceback" not in out.stderr and out.returncode == 0, out.stderr
        if command[0] == "sql":
            assert out.stdout == expected
        else:
            assert json.loads(out.stdout)["ranks"]
        assert not cache_dir().exists() or list(cache_dir().iterdir()) == []


def test_a_disk_that_fills_under_the_load_logs_own_row_gives_way_to_a_load_in_memory(profile_copy, monkeypatch):
    """The file's rows were written, then the row saying so could not be (its log's write failed
    for want of room): the load goes on in memory, as when the rows themselves fail."""
    from npu_tui.profile import loader

    real_log, failed_once = loader._log, []

    def log(con, *args):
        temps = [f.name for f in cache_dir().glob(".*.tmp")]
        if temps and not failed_once:
            failed_once.append(temps[0])
            raise duckdb.TransactionException(f'Failed to commit: Could not write file "{cache_dir() / temps[0]}.wal": '
                                              "No space left on device")
        real_log(con, *args)

    monkeypatch.setattr(loader, "_log", log)
    p, _ = labels(profile_copy)
    assert failed_once and p.store is None and counts(p)["kernels"] == 382
    assert p.con.execute("SELECT count(*) FROM load_log WHERE note <> ''").fetchone()[0] == 0
    assert not list(cache_dir().glob(".*"))


def test_with_no_room_for_any_file_what_needs_a_temporary_copy_is_said_and_the_rest_loads(profile_copy):
    """A full temporary folder: CSVs load without one (only a cut CSV is copied), a trace's events
    are staged in one and fail for want of room, said as that, not as a damaged file."""
    out = subprocess.run([sys.executable, "-c", FULL_DISK, "0", "report", str(profile_copy), "--format", "json"],
                         capture_output=True, text=True, cwd=ROOT, env=os.environ)
    assert "Traceback" not in out.stderr and out.returncode == 2
    doc = json.loads(out.stdout)
    failed = {(h["rank"], h["what"].split(" ")[0]) for h in doc["health"] if h["severity"] == "error"}
    assert failed == {(0, "trace_view.json"), (1, "trace_view.json")}
    assert all("no room to write a temporary copy" in h["what"] and "TMPDIR" in h["fix"]
               for h in doc["health"] if h["severity"] == "error")
    assert all(r["kernel_count"] > 0 for r in doc["ranks"])


def test_the_cache_keeps_what_the_caller_added(profile_copy):
    """The CLI and TUI cache a profile with its analysis tables, so a reopen skips the analysis."""
    first = load_profile(profile_copy, cache=True)
    first.con.execute("CREATE TABLE analysis_result AS SELECT 42 AS answer")
    first.save_cache()
    again = load_profile(profile_copy, cache=True)
    assert again.from_cache and again.con.execute("SELECT answer FROM analysis_result").fetchone() == (42,)


def test_background_defers_the_trace_then_completes_and_caches(profile_copy):
    """Kernels and step data first; the trace's host events and flows follow in load_pending()."""
    whole = load_profile(profile_copy)
    p = load_profile(profile_copy, cache=True, background=True)
    assert counts(p)["kernels"] == counts(whole)["kernels"]
    assert counts(p)["step_trace"] == 2
    assert counts(p)["host_events"] == counts(p)["flows"] == 0
    assert [f.name for j in p.pending for _, f in j.files] == ["trace_view.json"] * 2
    p.save_cache()
    assert not list(cache_dir().glob("*.duckdb"))  # incomplete: not cached yet
    seen = []
    p.load_pending(progress=lambda d, t, label: seen.append((d, t)))
    assert p.pending == [] and seen[-1] == (2, 2)
    assert counts(p) == counts(whole)
    p.save_cache()
    again, labels_ = labels(profile_copy)
    assert labels_ == ["opened from cache"] and counts(again) == counts(whole)


def _stop_once_rank_0s_trace_is_in(monkeypatch):
    """A cancel callback that stops the background load once rank 0's trace is committed and
    rank 1's is being read (held in a statement that only the stop's interrupt ends)."""
    import threading
    import time

    from npu_tui.profile import loader
    from npu_tui.profile.sources import trace_view

    committed, inside = threading.Event(), []
    real_log, real_load = loader._log, trace_view.load

    def log(con, rank, path, kind, *rest):
        real_log(con, rank, path, kind, *rest)
        if kind == "trace_view" and rank == 0:
            committed.set()

    def load(con, path, ctx):
        if ctx.rank == 1:
            committed.wait(30)
            inside.append(time.monotonic())
            con.execute("SELECT count(*) FROM range(1000000000000)").fetchone()
        return real_load(con, path, ctx)

    monkeypatch.setattr(loader, "_log", log)
    monkeypatch.setattr(trace_view, "load", load)
    # An interrupt reaches only a statement already running.
    return lambda: bool(inside) and time.monotonic() - inside[0] > 0.3


@pytest.mark.parametrize("relative", [False, True], ids=["whole path", "relative path"])
def test_a_stopped_background_load_takes_back_what_it_loaded_and_stays_pending(profile_copy, monkeypatch, relative):
    """Stopped after rank 0's trace was in and while rank 1's was being read: the tables are the
    first phase's again (its analysis must keep agreeing with them), the stop is no file's
    failure, the work waits (nothing is cached as complete) and health names it; loading it
    again completes the profile. Opened by a relative path (as `npu-tui level1`), its log rows
    were left behind, then logged again."""
    from npu_tui.profile.health import health

    if relative:
        monkeypatch.chdir(profile_copy.parent)
        profile_copy = Path(profile_copy.name)
    whole = load_profile(profile_copy)
    p = load_profile(profile_copy, cache=True, background=True)
    first = counts(p)
    with monkeypatch.context() as m, pytest.raises(LoadCancelled):
        p.load_pending(cancelled=_stop_once_rank_0s_trace_is_in(m))
    assert counts(p) == first
    assert p.stopped and [f.name for j in p.pending for _, f in j.files] == ["trace_view.json"] * 2
    said = health(whole)  # the sample's own (a partial rank set)
    added = [i for i in health(p) if i not in said]
    assert [(i.severity, i.rank, i.what.split(":")[0]) for i in added] == \
        [("warning", 0, "trace_view.json"), ("warning", 1, "trace_view.json")]
    assert "not loaded, its load was stopped" in added[0].what
    p.save_cache()
    assert not list(cache_dir().glob("*.duckdb"))

    p.load_pending()
    assert not p.stopped and p.pending == [] and health(p) == said
    assert counts(p) == counts(whole)
    p.save_cache()
    assert len(list(cache_dir().glob("*.duckdb"))) == 1


def test_a_trace_beside_a_db_export_of_the_same_rank_is_not_left_for_the_background(real, profile_copy):
    """Exported as text and db both: the db fills host events, flows and lanes where no earlier
    file did. Left for the background, the trace gave them in the app from the db (191 flows, not
    the trace's 425), then added its own to them (every host event twice)."""
    out = profile_copy / "rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"
    for db in (real / "msinsight-pt-2rank-levels/db/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT").glob("*.db"):
        shutil.copy(db, out)
    whole = load_profile(profile_copy)
    p = load_profile(profile_copy, background=True)
    assert [(j.ctx.rank, f.name) for j in p.pending for _, f in j.files] == [(1, "trace_view.json")]
    p.load_pending()
    assert counts(p) == counts(whole)


def test_background_keeps_the_trace_when_it_is_the_only_kernel_source(real, tmp_path):
    bare = tmp_path / "trace_view.json"
    shutil.copy(real / "msinsight-pt-2rank-levels/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"
                / "trace_view.json", bare)
    p = load_profile(bare, background=True)
    assert p.pending == [] and counts(p)["kernels"] == 191


def _spoil_block_of(cache_file, table, column=None):
    """Overwrite bytes inside the first storage block of ``table`` (of its ``column`` where given)
    in a DuckDB file: its checksum then fails when that block is read, while the file still opens
    and its key table reads."""
    import duckdb

    con = duckdb.connect(str(cache_file), read_only=True)
    block = con.execute(f"SELECT min(block_id) FROM pragma_storage_info('{table}') WHERE block_id >= 0 "
                        "AND column_name = coalesce(?, column_name)", [column]).fetchone()[0]
    block_size = con.execute("SELECT block_size FROM pragma_database_size()").fetchone()[0]
    con.close()
    assert block is not None
    with open(cache_file, "r+b") as f:
        f.seek(3 * 4096 + block * block_size + 40)  # past the file's three header blocks
        f.write(b"\x5a" * 16)


# A stored analysis table the report reads; the rank list, read as the cache opens, and the
# kernels' ranks, read by the health check as the session opens (both gave a traceback).
@pytest.mark.parametrize("table, column", [("stage_categories", None), ("ranks", "rank"), ("kernels", "rank")])
def test_a_cache_that_opens_but_fails_to_read_is_replaced_by_a_fresh_load(profile_copy, capsys, table, column):
    from npu_tui.cli import main

    assert main(["report", str(profile_copy), "--format", "json", "--partial"]) == 0
    fresh = capsys.readouterr().out
    (entry,) = list(cache_dir().glob("*.duckdb"))
    _spoil_block_of(entry, table, column)
    assert main(["report", str(profile_copy), "--format", "json", "--partial"]) == 0
    out = capsys.readouterr()
    assert out.out == fresh and "Traceback" not in out.err
    # The spoilt file is gone; the fresh load stored a readable one that the next open uses.
    (entry,) = list(cache_dir().glob("*.duckdb"))
    p, seen = labels(profile_copy)
    assert seen == ["opened from cache"]
    assert p.con.execute("SELECT count(*) FROM stage_categories").fetchone()[0] > 0


def test_the_fresh_load_in_place_of_a_damaged_cache_shows_its_progress_and_stops_when_cancelled(profile_copy):
    """The app opens a profile with a progress bar and escape: a damaged block met under the
    analysis loaded the profile again with neither (a long wait on "opened from cache")."""
    from npu_tui.session import Session

    Session.load(profile_copy).analyse()
    (entry,) = list(cache_dir().glob("*.duckdb"))
    _spoil_block_of(entry, "stage_categories")
    seen = []

    def progress(done, total, label):
        seen.append(label)

    session = Session.load(profile_copy, progress=progress)
    assert seen == ["opened from cache"]
    session.analyse(progress=progress)
    assert "rank 0: kernel_details.csv" in seen[1:] and seen[-1] == "done"
    session.close()

    (entry,) = list(cache_dir().glob("*.duckdb"))
    _spoil_block_of(entry, "stage_categories")
    seen.clear()
    session = Session.load(profile_copy)
    with pytest.raises(LoadCancelled):
        session.analyse(progress=progress, cancelled=lambda: len(seen) > 0)


def test_a_damaged_block_only_a_query_reads_is_replaced_by_a_fresh_load(profile_copy):
    """The report does not read host_events: the damage shows first under `sql` (or
    ``npu_tui.open().sql``), which blamed the query and kept the damaged file."""
    query = "SELECT count(*) AS n, sum(dur_ns) AS ns FROM host_events"
    cli = [sys.executable, "-m", "npu_tui", "sql", str(profile_copy), query, "--format", "csv"]
    api = [sys.executable, "-c", "import sys, npu_tui; "
           "print(npu_tui.open(sys.argv[1]).sql(sys.argv[2]).to_csv(index=False), end='')",
           str(profile_copy), query]
    for command in (cli, api):
        fresh = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=os.environ, check=True).stdout
        assert fresh.splitlines()[1].split(",")[0] not in ("", "0")
        (entry,) = list(cache_dir().glob("*.duckdb"))
        _spoil_block_of(entry, "host_events")
        out = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=os.environ)
        assert out.returncode == 0 and out.stdout == fresh, out.stderr
        p, seen = labels(profile_copy)
        p.con.close()
        assert seen == ["opened from cache"]  # a readable file took its place


def _from_cache_elsewhere(path) -> bool:
    """Whether another process opening ``path`` gets it from the cache."""
    code = ("import sys; from npu_tui.profile import load_profile; "
            "print(load_profile(sys.argv[1], cache=True).from_cache)")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                          check=True, cwd=ROOT, env=os.environ)
    return done.stdout.strip() == "True"


def test_a_reopened_profile_shares_its_cache_file_with_every_other_npu_tui(profile_copy):
    """The app holds its profile for as long as it runs; a report beside it reads the same cache
    file instead of loading the profile again (and then replacing the file)."""
    from npu_tui.session import Session

    Session.load(profile_copy).analyse()  # loaded, analysed and cached
    (entry,) = list(cache_dir().glob("*.duckdb"))
    inode = entry.stat().st_ino
    held = Session.load(profile_copy)
    held.analyse()
    assert held.profile.from_cache and held.profile.read_only
    assert _from_cache_elsewhere(profile_copy)
    done = subprocess.run([sys.executable, "-m", "npu_tui", "report", str(profile_copy), "--format", "json",
                           "--partial"], capture_output=True, text=True, cwd=ROOT, env=os.environ)
    assert done.returncode == 0 and json.loads(done.stdout)["findings"] == held.report["findings"]
    assert entry.stat().st_ino == inode and list(cache_dir().iterdir()) == [entry]


def test_a_reopened_profile_under_other_rules_takes_their_analysis(profile_copy, tmp_path):
    """A cache analysed under other rules is opened for writing and analysed again; while another
    npu-tui reads that file, the profile loads into memory instead and the file stays as it is."""
    from npu_tui.session import Session

    rules = tmp_path / "rules.toml"
    rules.write_text('[[finding]]\nrule = "comm_exposed_high"\nthreshold = 0.99\n')
    fresh = Session.load(profile_copy, rules, cache=False)
    expected = [f["rule"] for f in fresh.analyse()["findings"]]
    assert "comm_exposed_high" not in expected

    labels(profile_copy)  # the cache: loaded, not analysed
    shipped = Session.load(profile_copy)
    assert "comm_exposed_high" in [f["rule"] for f in shipped.analyse()["findings"]]
    (entry,) = list(cache_dir().glob("*.duckdb"))
    shipped.con.close()

    # The file is shared by no one: it is analysed under the new rules in place.
    other = Session.load(profile_copy, rules)
    assert other.profile.from_cache and not other.profile.read_only
    assert [f["rule"] for f in other.analyse()["findings"]] == expected
    other.con.close()

    # Now held by a reader (this process, read-only): the shipped rules go to memory instead.
    reader = Session.load(profile_copy, rules)
    assert reader.profile.read_only and reader.analysed
    inode, size = entry.stat().st_ino, entry.stat().st_size
    again = Session.load(profile_copy)
    assert not again.profile.from_cache and again.profile.store is None
    assert "comm_exposed_high" in [f["rule"] for f in again.analyse()["findings"]]
    assert (entry.stat().st_ino, entry.stat().st_size) == (inode, size) and reader.analysed


@pytest.mark.parametrize("errno_, why, said", [
    (13, "Permission denied", "cannot be read (permission denied)"),
    # the system's limits of the moment: a too low ulimit -n, a failing disk or network mount (a
    # too many open files had been kept, and told as a damaged file)
    (24, "Too many open files", "could not be read: the system refused for now"),
    (5, "Input/output error", "could not be read: the system refused for now"),
    (116, "Stale file handle", "could not be read: the system refused for now"),
])
def test_a_load_with_a_file_that_failed_is_not_kept(profile_copy, monkeypatch, capsys, errno_, why, said):
    """The cause is often passing (a permission fixed, a parse that finished) while the files'
    sizes and times, the cache's key, stay as they were: a kept failure would outlive its fix."""
    import builtins

    from npu_tui.cli import main

    kd = profile_copy / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    real_open = builtins.open

    def refusing_open(file, *args, **kwargs):  # tests run as root: chmod 000 would not stop them
        if Path(file) == kd:
            raise OSError(errno_, why, str(file))
        return real_open(file, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(builtins, "open", refusing_open)
        assert main(["report", str(profile_copy), "--format", "json"]) == 2
        doc = json.loads(capsys.readouterr().out)
        assert doc["complete"] is False
        (item,) = [h for h in doc["health"] if h["severity"] == "error"]
        assert said in item["what"] and "damaged" not in item["fix"]
    assert not list(cache_dir().glob("*.duckdb"))
    assert main(["report", str(profile_copy), "--format", "json", "--partial"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["complete"] is True and [r["kernel_count"] for r in doc["ranks"]] == [191, 191]
    assert len(list(cache_dir().glob("*.duckdb"))) == 1


def test_a_damaged_file_is_cached_with_its_failure(profile_copy):
    """A damaged file stays damaged until a new copy replaces it (and so changes the key): its
    load is kept, and the next open says the same from the cache."""
    from npu_tui.session import Session

    (profile_copy / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "communication.json").write_text('{"step50": {broken')
    first = Session.load(profile_copy)
    first.analyse()
    again = Session.load(profile_copy)
    assert again.profile.from_cache and [h.what for h in again.health] == [h.what for h in first.health]
    assert any(h.severity == "error" for h in again.health)


def test_a_cache_file_this_user_may_read_but_not_write_is_still_used(profile_copy, monkeypatch):
    from npu_tui.profile import cache

    labels(profile_copy)

    def refuse(*args, **kwargs):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(cache.os, "utime", refuse)
    assert load_profile(profile_copy, cache=True).from_cache


def test_a_discarded_cache_file_takes_its_write_ahead_log_along(profile_copy):
    from npu_tui.profile.cache import discard

    p, _ = labels(profile_copy)
    entry = cache_dir() / f"{p.cache_key}.duckdb"
    p.con.close()
    Path(f"{entry}.wal").write_bytes(b"a log of another file")
    discard(p.cache_key)
    assert list(cache_dir().iterdir()) == []


def test_a_shared_cache_under_other_rules_loads_afresh_as_asked(profile_copy, tmp_path):
    """Beside a reader of the cache file, other rules load the profile into memory: in the
    background when asked (the app), with progress and a way to cancel."""
    from npu_tui.session import Session

    rules = tmp_path / "rules.toml"
    rules.write_text('[[finding]]\nrule = "fa_high"\nthreshold = 0.95\n')
    Session.load(profile_copy).analyse()
    reader = Session.load(profile_copy)
    assert reader.profile.read_only
    seen, polls = [], []
    other = Session.load(profile_copy, rules, background=True,
                         progress=lambda d, t, label: seen.append(label), cancelled=lambda: polls.append(1) and False)
    assert not other.profile.from_cache and other.pending
    assert len(seen) > 2 and len(polls) > 2


def test_the_key_is_the_profiles_whatever_path_opens_it(tmp_path, monkeypatch):
    """A link to the profile and a relative path reach the same cache file; a copy elsewhere,
    other files, does not."""
    from npu_tui.profile.cache import cache_key
    from npu_tui.profile.discover import discover

    run = tmp_path / "run"
    shutil.copytree(ROOT / "fixtures" / "diffusion_2rank", run)
    (tmp_path / "link").symlink_to(run)
    monkeypatch.chdir(run.parent)
    key = cache_key(discover(run))
    assert key and cache_key(discover(tmp_path / "link")) == key == cache_key(discover(Path("run")))
    shutil.copytree(run, tmp_path / "copy", copy_function=shutil.copy2)  # same sizes and times
    assert cache_key(discover(tmp_path / "copy")) != key


def test_the_key_changes_with_an_edit_that_keeps_size_and_mtime(tmp_path):
    """A kernel's duration edited in place, its file's mtime set back (``touch -r``): the rows
    are not the cached ones. A chmod changes them too (a file made unreadable fails the load)."""
    from npu_tui.profile.cache import cache_key
    from npu_tui.profile.discover import discover

    run = tmp_path / "run"
    shutil.copytree(ROOT / "fixtures" / "diffusion_2rank", run)
    kd = next(run.rglob("kernel_details.csv"))
    key = cache_key(discover(run))
    before = kd.stat()
    data = bytearray(kd.read_bytes())
    digit = next(i for i, c in enumerate(data) if c in b"123456789" and data[i - 1] == ord(","))
    data[digit] = ord("1") + data[digit] % 9  # another digit, the size kept
    kd.write_bytes(bytes(data))
    os.utime(kd, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert kd.stat().st_size == before.st_size and kd.stat().st_mtime_ns == before.st_mtime_ns
    edited = cache_key(discover(run))
    assert edited not in (None, key)
    kd.chmod(0o400)
    assert cache_key(discover(run)) not in (None, key, edited)


def test_the_key_is_how_the_files_were_opened(tmp_path, real):
    """The same files opened as a rank folder (or its output folder, the same load) or one file of
    it make ranks of other roots; an msprof PROF_* folder and one device's timeline folder, ranks of another
    device; an msprof device folder renamed, another rank. Each is a key of its own, so that a
    reopen gives what a cold load of that path gives."""
    from npu_tui.profile.cache import cache_key
    from npu_tui.profile.discover import discover

    run = tmp_path / "run"
    shutil.copytree(ROOT / "fixtures" / "diffusion_1rank", run)
    kd = next(run.rglob("kernel_details.csv"))
    keys = [cache_key(discover(p)) for p in (run, kd.parent.parent, kd)]
    assert None not in keys and len(set(keys)) == 3
    assert cache_key(discover(kd.parent)) == keys[1]

    prof = next((real / "mindinsight-msprof-2dev-hccl").glob("PROF_*"))
    keys = [cache_key(discover(p)) for p in (prof, prof / "device_0" / "timeline")]
    assert None not in keys and len(set(keys)) == 2

    merged = tmp_path / "PROF_000001_X"
    (merged / "mindstudio_profiler_output").mkdir(parents=True)
    trace = next((prof / "device_0" / "timeline").glob("msprof_*.json"))
    shutil.copy2(trace, merged / "mindstudio_profiler_output" / "msprof_20230818142704.json")
    (merged / "device_0").mkdir()
    for name in ("start_info.0", "end_info.0"):
        shutil.copy2(prof / "device_0" / name, merged / "device_0" / name)
    disc = discover(tmp_path)
    key = cache_key(disc)
    (merged / "device_0").rename(merged / "device_3")
    again = discover(tmp_path)
    assert [s.rank for s in again.ranks] != [s.rank for s in disc.ranks] or \
        [s.device for s in again.ranks] != [s.device for s in disc.ranks]
    assert cache_key(again) not in (None, key)


def test_the_key_changes_with_duckdbs_version(tmp_path, monkeypatch):
    """Another DuckDB reads the files with other readers: its rows are not an older one's."""
    from npu_tui.profile.cache import cache_key
    from npu_tui.profile.discover import discover

    run = tmp_path / "run"
    shutil.copytree(ROOT / "fixtures" / "diffusion_2rank", run)
    key = cache_key(discover(run))
    monkeypatch.setattr(duckdb, "__version__", duckdb.__version__ + ".1")
    assert cache_key(discover(run)) not in (None, key)


def test_a_file_that_is_a_link_is_keyed_by_its_target(tmp_path):
    """Pointed at another file of the same size and time (a copy made with cp -a), it is
    another profile."""
    from npu_tui.profile.cache import cache_key
    from npu_tui.profile.discover import discover

    run = tmp_path / "run"
    shutil.copytree(ROOT / "fixtures" / "diffusion_2rank", run)
    kd = next(run.rglob("kernel_details.csv"))
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    shutil.copy2(kd, a)
    shutil.copy2(kd, b)
    kd.unlink()
    kd.symlink_to(a)
    key = cache_key(discover(run))
    kd.unlink()
    kd.symlink_to(b)
    assert cache_key(discover(run)) != key


def test_eviction_keeps_the_most_recent_and_touches_only_npu_tuis_files(tmp_path, monkeypatch):
    from npu_tui.profile import cache

    monkeypatch.setattr(cache, "KEEP", 2)
    mine = [tmp_path / f"{i:032x}.duckdb" for i in range(5)]
    theirs = [tmp_path / "analysis.duckdb", tmp_path / "notes.txt"]
    for age, f in enumerate(mine + theirs):
        f.write_bytes(b"x")
        os.utime(f, (1000 + age, 1000 + age))
    Path(f"{mine[0]}.wal").write_bytes(b"x")
    cache._evict(tmp_path)
    assert sorted(f.name for f in tmp_path.iterdir()) == sorted(
        [mine[3].name, mine[4].name] + [f.name for f in theirs])


def test_eviction_beside_another_npu_tui_evicting_the_same_files(tmp_path, monkeypatch):
    """Parallel runs sharing a cache folder: a file another process removed between listing and
    looking at it is not an error (it was a traceback and exit 1)."""
    from npu_tui.profile import cache

    monkeypatch.setattr(cache, "KEEP", 1)
    files = [tmp_path / f"{i:032x}.duckdb" for i in range(4)]
    for age, f in enumerate(files):
        f.write_bytes(b"x")
        os.utime(f, (1000 + age, 1000 + age))
    real_stat = Path.stat

    def stat_after_the_other_removed_it(self, *a, **k):
        if self == files[1]:
            self.unlink(missing_ok=True)
        return real_stat(self, *a, **k)

    monkeypatch.setattr(Path, "stat", stat_after_the_other_removed_it)
    cache._evict(tmp_path)
    assert [f.name for f in tmp_path.iterdir()] == [files[3].name]


def test_a_load_that_falls_back_to_memory_keeps_what_discovery_said(profile_copy):
    """Ranks are numbered once: the second load found no rank claimed twice, and lost the note."""
    shutil.copytree(profile_copy / "rank0_ascend_pt", profile_copy / "rank0_copy_ascend_pt")
    out = subprocess.run([sys.executable, "-c", FULL_DISK, str(256 << 10), "report", str(profile_copy),
                          "--format", "json"], capture_output=True, text=True, cwd=ROOT, env=os.environ)
    assert "Traceback" not in out.stderr and out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [h["what"] for h in doc["health"] if "claimed twice" in h["what"]] == [
        "level1/rank0_copy_ascend_pt: rank 0 claimed twice, by rank0_ascend_pt too: not loaded"]
    assert doc["profile"]["ranks"] == [0, 1]
    assert not cache_dir().exists() or list(cache_dir().iterdir()) == []


@pytest.mark.parametrize("variable", ["NPU_TUI_CACHE_DIR", "TMPDIR"])
def test_a_cache_or_temp_folder_named_in_another_encoding_is_done_without(real, profile_copy, tmp_path, variable):
    """DuckDB opens UTF-8 names only: a cache folder (or a temp folder, where it spills) named in
    GBK, a Chinese home folder's, was a traceback (std::bad_cast) from every command."""
    folder = os.fsencode(tmp_path) + b"/\xd3\xc3\xbb\xa7"
    os.mkdir(folder)
    env = {**os.environ, variable: os.fsdecode(folder)}
    env.setdefault("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))
    # (a db export is read from a copy, a big trace in pieces, both in the temp folder)
    for profile in (profile_copy, real / "msinsight-pt-2rank-levels/db/level1"):
        done = subprocess.run([sys.executable, "-m", "npu_tui", "report", str(profile), "--format", "json",
                               "--partial"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        assert json.loads(done.stdout)["complete"]
