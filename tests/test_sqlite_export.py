"""The SQLite exports (ascend_pytorch_profiler_N.db, analysis.db) on the real samples, checked
against the same files read with Python's sqlite3 and against the paired text exports."""

import csv
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from npu_tui.profile import ProfileError, load_profile
from npu_tui.profile.discover import discover
from npu_tui.profile.health import failed, health
from npu_tui.profile.sources.sqlite_export import SKIPPED_ROWS, SKIPPED_WHY

PT = "msinsight-pt-2rank-levels"
OUT = "ASCEND_PROFILER_OUTPUT"


def db_path(real: Path, level: str, rank: int, name: str = None) -> Path:
    return real / PT / "db" / level / f"rank{rank}_ascend_pt" / OUT / (
        name or f"ascend_pytorch_profiler_{rank}.db")


def sq(path: Path, sql: str):
    con = sqlite3.connect(path.resolve().as_uri() + "?mode=ro&immutable=1", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def text_kernel_rows(real: Path, level: str, rank: int):
    path = real / PT / "text" / level / f"rank{rank}_ascend_pt" / OUT / "kernel_details.csv"
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def listing(root: Path):
    return sorted((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in root.rglob("*"))


@pytest.fixture(scope="module")
def level1(real):
    return load_profile(real / PT / "db" / "level1")


def test_db_only_rank_folders_are_discovered(real):
    disc = discover(real / PT / "db" / "level1")
    assert disc.layout == "cluster"
    assert sorted(s.rank for s in disc.ranks) == [0, 1]  # from profiler_info_N.json
    for s in disc.ranks:
        names = sorted(p.name for p in s.files["sqlite_export"])
        # The -wal/-shm files sqlite left beside rank 0's db are not sources.
        assert names == ["analysis.db", f"ascend_pytorch_profiler_{s.rank}.db"]


def test_each_ranks_db_gathered_into_one_folder_is_its_rank(real, tmp_path, monkeypatch):
    """Every rank's ascend_pytorch_profiler_N.db copied into one folder loaded as one rank: the
    first db's, the others 'not loaded: the text export of the same run is used' (there was none),
    the run complete. Each is the rank its name gives, alone too (it was rank 0)."""
    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))
    for rank in (0, 1):
        shutil.copy(db_path(real, "level1", rank), tmp_path)
    kernels = {rank: sq(db_path(real, "level1", rank), "SELECT (SELECT count(*) FROM COMPUTE_TASK_INFO) + "
                                                       "(SELECT count(*) FROM COMMUNICATION_OP)")[0][0]
               for rank in (0, 1)}
    p = load_profile(tmp_path, cache=False)
    assert p.ranks == [0, 1]
    assert dict(p.con.execute("SELECT rank, count(*) FROM kernels GROUP BY rank").fetchall()) == kernels
    assert not failed(health(p)) and not p.con.execute("SELECT note FROM load_log WHERE note <> ''").fetchall()
    alone = load_profile(tmp_path / "ascend_pytorch_profiler_1.db", cache=False)
    assert alone.ranks == [1] and alone.con.execute("SELECT count(*) FROM kernels").fetchone()[0] == kernels[1]
    # A rank's analysis.db beside them is one rank's, which the folder does not tell: said, not a rank
    # of its own (a third, without kernels, the others said to lack an analysis.db).
    shutil.copy(db_path(real, "level1", 0, "analysis.db"), tmp_path)
    p = load_profile(tmp_path, cache=False)
    assert p.ranks == [0, 1]
    (item,) = [i for i in health(p) if "partial rank set" not in i.what]
    assert (item.severity, item.rank, item.what) == (
        "warning", None, "analysis.db: beside several ranks' db exports (ascend_pytorch_profiler_0.db, "
                         "ascend_pytorch_profiler_1.db): whose it is, nothing here tells; not loaded")


@pytest.mark.parametrize("level", ["level0", "level1", "level2"])
def test_kernel_count_equals_text_export_and_db_rows(real, level):
    p = load_profile(real / PT / "db" / level)
    for rank in (0, 1):
        db = db_path(real, level, rank)
        compute = sq(db, "SELECT t.startNs, t.endNs - t.startNs FROM TASK t "
                         "JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId")
        comm = sq(db, "SELECT startNs, endNs - startNs FROM COMMUNICATION_OP")
        got = p.con.execute(
            "SELECT start_ns, dur_ns FROM kernels WHERE rank = ? AND source = 'db'", [rank]).fetchall()
        # Same count as kernel_details.csv of the text run at the same level (separate runs, so
        # only the count is comparable), and exactly the db's own ns values.
        text = text_kernel_rows(real, level, rank)
        assert len(got) == len(text) == 191
        assert sorted(got) == sorted(compute + comm)
        text_comm = sum(r["Name"].startswith("hcom_") for r in text)
        assert p.con.execute("SELECT count(*) FROM kernels WHERE rank = ? AND core = 'HCCL'",
                             [rank]).fetchone()[0] == len(comm) == text_comm


def test_strings_resolved_like_the_text_export(real, level1):
    """Names, types, cores and shapes go through STRING_IDS; the text run of the same level names
    the same kernels with the same types and cores."""
    text = text_kernel_rows(real, "level1", 0)
    want = {(r["Name"], r["Type"], r["Accelerator Core"]) for r in text}
    got = set(level1.con.execute("SELECT name, type, core FROM kernels WHERE rank = 0").fetchall())
    # Comm op names carry a per-run counter (hcom_allReduce__586_0_1 vs __210_0_1).
    assert {g for g in got if not g[0].startswith("hcom_")} == {
        w for w in want if not w[0].startswith("hcom_")}
    first = sq(db_path(real, "level1", 0),
               "SELECT s.value FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId "
               "JOIN STRING_IDS s ON s.id = c.inputShapes ORDER BY t.startNs LIMIT 1")[0][0]
    assert first == '"32,3,224,224"'  # msprof writes the quotes into the value
    assert level1.con.execute("SELECT input_shapes FROM kernels WHERE rank = 0 "
                              "ORDER BY start_ns LIMIT 1").fetchone()[0] == "32,3,224,224"


def test_steps_devices_and_level(real, level1):
    for rank in (0, 1):
        (step, lo, hi), = sq(db_path(real, "level1", rank), "SELECT id, startNs, endNs FROM STEP_TIME")
        (_, device), = sq(db_path(real, "level1", rank), "SELECT rankId, deviceId FROM RANK_DEVICE_MAP")
        assert level1.con.execute("SELECT DISTINCT step FROM kernels WHERE rank = ?",
                                  [rank]).fetchall() == [(step,)]
        assert level1.con.execute("SELECT device_id, profiler_level FROM ranks WHERE rank = ?",
                                  [rank]).fetchone() == (device, "Level1")
        assert level1.con.execute("SELECT min(start_ns) >= ?, max(start_ns) < ? FROM kernels "
                                  "WHERE rank = ?", [lo, hi, rank]).fetchone() == (True, True)


def test_step_trace_from_analysis_db_is_in_us(real, level1):
    """analysis.db's StepTraceTime holds µs: its computing / not-overlapped / free equal the
    OVERLAP_ANALYSIS lane sums (ns / 1000) of the same run."""
    for rank in (0, 1):
        (want,) = sq(db_path(real, "level1", rank, "analysis.db"),
                     "SELECT step, computing, communication_not_overlapped, free, stage "
                     "FROM StepTraceTime")
        got = level1.con.execute(
            "SELECT step, computing_us, comm_not_overlapped_us, free_us, stage_us, device_id "
            "FROM step_trace WHERE rank = ?", [rank]).fetchall()
        assert got == [(int(want[0]), *want[1:], rank)]
    lanes = dict(sq(db_path(real, "level1", 0),
                    "SELECT type, sum(endNs - startNs) FROM OVERLAP_ANALYSIS GROUP BY type"))
    computing, not_overlapped, free = level1.con.execute(
        "SELECT computing_us, comm_not_overlapped_us, free_us FROM step_trace WHERE rank = 0").fetchone()
    assert (lanes[0] / 1000, lanes[2] / 1000, lanes[3] / 1000) == pytest.approx(
        (computing, not_overlapped, free), abs=1e-6)


def test_overlap_lanes_host_events_and_flows(real, level1):
    db = db_path(real, "level1", 0)
    lanes = dict(level1.con.execute(
        "SELECT lane, count(*) FROM overlap_lanes WHERE rank = 0 GROUP BY lane").fetchall())
    want = dict(sq(db, "SELECT type, count(*) FROM OVERLAP_ANALYSIS GROUP BY type"))
    assert lanes == {"Computing": want[0], "Communication": want[1],
                     "Communication(Not Overlapped)": want[2], "Free": want[3]}
    # Rank 1's db has no OVERLAP_ANALYSIS table.
    assert level1.con.execute("SELECT count(*) FROM overlap_lanes WHERE rank = 1").fetchone() == (0,)

    (n_torch,), = sq(db, "SELECT count(*) FROM PYTORCH_API")
    (n_cann,), = sq(db, "SELECT count(*) FROM CANN_API")
    cats = dict(level1.con.execute(
        "SELECT cat, count(*) FROM host_events WHERE rank = 0 GROUP BY cat").fetchall())
    assert sum(cats.values()) == n_torch + n_cann and cats["CANN"] == n_cann
    # Named as the text export of the same run names them (trace_view.json's categories).
    text = load_profile(real / PT / "text" / "level1", cache=False).con
    assert set(cats) == {c for (c,) in text.execute("SELECT DISTINCT cat FROM host_events WHERE rank = 0").fetchall()}
    step = level1.con.execute("SELECT start_ns, dur_ns, cat FROM host_events "
                              "WHERE rank = 0 AND name = 'ProfilerStep#50'").fetchall()
    (_, lo, hi), = sq(db, "SELECT id, startNs, endNs FROM STEP_TIME")
    assert step == [(lo, hi - lo, "cpu_op")]

    # Every kernel is launched by a torch op: one flow per kernel, landing on its start.
    links = sq(db, "SELECT p.startNs, t.startNs FROM PYTORCH_API p "
                   "JOIN CONNECTION_IDS ci ON ci.id = p.connectionId "
                   "JOIN TASK t ON t.connectionId = ci.connectionId "
                   "JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId "
                   "UNION ALL SELECT p.startNs, o.startNs FROM PYTORCH_API p "
                   "JOIN CONNECTION_IDS ci ON ci.id = p.connectionId "
                   "JOIN COMMUNICATION_OP o ON o.connectionId = ci.connectionId")
    got = level1.con.execute("SELECT host_ts_ns, device_ts_ns FROM flows WHERE rank = 0").fetchall()
    assert sorted(got) == sorted((int(h), d) for h, d in links)
    assert len(got) == 191


def test_memory_tables_from_the_db_match_its_rows_and_the_text_export(real, level1):
    """profile_memory=True's tables of a db export (bytes and ns) fill what the text export's
    memory files fill (MB, KB, us), so the Memory pane and its findings read them: before, a db
    export's memory was not read, and its Overview said to profile with profile_memory=True.
    Checked against the db's own rows, and against the text export of the same job (another run
    of it: the same rows per component and the same peaks, where the runs agree)."""
    for rank in (0, 1):
        db = db_path(real, "level1", rank)
        want = dict((c, (n, a, r)) for c, n, a, r in sq(db, (
            "SELECT s.value, count(*), max(totalAllocated), max(totalReserved) FROM MEMORY_RECORD m "
            "JOIN STRING_IDS s ON s.id = m.component GROUP BY 1")))
        want["APP"] = sq(db, "SELECT count(*), NULL, max(hbm + ddr) FROM NPU_MEM m JOIN STRING_IDS s ON s.id = m.type "
                             "WHERE s.value = 'app'")[0]
        got = {c: (n, a, r) for c, n, a, r in level1.con.execute(
            "SELECT component, count(*), max(allocated_bytes), max(reserved_bytes) FROM memory_record "
            "WHERE rank = ? GROUP BY 1", [rank]).fetchall()}
        assert got == want
        ops = sq(db, "SELECT count(*), count(*) - count(releaseTime), sum(size), sum(duration), "
                     "max(allocationTotalAllocated) / 1048576.0 FROM OP_MEMORY")[0]
        assert level1.con.execute("SELECT count(*), count(*) - count(release_ns), sum(size_bytes), sum(duration_ns), "
                                  "max(alloc_allocated_mb) FROM operator_memory WHERE rank = ?", [rank]).fetchone() == ops
        modules = sq(db, "SELECT e.name, count(*), max(totalReserved) FROM NPU_MODULE_MEM m "
                         "JOIN ENUM_MODULE e ON e.id = m.moduleId GROUP BY 1")
        assert sorted(level1.con.execute("SELECT component, count(*), max(reserved_bytes) FROM npu_module_mem "
                                         "WHERE rank = ? GROUP BY 1", [rank]).fetchall()) == sorted(modules)
    # The text export of the job: its components' rows, and the peaks a run repeats.
    text = load_profile(real / PT / "text" / "level1" / "rank0_ascend_pt")
    per = ("SELECT component, count(*), max(allocated_bytes) FILTER (component IN ('PTA', 'GE')) FROM memory_record "
           "WHERE rank = 0 GROUP BY 1 ORDER BY 1")
    assert level1.con.execute(per).fetchall() == text.con.execute(per).fetchall()
    ops = "SELECT count(*), count(*) - count(release_ns), max(size_bytes) FROM operator_memory WHERE rank = 0"
    assert level1.con.execute(ops).fetchone() == text.con.execute(ops).fetchone() == (184, 24, 147456.5 * 1024)
    device = "SELECT DISTINCT device FROM memory_record WHERE rank = 0"
    assert level1.con.execute(device).fetchall() == text.con.execute(device).fetchall() == [("NPU:0",)]


def test_a_db_memory_row_that_cannot_be_one_is_skipped_not_the_db(real, level1, tmp_path):
    """A byte count past 64 bits, one not given, a time before the clock's zero: that row is
    skipped and counted (an overflow had failed the whole db, its kernels too; a row without its
    reserved had read as 0 bytes). A table whose names are gone is not loaded, and said."""
    job = tmp_path / "job"
    shutil.copytree(real / PT / "db" / "level1", job)
    db = job / "rank0_ascend_pt" / OUT / "ascend_pytorch_profiler_0.db"
    c = sqlite3.connect(db)
    app = "(SELECT id FROM STRING_IDS WHERE value = 'app')"
    first, second = [r for (r,) in c.execute(f"SELECT rowid FROM NPU_MEM WHERE type = {app} ORDER BY rowid LIMIT 2")]
    c.execute(f"UPDATE NPU_MEM SET hbm = 9000000000000000000, ddr = 9000000000000000000 WHERE rowid = {first}")
    c.execute(f"UPDATE NPU_MEM SET hbm = NULL, ddr = NULL WHERE rowid = {second}")
    c.execute("UPDATE MEMORY_RECORD SET timestamp = -1 WHERE rowid = 3")
    modules = c.execute("SELECT count(*) FROM NPU_MODULE_MEM").fetchone()[0]
    c.execute("DROP TABLE ENUM_MODULE")
    c.commit()
    c.close()
    p = load_profile(job)
    rows, skipped, note = p.con.execute("SELECT rows, skipped_rows, note FROM load_log WHERE file = ?",
                                        [str(db)]).fetchone()
    assert skipped == 2 + 1 + modules
    assert note == (f"NPU_MODULE_MEM's {modules:,} rows not loaded: no ENUM_MODULE table to name them; "
                    f"{SKIPPED_ROWS}: MEMORY_RECORD 1, NPU_MEM 2 ({SKIPPED_WHY})")
    kernels = "SELECT count(*), sum(dur_ns) FROM kernels WHERE rank = 0"
    assert p.con.execute(kernels).fetchone() == level1.con.execute(kernels).fetchone()
    memory = ("SELECT count(*) FILTER (component = 'APP'), count(*), min(ts_ns) >= 0, min(reserved_bytes) > 0 "
              "FROM memory_record WHERE rank = 0")
    want = level1.con.execute(memory).fetchone()
    assert p.con.execute(memory).fetchone() == (want[0] - 2, want[1] - 3, True, True)
    assert p.con.execute("SELECT count(*) FROM npu_module_mem WHERE rank = 0").fetchone() == (0,)


def test_comm_tables_from_analysis_db(real, level1):
    adb = db_path(real, "level1", 0, "analysis.db")
    want = sq(adb, "SELECT hccl_op_name, elapse_time, wait_time FROM CommAnalyzerTime")
    got = level1.con.execute("SELECT op_name, elapse_ms, wait_ms FROM comm_ops WHERE rank = 0 "
                             "AND kind = 'collective' AND step = 50").fetchall()
    assert sorted(got) == sorted(want)
    # Bandwidth rows repeat per packet-size bucket; one per op and transport remains.
    pairs = sq(adb, "SELECT DISTINCT hccl_op_name, transport_type FROM CommAnalyzerBandwidth")
    got = level1.con.execute("SELECT op_name, transport FROM comm_bandwidth WHERE rank = 0").fetchall()
    assert sorted(got) == sorted(pairs)
    (n_matrix,), = sq(adb, "SELECT count(*) FROM CommAnalyzerMatrix")
    keys = level1.con.execute("SELECT DISTINCT op_key FROM comm_matrix WHERE rank = 0").fetchall()
    assert level1.con.execute("SELECT count(*) FROM comm_matrix WHERE rank = 0").fetchone() == (n_matrix,)
    assert ("allreduce-top1@17148521525495523210",) in keys


def test_comm_ops_name_the_file_they_came_from(real, monkeypatch, tmp_path):
    """The report's comm ops said 'communication.json' for ops read from analysis.db."""
    from npu_tui.session import open_session

    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))
    for export, source in (("db", "analysis.db"), ("text", "communication.json")):
        session = open_session(real / PT / export / "level1")
        assert session.con.execute("SELECT DISTINCT source FROM comm_op_times").fetchall() == [(source,)]


@pytest.mark.parametrize("msprofs", [True, False], ids=["msprof's columns", "torch_npu's columns"])
def test_msprofs_communication_analyzer_db_beside_a_mindspore_export(real, tmp_path, msprofs):
    """MindSpore copies msprof's communication_analyzer.db into ASCEND_PROFILER_OUTPUT, beside
    ascend_mindspore_profiler_N.db. Its CommAnalyzer tables have no step and no type column: the
    file had failed as "damaged" (a Binder Error), exit 2, and its comm breakdown was lost; and,
    not named analysis.db, its tables were each said to be missing from the profiler db."""

    out = tmp_path / "rank0_ascend_ms" / OUT
    out.mkdir(parents=True)
    shutil.copy(db_path(real, "level1", 0).parents[1] / "profiler_info_0.json", out.parent)
    shutil.copy(db_path(real, "level1", 0), out / "ascend_mindspore_profiler_0.db")
    comm = out / "communication_analyzer.db"
    shutil.copy(db_path(real, "level1", 0, "analysis.db"), comm)
    w = sqlite3.connect(comm)
    for table in ("StepTraceTime", "CommAnalyzerMatrix"):
        w.execute(f"DROP TABLE {table}")
    for table in ("CommAnalyzerTime", "CommAnalyzerBandwidth") if msprofs else ():
        w.execute(f"ALTER TABLE {table} DROP COLUMN step")
        w.execute(f"ALTER TABLE {table} DROP COLUMN type")
    w.commit()
    w.close()
    p = load_profile(tmp_path)
    assert p.ranks == [0] and [(i.severity, i.what) for i in health(p) if i.severity != "info"] == []
    want = sq(db_path(real, "level1", 0, "analysis.db"), "SELECT hccl_op_name, elapse_time, wait_time FROM CommAnalyzerTime")
    got = p.con.execute("SELECT op_name, elapse_ms, wait_ms FROM comm_ops WHERE "
                        + ("step IS NULL AND kind IS NULL" if msprofs else "step = 50 AND kind = 'collective'")).fetchall()
    assert sorted(got) == sorted(want) and len(got) == 4
    pairs = sq(comm, "SELECT DISTINCT hccl_op_name, transport_type FROM CommAnalyzerBandwidth")
    assert sorted(p.con.execute("SELECT op_name, transport FROM comm_bandwidth").fetchall()) == sorted(pairs)


def db_copy(real: Path, tmp_path: Path):
    """The level1 rank 0 db export, and a copy of it in a rank folder of its own to edit."""
    src = db_path(real, "level1", 0)
    db = tmp_path / "rank0_ascend_pt" / OUT / src.name
    db.parent.mkdir(parents=True)
    shutil.copy(src, db)
    shutil.copy(src.parents[1] / "profiler_info_0.json", db.parents[1])
    return src, db


# torch_npu 6.0.RC1's column names (its prof_common_func/constant.py), camelCase from 6.0.RC2 on.
RC1_NAMES = {
    "RANK_DEVICE_MAP": {"rankId": "rank_id", "deviceId": "device_id"},
    "MEMORY_RECORD": {"timestamp": "time_stamp", "totalAllocated": "total_allocated", "totalReserved": "total_reserved",
                      "totalActive": "total_active", "streamPtr": "stream_ptr", "deviceId": "device_id"},
    "OP_MEMORY": {"allocationTime": "allocation_time", "releaseTime": "release_time",
                  "activeReleaseTime": "active_release_time", "activeDuration": "active_duration",
                  "allocationTotalAllocated": "allocation_total_allocated",
                  "allocationTotalReserved": "allocation_total_reserved",
                  "allocationTotalActive": "allocation_total_active", "releaseTotalAllocated": "release_total_allocated",
                  "releaseTotalReserved": "release_total_reserved", "releaseTotalActive": "release_total_active",
                  "streamPtr": "stream_ptr", "deviceId": "device_id"},
}


def test_torch_npu_6_0_rc1s_column_names(real, tmp_path):
    """torch_npu 6.0.RC1 wrote RANK_DEVICE_MAP, MEMORY_RECORD and OP_MEMORY in snake_case: the
    rank map had failed the whole db as damaged (a binder error, 0 kernels), and without it
    every memory row was skipped. They read as the camelCase names do."""
    src, db = db_copy(real, tmp_path)
    w = sqlite3.connect(db)
    if not w.execute("SELECT count(*) FROM sqlite_master WHERE name = 'RANK_DEVICE_MAP'").fetchone()[0]:
        w.execute("CREATE TABLE RANK_DEVICE_MAP (rankId INTEGER, deviceId INTEGER)")
        w.execute("INSERT INTO RANK_DEVICE_MAP VALUES (0, 0)")
    for table, names in RC1_NAMES.items():
        for camel, snake in names.items():
            w.execute(f'ALTER TABLE {table} RENAME COLUMN "{camel}" TO "{snake}"')
    w.commit()
    w.close()
    p, want = load_profile(db.parents[1]), load_profile(src.parents[1])
    for q in ("SELECT count(*), sum(dur_ns) FROM kernels", "SELECT device_id FROM ranks",
              "SELECT count(*), max(allocated_bytes), max(reserved_bytes) FROM memory_record",
              "SELECT count(*), count(release_ns), sum(size_bytes) FROM operator_memory"):
        assert p.con.execute(q).fetchall() == want.con.execute(q).fetchall(), q
    assert p.con.execute("SELECT count(*) FROM operator_memory").fetchone()[0] > 100
    assert p.con.execute("SELECT sum(skipped_rows) FROM load_log").fetchone() == (0,)


def test_newer_msprofs_block_count_is_blocknum(real, tmp_path):
    """Newer msprof names the block count blockNum, and blockDim is another figure there (an
    Ascend 950's threads per block, a STRING_IDS id, "N/A" elsewhere): every kernel had shown
    that id as its block count."""
    src, db = db_copy(real, tmp_path)
    w = sqlite3.connect(db)
    w.execute("ALTER TABLE COMPUTE_TASK_INFO RENAME COLUMN blockDim TO blockNum")
    (na,) = w.execute("SELECT id FROM STRING_IDS WHERE value = 'N/A'").fetchone()
    w.execute(f"ALTER TABLE COMPUTE_TASK_INFO ADD COLUMN blockDim INTEGER DEFAULT {na}")
    w.commit()
    w.close()
    q = "SELECT name, start_ns, block_dim FROM kernels ORDER BY ALL"
    got = load_profile(db.parents[1]).con.execute(q).fetchall()
    assert got == load_profile(src.parents[1]).con.execute(q).fetchall()
    assert len({b for *_, b in got}) > 3


def test_loading_writes_nothing_into_the_profile(real, tmp_path):
    """Rank 0 of level1 comes with -wal/-shm files; sqlite must not touch or add any."""
    root = tmp_path / "rank0_ascend_pt"
    shutil.copytree(real / PT / "db" / "level1" / "rank0_ascend_pt", root)
    for p in sorted(root.rglob("*"), reverse=True):
        os.chmod(p, 0o555 if p.is_dir() else 0o444)
    before = listing(root)
    try:
        p = load_profile(root)
        assert p.con.execute("SELECT count(*) FROM kernels").fetchone() == (191,)
        assert listing(root) == before
    finally:
        for p in [root, *root.rglob("*")]:
            os.chmod(p, 0o755 if p.is_dir() else 0o644)


def _onto_clock(db: Path, t0: int) -> None:
    """The db's device tasks moved to start at ``t0``: the samples' text and db exports are two
    runs 28 minutes apart, and so they pass for one."""
    os.chmod(db, 0o644)
    with sqlite3.connect(db) as w:
        shift = t0 - w.execute("SELECT min(startNs) FROM TASK").fetchone()[0]
        for table in ("TASK", "COMMUNICATION_OP"):
            w.execute(f"UPDATE {table} SET startNs = startNs + ?, endNs = endNs + ?", [shift, shift])


def test_text_and_db_export_side_by_side_give_kernels_once(real, tmp_path):
    """Of one run, the kernels come from kernel_details.csv and the host events from the db."""
    out = tmp_path / "rank0_ascend_pt" / OUT
    out.mkdir(parents=True)
    shutil.copy(real / PT / "text" / "level1" / "rank0_ascend_pt" / OUT / "kernel_details.csv", out)
    t0 = load_profile(out.parent).con.execute("SELECT min(start_ns) FROM kernels").fetchone()[0]
    _onto_clock(Path(shutil.copy(db_path(real, "level1", 0), out)), t0)
    p = load_profile(out.parent)
    assert p.con.execute("SELECT source, count(*) FROM kernels GROUP BY source").fetchall() == [
        ("kernel_details", 191)]
    assert p.con.execute("SELECT count(*) FROM host_events").fetchone()[0] > 0


def test_corrupt_and_truncated_db_give_a_note(real, tmp_path):
    out = tmp_path / "rank0_ascend_pt" / OUT
    out.mkdir(parents=True)
    shutil.copy(db_path(real, "level1", 0, "analysis.db"), out / "good_analysis.db")
    (out / "analysis.db").write_bytes(b"\x00garbage, not a database\n" * 100)
    whole = db_path(real, "level1", 0).read_bytes()
    (out / "ascend_pytorch_profiler_0.db").write_bytes(whole[: len(whole) // 3])
    p = load_profile(out.parent)
    notes = dict(p.con.execute("SELECT file, note FROM load_log WHERE kind = 'sqlite_export'").fetchall())
    bad = {Path(f).name: n for f, n in notes.items() if n}
    assert set(bad) == {"analysis.db", "ascend_pytorch_profiler_0.db"}
    assert all("\n" not in n and "Traceback" not in n for n in bad.values())
    assert p.con.execute("SELECT count(*) FROM kernels").fetchone() == (0,)
    assert p.con.execute("SELECT count(*) FROM step_trace").fetchone() == (1,)


def test_an_empty_db_is_said_to_be_empty(tmp_path):
    # SQLite opens a 0-byte file as a new database: it is the file a killed profiler left.
    out = tmp_path / "rank0_ascend_pt" / OUT
    out.mkdir(parents=True)
    (out / "ascend_pytorch_profiler_0.db").write_bytes(b"")
    with pytest.raises(ProfileError, match="empty"):
        load_profile(out.parent)


def test_msprof_style_db_named_dat_with_versions(tmp_path):
    """An msprof-style export by content, whatever its name, with versions in META_DATA."""
    path = tmp_path / "msprof_20250101.dat"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE STRING_IDS (id INTEGER PRIMARY KEY, value TEXT);
        INSERT INTO STRING_IDS VALUES (1, 'aclnnMatmul_MatMulV3Common_MatMulV3'), (2, 'N/A'),
                                      (3, 'AI_CORE');
        CREATE TABLE TASK (startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER,
                           globalTaskId INTEGER, streamId INTEGER, taskId INTEGER);
        INSERT INTO TASK VALUES (1000000000000000123, 1000000000000005123, 4, 7, 1, 2, 9);
        CREATE TABLE COMPUTE_TASK_INFO (name INTEGER, globalTaskId INTEGER, blockDim INTEGER,
                                        taskType INTEGER, opType INTEGER);
        INSERT INTO COMPUTE_TASK_INFO VALUES (1, 1, 24, 3, 2);
        CREATE TABLE META_DATA (name TEXT, value TEXT);
        INSERT INTO META_DATA VALUES ('CANN_VERSION', '8.0.RC3');
    """)
    con.commit()
    con.close()
    p = load_profile(path)
    assert p.formats == ["db"]
    assert p.con.execute("SELECT device_id, name, type, core, start_ns, dur_ns, block_dim FROM kernels"
                         ).fetchall() == [(4, "aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3",
                                           "AI_CORE", 1000000000000000123, 5000, 24)]
    assert p.con.execute("SELECT device_id, cann_version FROM ranks").fetchall() == [(4, "8.0.RC3")]


@pytest.mark.parametrize("name", ["ascend_pytorch_profiler_0.db", "ascend_pytorch_profiler_0.dat"])
def test_rows_only_in_the_write_ahead_log_are_read_and_the_log_is_part_of_the_key(real, tmp_path, monkeypatch, name):
    """A db whose writer has not checkpointed (still open, or killed) holds its last commits only
    in the -wal beside it: read without the log, the report was complete over stale rows. (A SQLite
    file loads by its header whatever its name: its log was part of the key only beside a .db.)"""
    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))
    work = tmp_path / "work.db"
    shutil.copy(db_path(real, "level1", 0), work)
    writer = sqlite3.connect(work)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    before = writer.execute("SELECT count(*) FROM COMPUTE_TASK_INFO").fetchone()[0]
    writer.execute("DELETE FROM COMPUTE_TASK_INFO WHERE rowid % 2 = 0")
    writer.commit()
    after = writer.execute("SELECT count(*) FROM COMPUTE_TASK_INFO").fetchone()[0]
    assert 0 < after < before
    (comm,) = writer.execute("SELECT count(*) FROM COMMUNICATION_OP").fetchone()
    out = tmp_path / "rank0_ascend_pt" / OUT
    out.mkdir(parents=True)
    shutil.copy(work, out / name)  # as the writer left them on disk
    shutil.copy(f"{work}-wal", out / f"{name}-wal")
    assert sq(out / name, "SELECT count(*) FROM COMPUTE_TASK_INFO") == [(before,)]
    before_listing = listing(out.parent)

    def compute_kernels():
        p = load_profile(out.parent, cache=True)
        p.save_cache()
        n = p.con.execute("SELECT count(*) FROM kernels").fetchone()[0]
        p.con.close()
        return n - comm  # a kernel per compute task, and one per communication op

    assert compute_kernels() == after
    assert listing(out.parent) == before_listing  # nothing written beside the db
    # The writer commits again into the log: the db file itself is unchanged, the cache is not used.
    writer.execute("DELETE FROM COMPUTE_TASK_INFO WHERE rowid % 3 = 0")
    writer.commit()
    fewer = writer.execute("SELECT count(*) FROM COMPUTE_TASK_INFO").fetchone()[0]
    shutil.copy(f"{work}-wal", out / f"{name}-wal")
    writer.close()
    assert compute_kernels() == fewer < after


def test_a_rank_without_its_analysis_db_is_said(real, tmp_path):
    """analysis.db (steps, communication) is read by the same loader as the profiler db: a rank
    without it lost its communication tables, and no health line said so."""
    from npu_tui.profile.health import health

    job = tmp_path / "job"
    shutil.copytree(real / PT / "db" / "level1", job)
    (job / "rank0_ascend_pt" / OUT / "analysis.db").unlink()
    said = [(i.severity, i.rank, i.what) for i in health(load_profile(job)) if "partial rank set" not in i.what]
    assert said == [("warning", 0, "no analysis.db, which 1 other rank has: its figures that need it are missing")]
    # Rank 1's db lacks OVERLAP_ANALYSIS, which MindStudio Insight added to rank 0's: not the profiler's.
    assert not [i for i in health(load_profile(real / PT / "db" / "level1")) if "no " in i.what]


@pytest.mark.parametrize("db, table, empty", [
    ("analysis.db", "CommAnalyzerTime", "comm_ops"),
    ("ascend_pytorch_profiler_0.db", "CONNECTION_IDS", "flows"),
])
def test_a_table_the_other_ranks_exports_hold_is_said_where_missing(real, tmp_path, db, table, empty):
    """A table dropped from one rank's export (a copy or an export stopped part-way) had cost its
    figures with nothing said, where a missing file of the text export is said."""
    from npu_tui.profile.health import health

    job = tmp_path / "job"
    shutil.copytree(real / PT / "db" / "level1", job)
    c = sqlite3.connect(job / "rank0_ascend_pt" / OUT / db)
    c.execute(f"DROP TABLE {table}")
    c.commit()
    c.close()
    p = load_profile(job)
    assert p.con.execute(f"SELECT count(*) FROM {empty} WHERE rank = 0").fetchone() == (0,)
    (item,) = [i for i in health(p) if table in i.what]
    assert (item.severity, item.rank, item.file) == ("warning", 0, str(job / "rank0_ascend_pt" / OUT / db))
    assert item.what == f"{db} holds no {table} table; the export of 1 other rank does: its figures that need it are missing"


HALF_WRITTEN = """
import os, sqlite3, sys
w = sqlite3.connect(sys.argv[1], isolation_level=None)
w.execute("PRAGMA journal_mode = DELETE")
w.execute("PRAGMA cache_size = 1")  # the transaction's pages spill into the db file itself
w.execute("BEGIN")
w.execute("DELETE FROM COMPUTE_TASK_INFO")
w.execute("DELETE FROM TASK")
w.execute("UPDATE STRING_IDS SET value = 'x'")
os._exit(0)  # killed mid-transaction: the db holds its pages, the journal the committed ones
"""


def test_a_db_left_mid_transaction_is_read_as_committed(real, tmp_path, monkeypatch):
    """A writer killed (or still at work) inside a transaction leaves overwritten pages in the db
    and the committed ones in its -journal: read alone, the db gave 4 of rank 0's 191 kernels in a
    report that looked complete."""
    import subprocess
    import sys

    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))
    work = tmp_path / "work.db"
    shutil.copy(db_path(real, "level1", 0), work)
    os.chmod(work, 0o644)
    subprocess.run([sys.executable, "-c", HALF_WRITTEN, str(work)], check=True)
    assert Path(f"{work}-journal").stat().st_size > 0
    out = tmp_path / "rank0_ascend_pt" / OUT
    out.mkdir(parents=True)
    shutil.copy(work, out / "ascend_pytorch_profiler_0.db")
    shutil.copy(f"{work}-journal", out / "ascend_pytorch_profiler_0.db-journal")
    before_listing = listing(out.parent)

    def kernels(path):
        p = load_profile(path, cache=True)
        p.save_cache()
        got = p.con.execute("SELECT count(*), count(DISTINCT name) FROM kernels").fetchone()
        p.con.close()
        return got

    intact = tmp_path / "intact" / "rank0_ascend_pt" / OUT
    intact.mkdir(parents=True)
    shutil.copy(db_path(real, "level1", 0), intact / "ascend_pytorch_profiler_0.db")
    want = kernels(intact.parent)
    assert want[0] == len(text_kernel_rows(real, "level1", 0)) and want[1] > 1
    assert kernels(out.parent) == want
    assert listing(out.parent) == before_listing  # rolled back in a copy, nothing written here
    # The writer's next commit clears its journal: the db is read as it is now, not from the cache.
    Path(out / "ascend_pytorch_profiler_0.db-journal").unlink()
    assert kernels(out.parent)[1] == 1  # every name 'x'


def test_a_journal_gone_while_copied_reads_the_db_committed(real, tmp_path, monkeypatch):
    """A rollback journal is deleted at its writer's commit: gone between being seen and being
    copied, the db is whole and is read as it is, not failed as 'No such file'."""
    from npu_tui.profile.sources import sqlite_export

    out = tmp_path / "rank0_ascend_pt" / OUT
    out.mkdir(parents=True)
    db = out / "ascend_pytorch_profiler_0.db"
    shutil.copy(db_path(real, "level1", 0), db)
    journal = Path(f"{db}-journal")
    journal.write_bytes(b"\0" * 512)
    real_copy = shutil.copyfile

    def commit_meanwhile(src, dst, *a, **k):
        done = real_copy(src, dst, *a, **k)
        if Path(src) == db and journal.exists():
            journal.unlink()  # the writer commits between the two copies
        return done

    monkeypatch.setattr(sqlite_export.shutil, "copyfile", commit_meanwhile)
    p = load_profile(out.parent)
    assert p.con.execute("SELECT count(*) FROM kernels").fetchone()[0] == len(text_kernel_rows(real, "level1", 0))
    assert p.con.execute("SELECT note FROM load_log WHERE note <> '' AND kind <> 'discovery'").fetchall() == []


def _writable_rank_db(real, tmp_path, monkeypatch) -> Path:
    """A writable copy of level1 rank 0's db export, alone in a rank folder; the cache kept apart."""
    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "rank0_ascend_pt" / OUT
    out.mkdir(parents=True)
    db = out / "ascend_pytorch_profiler_0.db"
    shutil.copy(db_path(real, "level1", 0), db)
    os.chmod(db, 0o644)
    return db


@pytest.mark.parametrize("drop, complete, says", [
    (["STRING_IDS"], False, "tables missing: STRING_IDS; its device tasks and host calls ({n:,} rows) were not loaded"),
    (["TASK"], False, "tables missing: TASK; its device tasks ({n:,} rows) were not loaded"),
    # No device tables at all: collected without the NPU's activity; nothing is damaged.
    (["TASK", "COMPUTE_TASK_INFO", "COMMUNICATION_OP", "COMMUNICATION_TASK_INFO"], True, "no kernels"),
    # Its comm tasks are there: the device was profiled, and its task tables were lost.
    (["TASK", "COMPUTE_TASK_INFO", "COMMUNICATION_OP"], False,
     "tables missing: TASK; its device tasks (how many unknown) were not loaded"),
], ids=["no-string-ids", "no-task", "no-device-tables", "only-comm-tasks-left"])
def test_a_db_without_its_task_tables_says_which_and_why(real, tmp_path, monkeypatch, capsys, drop, complete, says):
    """It loaded 0 kernels as a complete run, with advice meant for the text export. The rows lost are
    counted where the file holds them: a kernel per COMPUTE_TASK_INFO and COMMUNICATION_OP row (the
    kernels the whole file loads), a host call per PYTORCH_API and CANN_API row."""
    from npu_tui.cli import main

    db = _writable_rank_db(real, tmp_path, monkeypatch)
    whole = load_profile(db.parents[1], cache=False).con
    counts = {"kernels": "SELECT count(*) FROM kernels", "host calls": "SELECT count(*) FROM host_events"}
    with sqlite3.connect(db) as w:
        for t in drop:
            w.execute(f"DROP TABLE {t}")
    left = ["kernels"] if "COMPUTE_TASK_INFO" not in drop else []
    n = sum(whole.execute(counts[k]).fetchone()[0] for k in left + (["host calls"] if "STRING_IDS" in drop else []))
    says = says.format(n=n)
    code = main(["report", str(db.parents[1]), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["complete"] is complete and code == (0 if complete else 2)
    (item,) = [h for h in doc["health"] if says in h["what"]]
    assert item["severity"] == ("warning" if complete else "error") and item["rank"] == 0
    if complete:
        assert "ProfilerActivity.NPU" in item["fix"]
    # What the file holds besides its tasks still loads: the overlap lanes give the step.
    assert sum(r["kernel_count"] for r in doc["ranks"]) == 0
    assert doc["steps"][0]["source"] == "overlap_lanes"


@pytest.mark.parametrize("table, says", [
    ("STRING_IDS", "tables empty: STRING_IDS; its device tasks and host calls ({n:,} rows) were not loaded"),
    # (its comm ops do not go through TASK: they load)
    ("TASK", "tables empty: TASK; its compute tasks (in COMPUTE_TASK_INFO) were not loaded; rows skipped, by table: "
             "kernels (TASK, COMMUNICATION_OP) {n:,} "),
])
def test_a_db_whose_task_or_names_table_is_emptied_is_incomplete(real, tmp_path, monkeypatch, capsys, table, says):
    """Emptied (a writer stopped before filling it), it lost the kernels as rows 'skipped', and the
    run passed for complete with exit 0, where the table dropped made it incomplete."""
    from npu_tui.cli import main

    db = _writable_rank_db(real, tmp_path, monkeypatch)
    whole = load_profile(db.parents[1], cache=False).con
    n, comm = whole.execute("SELECT count(*), count(*) FILTER (WHERE core = 'HCCL') FROM kernels").fetchone()
    if table == "STRING_IDS":
        n += whole.execute("SELECT count(*) FROM host_events").fetchone()[0]
    else:
        n -= comm
    with sqlite3.connect(db) as w:
        w.execute(f"DELETE FROM {table}")
    assert main(["report", str(db.parents[1]), "--format", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["complete"] is False
    (item,) = [h for h in doc["health"] if f"tables empty: {table}" in h["what"]]
    assert item["severity"] == "error" and says.format(n=n) in item["what"]
    assert sum(r["kernel_count"] for r in doc["ranks"]) == (0 if table == "STRING_IDS" else comm)
    # A run whose device was not profiled has the table empty too, and no rows going through it.
    with sqlite3.connect(db) as w:
        for t in ("COMPUTE_TASK_INFO", "COMMUNICATION_OP", "COMMUNICATION_TASK_INFO", "TASK"):
            w.execute(f"DELETE FROM {t}")
    main(["report", str(db.parents[1]), "--format", "json"])
    assert not [h for h in json.loads(capsys.readouterr().out)["health"] if "tables empty: TASK" in h["what"]]


def test_a_task_belongs_to_the_step_that_launched_it(real, tmp_path, monkeypatch):
    """STEP_TIME is the host's ProfilerStep range, and the device runs behind the host: where the
    step ends soon after its last launch (no sync at its end), 14 of its 191 kernels (16 ms) fell
    outside it, lost from the step (its Vector time 3.2 ms for 6.0). Each belongs to the step whose
    range holds its launch (its CANN_API call), as torch_npu's text export puts it."""
    db = _writable_rank_db(real, tmp_path, monkeypatch)
    steps = "SELECT step, count(*) FROM kernels GROUP BY step"
    whole = load_profile(db.parents[1], cache=False).con.execute(steps).fetchall()
    with sqlite3.connect(db) as w:
        (first, last_launch, last_task), = w.execute(
            "SELECT (SELECT min(startNs) FROM STEP_TIME), (SELECT max(endNs) FROM CANN_API "
            "WHERE connectionId IN (SELECT connectionId FROM TASK)), (SELECT max(endNs) FROM TASK)").fetchall()
        assert last_task > last_launch + 10**6  # the device ends more than 1 ms after the host's last launch
        w.execute("UPDATE STEP_TIME SET endNs = ?", [last_launch + 1000])
    assert whole == [(50, 191)] and first is not None
    assert load_profile(db.parents[1], cache=False).con.execute(steps).fetchall() == whole


# TASK rows of kernel types (KERNEL_AIVEC, MIX_AIV...) are named only in COMPUTE_TASK_INFO.
LOST_COMPUTE = ("SELECT count(*) FROM TASK t JOIN STRING_IDS s ON s.id = t.taskType "
                "WHERE s.value LIKE 'KERNEL^_%' ESCAPE '^' OR s.value LIKE 'MIX^_%' ESCAPE '^'")


@pytest.mark.parametrize("table, lost, kept, says", [
    ("COMPUTE_TASK_INFO", LOST_COMPUTE, "SELECT count(*) FROM COMMUNICATION_OP",
     "its compute tasks (in TASK) were not loaded"),
    ("COMMUNICATION_OP", "SELECT count(*) FROM COMMUNICATION_OP", "SELECT count(*) FROM COMPUTE_TASK_INFO",
     "its communication ops (their tasks are in COMMUNICATION_TASK_INFO) were not loaded"),
], ids=["compute", "communication"])
@pytest.mark.parametrize("how", ["missing", "empty"])
def test_a_db_without_one_task_table_says_what_it_lost(real, tmp_path, monkeypatch, capsys, table, lost, kept, says,
                                                      how):
    """The rank kept the other kind of device task and lost this one, as a complete run with exit 0
    (without its comm ops, every comm figure read 0 and no comm finding could fire); the table there
    but emptied, the same."""
    from npu_tui.cli import main

    db = _writable_rank_db(real, tmp_path, monkeypatch)
    with sqlite3.connect(db) as w:
        gone, left = w.execute(lost).fetchone()[0], w.execute(kept).fetchone()[0]
        w.execute(f"DROP TABLE {table}" if how == "missing" else f"DELETE FROM {table}")
    assert gone and left
    assert main(["report", str(db.parents[1]), "--format", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["complete"] is False
    (item,) = [h for h in doc["health"] if table in h["what"]]
    assert (item["severity"], item["rank"]) == ("error", 0)
    assert item["what"].endswith(f"tables {how}: {table}; {says}")
    assert sum(r["kernel_count"] for r in doc["ranks"]) == left


def _loaded(db: Path):
    p = load_profile(db.parents[1], cache=False)
    skipped = dict(p.con.execute("SELECT note, skipped_rows FROM load_log WHERE kind = 'sqlite_export'").fetchall())
    return p.con, sum(skipped.values())


@pytest.mark.parametrize("damage, kernels, host", [
    # A compute task whose TASK row is gone (its globalTaskId NULL there): dropped by the join, uncounted.
    ("UPDATE TASK SET globalTaskId = NULL WHERE globalTaskId IN (SELECT globalTaskId FROM COMPUTE_TASK_INFO "
     "LIMIT 10)", 10, 0),
    # Host calls whose name is in no STRING_IDS row: kept without a name, uncounted.
    ("UPDATE PYTORCH_API SET name = name + 10000000 WHERE rowid IN (SELECT rowid FROM PYTORCH_API LIMIT 100)", 0, 100),
], ids=["task-gone", "name-gone"])
def test_a_db_row_that_points_nowhere_is_skipped_and_counted(real, tmp_path, monkeypatch, damage, kernels, host):
    db = _writable_rank_db(real, tmp_path, monkeypatch)
    whole, _ = _loaded(db)
    want = [whole.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("kernels", "host_events")]
    with sqlite3.connect(db) as w:
        w.execute(damage)
    con, skipped = _loaded(db)
    assert [con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("kernels", "host_events")] == \
        [want[0] - kernels, want[1] - host]
    assert skipped == kernels + host
    assert not con.execute("SELECT count(*) FROM host_events WHERE name IS NULL").fetchone()[0]


def test_a_db_without_task_connection_ids_loads_its_kernels(real, tmp_path, monkeypatch):
    """connectionId is one of TASK's optional columns: without it the whole file failed on a cast
    ("VARCHAR -> NULL"), where only the flows need it."""
    db = _writable_rank_db(real, tmp_path, monkeypatch)
    whole, _ = _loaded(db)
    with sqlite3.connect(db) as w:
        w.execute("ALTER TABLE TASK DROP COLUMN connectionId")
    con, _ = _loaded(db)
    assert con.execute("SELECT count(*), sum(dur_ns) FROM kernels").fetchone() == \
        whole.execute("SELECT count(*), sum(dur_ns) FROM kernels").fetchone()


def test_string_ids_given_twice_join_each_row_once(real, tmp_path, monkeypatch):
    """STRING_IDS copied without its key, every id twice: every kernel and host call loaded twice
    (and a skipped count below zero)."""
    db = _writable_rank_db(real, tmp_path, monkeypatch)
    whole, _ = _loaded(db)
    with sqlite3.connect(db) as w:
        w.executescript("CREATE TABLE s2 AS SELECT * FROM STRING_IDS; DROP TABLE STRING_IDS; "
                        "CREATE TABLE STRING_IDS AS SELECT * FROM s2 UNION ALL SELECT * FROM s2; DROP TABLE s2;")
    con, skipped = _loaded(db)
    for t in ("kernels", "host_events"):
        assert con.execute(f"SELECT count(*) FROM {t}").fetchone() == whole.execute(f"SELECT count(*) FROM {t}").fetchone()
    assert skipped == 0


def test_a_task_given_twice_is_one_kernel(real, tmp_path, monkeypatch):
    """TASK has no key: rows of a task given again (a db merged by hand) each made a kernel, unsaid;
    with a table missing a column besides, the count of them was lost."""
    db = _writable_rank_db(real, tmp_path, monkeypatch)
    whole, _ = _loaded(db)
    with sqlite3.connect(db) as w:
        w.execute("INSERT INTO TASK SELECT * FROM TASK WHERE globalTaskId IN "
                  "(SELECT globalTaskId FROM COMPUTE_TASK_INFO LIMIT 5)")
    con, skipped = _loaded(db)
    q = "SELECT name, start_ns, dur_ns FROM kernels ORDER BY ALL"
    assert con.execute(q).fetchall() == whole.execute(q).fetchall()
    assert skipped == 5
    assert "5 TASK rows of a task given before (its globalTaskId): read once" in con.execute(
        "SELECT note FROM load_log WHERE file LIKE '%.db'").fetchone()[0]
    with sqlite3.connect(db) as w:  # a table without a column its rows need: its rows lost, counted too
        lanes = w.execute("SELECT count(*) FROM OVERLAP_ANALYSIS").fetchone()[0]
        w.execute("ALTER TABLE OVERLAP_ANALYSIS DROP COLUMN startNs")
    con, skipped = _loaded(db)
    assert skipped == 5 + lanes
    assert f"the {lanes:,} rows of OVERLAP_ANALYSIS were not loaded" in con.execute(
        "SELECT note FROM load_log WHERE file LIKE '%.db'").fetchone()[0]


def test_a_db_whose_log_changes_while_it_is_copied_is_said_still_being_written(real, tmp_path, monkeypatch):
    from npu_tui.profile.sources import sqlite_export

    out = tmp_path / "rank0_ascend_pt" / OUT
    out.mkdir(parents=True)
    db = out / "ascend_pytorch_profiler_0.db"
    shutil.copy(db_path(real, "level1", 0), db)
    Path(f"{db}-wal").write_bytes(b"\0" * 32)
    real_copy = shutil.copyfile

    def copy_as_the_writer_goes_on(src, dst, *a, **k):
        done = real_copy(src, dst, *a, **k)
        if str(src).endswith("-wal"):
            with open(src, "ab") as f:  # the writer commits again meanwhile
                f.write(b"\0" * 32)
        return done

    monkeypatch.setattr(sqlite_export.shutil, "copyfile", copy_as_the_writer_goes_on)
    with pytest.raises(ProfileError, match="still being written"):
        load_profile(out.parent)


@pytest.mark.parametrize("value", [1e29, float("inf"), -5.0, "garbage"])
def test_a_db_figure_that_cannot_be_an_amount_skips_its_row_and_is_counted(real, tmp_path, value):
    """As in communication.json: analysis.db's communication tables kept such values (an absurd
    size summed on, a negative time), or made them NULL without a count."""
    out = tmp_path / "rank0_ascend_pt" / OUT
    out.mkdir(parents=True)
    db = out / "analysis.db"
    shutil.copy(db_path(real, "level1", 0, "analysis.db"), db)
    os.chmod(db, 0o644)
    with sqlite3.connect(db) as w:
        ops = w.execute("SELECT count(*) FROM CommAnalyzerTime").fetchone()[0]
        w.execute("UPDATE CommAnalyzerTime SET elapse_time = ? WHERE rowid = (SELECT min(rowid) FROM CommAnalyzerTime)",
                  [value])
        links = w.execute("SELECT count(*) FROM CommAnalyzerMatrix").fetchone()[0]
        w.execute("UPDATE CommAnalyzerMatrix SET transit_size = ? WHERE rowid = (SELECT min(rowid) FROM CommAnalyzerMatrix)",
                  [value])
    p = load_profile(out.parent)
    assert p.con.execute("SELECT count(*) FROM comm_ops").fetchone() == (ops - 1,)
    assert p.con.execute("SELECT count(*) FROM comm_matrix").fetchone() == (links - 1,)
    assert p.con.execute("SELECT skipped_rows FROM load_log WHERE file LIKE '%analysis.db'").fetchone() == (2,)


def test_a_step_figure_of_text_skips_its_step_row(real, tmp_path):
    """StepTraceTime's Free of "12us" was kept as a step without its Free, uncounted: skipped and
    counted, as step_trace_time.csv's row is (the step is then measured from the lanes)."""
    out = tmp_path / "rank0_ascend_pt" / OUT
    out.mkdir(parents=True)
    db = out / "analysis.db"
    shutil.copy(db_path(real, "level1", 0, "analysis.db"), db)
    os.chmod(db, 0o644)
    with sqlite3.connect(db) as w:
        w.execute("UPDATE StepTraceTime SET free = '12us'")
    p = load_profile(out.parent)
    assert p.con.execute("SELECT count(*) FROM step_trace").fetchone() == (0,)
    assert p.con.execute("SELECT skipped_rows FROM load_log WHERE file LIKE '%analysis.db'").fetchone() == (1,)


def test_a_db_of_another_run_gives_nothing_where_the_text_export_has_no_trace(real, tmp_path):
    """Without trace_view.json beside the text export, another run's db filled its host events,
    flows and lanes beside the text's kernels (two runs mixed), and then said it lost its comm
    ops where COMMUNICATION_OP was dropped: it gives nothing, and says it is another run."""
    rank = shutil.copytree(real / PT / "text" / "level1" / "rank0_ascend_pt", tmp_path / "rank0_ascend_pt")
    (rank / OUT / "trace_view.json").unlink()
    text = load_profile(rank)
    db = Path(shutil.copy(db_path(real, "level1", 0), rank / OUT))
    os.chmod(db, 0o644)
    with sqlite3.connect(db) as w:
        w.execute("DROP TABLE COMMUNICATION_OP")
    p = load_profile(rank)
    (rows, note), = p.con.execute("SELECT rows, note FROM load_log WHERE parse_filename(file) = ?", [db.name]).fetchall()
    assert rows == 0 and note.startswith("db export of another run than the files beside it")
    for table in ("kernels", "host_events", "flows", "overlap_lanes"):
        q = f"SELECT * FROM {table} ORDER BY ALL"
        assert p.con.execute(q).fetchall() == text.con.execute(q).fetchall(), table


@pytest.mark.parametrize("same_run", [True, False], ids=["same-run", "another-run"])
def test_a_db_beside_the_text_export_is_said_to_be_left_for_it(real, tmp_path, same_run):
    """Exported as text and db both, the text files come first and fill every table; the dbs then
    give nothing, which was logged as 0 rows without a word: said, never an error, and the figures
    are the text export's alone. The samples' text and db exports are two runs, 28 minutes apart
    (their device tasks do not overlap): that is a warning. Moved onto the text's clock, the same
    run's db is left for it by design (info)."""
    from npu_tui.profile.health import failed, health

    both = shutil.copytree(real / PT / "text" / "level1", tmp_path / "level1")
    text = load_profile(both)
    for rank in (0, 1):
        for db in (real / PT / "db" / "level1" / f"rank{rank}_ascend_pt" / OUT).glob("*.db"):
            copy = Path(shutil.copy(db, both / f"rank{rank}_ascend_pt" / OUT))
            os.chmod(copy, 0o644)
            if same_run and copy.name.startswith("ascend_pytorch_profiler"):
                _onto_clock(copy, text.con.execute("SELECT min(start_ns) FROM kernels WHERE rank = ?",
                                                   [rank]).fetchone()[0])
    p = load_profile(both)
    logged = p.con.execute("SELECT parse_filename(file), rows, note FROM load_log WHERE kind = 'sqlite_export' "
                           "ORDER BY ALL").fetchall()
    assert len(logged) == 4 and all(rows == 0 for _, rows, _ in logged)
    # analysis.db holds no device tasks to tell the run by.
    assert [n for f, _, n in logged if f == "analysis.db"] == 2 * [
        "db export beside files that gave the step_trace, comm_ops, comm_bandwidth, comm_matrix: not loaded"]
    said = {f: n for f, _, n in logged if f == "ascend_pytorch_profiler_0.db"}["ascend_pytorch_profiler_0.db"]
    if same_run:
        assert said == ("db export of the same run as the files beside it, which gave the kernels, flows, "
                        "overlap_lanes, host_events, memory_record, operator_memory, npu_module_mem: not loaded")
    else:
        assert said.startswith("db export of another run than the files beside it (its device tasks start 28.")
    items = [h for h in health(p) if h.file.endswith(".db")]
    assert sorted(h.severity for h in items) == ["info", "info"] + 2 * ["info" if same_run else "warning"]
    assert not failed(health(p))
    for table in ("kernels", "host_events", "step_trace", "comm_ops"):  # (the db tells the device of steps)
        q = f"SELECT * EXCLUDE (device_id) FROM {table} ORDER BY ALL" if table == "step_trace" else \
            f"SELECT * FROM {table} ORDER BY ALL"
        assert p.con.execute(q).fetchall() == text.con.execute(q).fetchall(), table


@pytest.mark.parametrize("beside", [False, True], ids=["db alone", "json beside"])
def test_a_db_copied_alone_names_its_groups_from_its_meta_data(real, tmp_path, beside):
    """torch_npu copies profiler_metadata.json into the db's META_DATA: a rank folder holding the db
    alone still tells which of the job's ranks a group's numbers are (here, a group of ranks 0 and
    8-14, so its local 1 is rank 8); beside the json, the groups are read once."""
    from npu_tui.profile.sources.profiler_metadata import group_hash
    from npu_tui.session import open_session

    src, db = db_copy(real, tmp_path)
    shutil.copy(src.with_name("analysis.db"), db.with_name("analysis.db"))
    info = {"comm_world": {"group_name": "world", "group_rank": 0, "global_ranks": [0, *range(8, 15)]}}
    with sqlite3.connect(db.with_name("analysis.db")) as w:
        w.execute("UPDATE CommAnalyzerMatrix SET group_name = ?", [group_hash("comm_world")])
    with sqlite3.connect(db) as w:
        w.execute("INSERT INTO META_DATA VALUES ('parallel_group_info', ?)", [json.dumps(info)])
    if beside:
        (db.parents[1] / "profiler_metadata.json").write_text(json.dumps({"parallel_group_info": info}))
    s = open_session(tmp_path / "rank0_ascend_pt", cache=False)
    assert s.con.execute("SELECT local_rank, global_rank, label FROM comm_groups ORDER BY local_rank").fetchall() == [
        (i, g, "world") for i, g in enumerate([0, *range(8, 15)])]
    links = s.con.execute("SELECT DISTINCT src_rank, dst_rank, comm_group FROM comm_links ORDER BY ALL").fetchall()
    assert links == [(0, g, "world") for g in [0, *range(8, 15)]]
    (item,) = [i for i in s.health if "partial rank set" in i.what]
    assert "links to ranks 8–14, not loaded" in item.what


def test_a_db_whose_meta_data_groups_do_not_parse_says_so(real, tmp_path):
    src, db = db_copy(real, tmp_path)
    with sqlite3.connect(db) as w:
        w.execute("INSERT INTO META_DATA VALUES ('parallel_group_info', '{\"comm_world\": {')")
    p = load_profile(tmp_path / "rank0_ascend_pt")
    (note,) = [n for (n,) in p.con.execute("SELECT note FROM load_log WHERE kind = 'sqlite_export'").fetchall() if n]
    assert note == "META_DATA's parallel_group_info is not valid JSON: the groups' ranks are unknown"
    assert p.con.execute("SELECT count(*) FROM kernels").fetchone()[0] > 0


def _report(db: Path, capsys):
    from npu_tui.cli import main

    code = main(["report", str(db.parents[1]), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    # (the copy is alone in its folder: its job's other ranks, and its profiler_info, are not there)
    return code, doc, [h for h in doc["health"] if not ("partial rank set" in h["what"] or "no profiler_info" in h["what"])]


def _leaf_of(db: Path, table: str) -> int:
    """A leaf page of ``table`` (the rightmost one under its root), numbered from 1."""
    data = db.read_bytes()
    size = int.from_bytes(data[16:18], "big")
    page = sq(db, f"SELECT rootpage FROM sqlite_master WHERE name = '{table}'")[0][0]
    while True:
        at = (page - 1) * size + (100 if page == 1 else 0)
        if data[at] == 0x0D:  # a table's leaf; 0x05 an interior page, its rightmost child at +8
            return page
        page = int.from_bytes(data[at + 8:at + 12], "big")


@pytest.mark.parametrize("damage", ["cut inside its last page", "half a page of TASK zeroed",
                                    "half a page of TASK zeroed, an old sqlite"])
def test_a_db_cut_or_torn_inside_a_page_makes_the_run_incomplete(real, tmp_path, monkeypatch, capsys, damage):
    """sqlite reads the bytes a cut or a torn write left as zeros as rows of NULLs, or as none: the
    rows lost there (kernels, host calls) had gone uncounted, under a complete report with exit 0.
    The file's header counts its pages, and sqlite's own check finds the broken ones (one older
    than 3.33 checks the whole file, not a table: once)."""
    from npu_tui.profile.sources import sqlite_export

    db = _writable_rank_db(real, tmp_path, monkeypatch)
    if damage.endswith("old sqlite"):
        monkeypatch.setattr(sqlite_export.sqlite3, "sqlite_version_info", (3, 31, 1))
    whole = load_profile(db.parents[1], cache=False).con
    counts = "SELECT (SELECT count(*) FROM kernels), (SELECT count(*) FROM host_events)"
    size = int.from_bytes(db.read_bytes()[16:18], "big")
    data = bytearray(db.read_bytes())
    if damage.startswith("cut"):
        del data[-size // 2:]
        says = f"was cut short: it holds {len(data):,} of the {len(data) + size // 2:,} bytes its header counts"
    else:
        at = (_leaf_of(db, "TASK") - 1) * size
        data[at + size // 2:at + size] = bytes(size // 2)
        says = f"SQLite's check finds broken pages in {'its tables' if 'old' in damage else 'TASK'} (On tree page"
    db.write_bytes(bytes(data))
    code, doc, items = _report(db, capsys)
    assert (code, doc["complete"]) == (2, False)
    (item,) = items
    assert item["severity"] == "error" and says in item["what"] and "how many unknown" in item["what"]
    got = load_profile(db.parents[1], cache=False).con.execute(counts).fetchone()
    assert got < whole.execute(counts).fetchone()  # rows lost indeed, kernels first for the torn page


def test_db_rows_that_cannot_be_rows_are_skipped_and_counted_by_table(real, tmp_path, monkeypatch, capsys):
    """Host calls without a start or ending before it, overlap lanes ending before they start, a step whose end is text
    and a step-trace row whose computing is text were dropped or blanked with nothing counted; a
    kernel skipped kept its flow (an arrow to no kernel)."""
    db = _writable_rank_db(real, tmp_path, monkeypatch)
    analysis = db.with_name("analysis.db")
    shutil.copy(db_path(real, "level1", 0, "analysis.db"), analysis)
    os.chmod(analysis, 0o644)
    whole = load_profile(db.parents[1], cache=False).con
    with sqlite3.connect(db) as w:
        w.execute("UPDATE PYTORCH_API SET startNs = NULL WHERE rowid IN (SELECT rowid FROM PYTORCH_API LIMIT 10)")
        w.execute("UPDATE CANN_API SET endNs = startNs - 1 WHERE rowid IN (SELECT rowid FROM CANN_API LIMIT 2)")
        w.execute("UPDATE OVERLAP_ANALYSIS SET endNs = startNs - 1 WHERE rowid IN (SELECT rowid FROM OVERLAP_ANALYSIS LIMIT 5)")
        w.execute("UPDATE STEP_TIME SET endNs = 'abc'")
        # three kernels with a flow each, their end before their start
        w.execute("UPDATE TASK SET endNs = startNs - 1 WHERE rowid IN (SELECT t.rowid FROM TASK t JOIN COMPUTE_TASK_INFO c "
                  "USING (globalTaskId) WHERE t.connectionId IN (SELECT connectionId FROM CONNECTION_IDS) LIMIT 3)")
    with sqlite3.connect(analysis) as w:
        w.execute("UPDATE StepTraceTime SET computing = 'abc'")
    p = load_profile(db.parents[1], cache=False)
    logged = {Path(f).name: (r, s, n) for f, r, s, n in
              p.con.execute("SELECT file, rows, skipped_rows, note FROM load_log").fetchall()}
    assert logged[db.name][1:] == (1 + 3 + 5 + 10 + 2, f"{SKIPPED_ROWS}: STEP_TIME 1, kernels (TASK, COMMUNICATION_OP) 3, OVERLAP_ANALYSIS 5, "
                                                       f"PYTORCH_API 10, CANN_API 2 ({SKIPPED_WHY})")
    assert logged["analysis.db"][1:] == (1, f"{SKIPPED_ROWS}: StepTraceTime 1 ({SKIPPED_WHY})")
    for table, less in (("kernels", 3), ("host_events", 12), ("overlap_lanes", 5), ("flows", 3), ("step_trace", 1)):
        sql = f"SELECT count(*) FROM {table}"
        assert p.con.execute(sql).fetchone()[0] == whole.execute(sql).fetchone()[0] - less, table
    assert p.con.execute("SELECT count(*) FROM flows f WHERE NOT EXISTS (SELECT 1 FROM kernels k "
                         "WHERE k.rank = f.rank AND k.start_ns = f.device_ts_ns)").fetchone()[0] == 0
    code, doc, items = _report(db, capsys)
    assert code == 0 and doc["complete"] and {i["severity"] for i in items} == {"warning"}
    assert {i["file"].rsplit("/", 1)[-1] for i in items} == {db.name, "analysis.db"}


@pytest.mark.parametrize("change, says, lost", [
    ("ALTER TABLE TASK RENAME COLUMN startNs TO start", "tables missing: TASK (no startNs column); its device "
     "tasks ({n:,} rows) were not loaded", "SELECT (SELECT count(*) FROM COMPUTE_TASK_INFO) + "
     "(SELECT count(*) FROM COMMUNICATION_OP)"),
    ("ALTER TABLE COMMUNICATION_OP DROP COLUMN opName", "columns missing: COMMUNICATION_OP.opName; the {n:,} rows of "
     "COMMUNICATION_OP were not loaded", "SELECT count(*) FROM COMMUNICATION_OP"),
    ("DROP TABLE PYTORCH_API", "tables missing: PYTORCH_API; its torch ops, whose launches CONNECTION_IDS holds, "
     "were not loaded", None),
], ids=["task-column", "comm-column", "torch-ops"])
def test_a_db_missing_a_table_or_a_column_says_which_and_loads_the_rest(real, tmp_path, monkeypatch, capsys,
                                                                          change, says, lost):
    """A column renamed or gone failed the whole file with an error naming an SQL alias (`Table "c"
    does not have a column named "name"`); PYTORCH_API gone lost the torch ops unsaid (CANN's calls
    loaded, so the rank looked whole). The rest of the file loads; the run is incomplete. What is
    lost is counted as what it is: TASK's rows are no kernels one for one, the kernels are."""
    db = _writable_rank_db(real, tmp_path, monkeypatch)
    whole = load_profile(db.parents[1], cache=False).con
    n = sq(db, lost)[0][0] if lost else 0
    with sqlite3.connect(db) as w:
        w.execute(change)
    code, doc, items = _report(db, capsys)
    assert (code, doc["complete"]) == (2, False)
    (item,) = items  # (no "no kernels" besides: the error says why)
    assert item["severity"] == "error" and item["what"].startswith(f"{db.name}: {says.format(n=n)}")
    p = load_profile(db.parents[1], cache=False)
    for table in ("memory_record", "overlap_lanes") + (("host_events",) if lost else ()):
        sql = f"SELECT count(*) FROM {table}"
        assert p.con.execute(sql).fetchone()[0] == whole.execute(sql).fetchone()[0] > 0, table


def test_a_lookup_table_without_a_column_costs_its_names_not_the_run(real, tmp_path, monkeypatch, capsys):
    """ENUM_API_TYPE without its name column: every kernel and host call loads (the calls' kinds
    are not named). It had counted the table's 9 rows as lost and made the run incomplete."""
    db = _writable_rank_db(real, tmp_path, monkeypatch)
    whole = load_profile(db.parents[1], cache=False).con
    with sqlite3.connect(db) as w:
        w.execute("ALTER TABLE ENUM_API_TYPE RENAME COLUMN name TO label")
    code, doc, items = _report(db, capsys)
    assert (code, doc["complete"]) == (0, True)
    (item,) = items
    assert item["severity"] == "warning" and item["lost"] == 0 and "ENUM_API_TYPE.name" in item["what"]
    counts = "SELECT (SELECT count(*) FROM kernels), (SELECT count(*) FROM host_events)"
    assert load_profile(db.parents[1], cache=False).con.execute(counts).fetchone() == whole.execute(counts).fetchone()


def test_a_db_cut_by_more_than_a_page_says_it_was_cut(real, tmp_path, monkeypatch):
    """Cut to half (a copy stopped half way), sqlite fails the file whole ("database disk image is
    malformed"): that is said with what the file lacks, which is the cause to fix."""
    from npu_tui.profile.health import health

    db = _writable_rank_db(real, tmp_path, monkeypatch)
    shutil.copy(db_path(real, "level1", 0, "analysis.db"), db.with_name("analysis.db"))  # (something loads)
    size = db.stat().st_size
    db.write_bytes(db.read_bytes()[:size // 2])
    p = load_profile(db.parents[1], cache=False)
    (rows, note), = p.con.execute("SELECT rows, note FROM load_log WHERE file = ?", [str(db)]).fetchall()
    assert rows == 0 and note.startswith(f"cut short: it holds {size // 2:,} of the {size:,} bytes its header counts; "
                                         "unreadable SQLite file: ")
    (item,) = [i for i in health(p) if i.file == str(db)]
    assert item.severity == "error" and item.what.startswith(f"{db.name} was cut short: it holds")


def test_a_db_of_one_device_whose_map_names_another_is_not_said_to_merge_devices(real, tmp_path, monkeypatch):
    """The comm ops take the rank's device (RANK_DEVICE_MAP's): counted among TASK's devices, a db
    whose tasks all name another was said to load several devices as one rank."""
    db = _writable_rank_db(real, tmp_path, monkeypatch)
    with sqlite3.connect(db) as w:
        w.execute("UPDATE TASK SET deviceId = 3")
    p = load_profile(db.parents[1], cache=False)
    assert not [n for (n,) in p.con.execute("SELECT note FROM load_log").fetchall() if "loaded as one rank" in n]
