"""Discovery and the kernel_details loader on real samples, bad input and read-only folders."""

import csv
import gzip
import hashlib
import json
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from npu_tui.cli import main
from npu_tui.profile import ProfileError, load_profile
from npu_tui.profile.health import failed, health
from npu_tui.profile.sources import missing_sources
from npu_tui.profile.sources.base import HEAD_BYTES, csv_header
from npu_tui.session import open_session

LEVEL1 = "msinsight-pt-2rank-levels/text/level1"
KD = "ASCEND_PROFILER_OUTPUT/kernel_details.csv"


def csv_rows(path: Path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_every_source_loader_ships():
    assert missing_sources() == []


@pytest.mark.parametrize("level", ["level0", "level1", "level2"])
def test_cluster_folder_loads_every_kernel_row(real, level):
    root = real / "msinsight-pt-2rank-levels/text" / level
    p = load_profile(root)
    assert p.layout == "cluster" and p.ranks == [0, 1]
    for rank in (0, 1):
        rows = csv_rows(root / f"rank{rank}_ascend_pt" / KD)
        got = p.con.execute(
            "SELECT count(*), sum(dur_ns) FROM kernels WHERE rank = ? AND source = 'kernel_details'",
            [rank]).fetchone()
        want_ns = sum(round(float(r["Duration(us)"]) * 1000) for r in rows)
        assert got == (len(rows), want_ns)


def test_timestamps_are_exact_integer_ns(real):
    path = real / LEVEL1 / "rank0_ascend_pt" / KD
    first = csv_rows(path)[0]["Start Time(us)"]  # "1736408883704643.212\t"
    us, frac = first.strip().split(".")
    p = load_profile(path.parent)
    start = p.con.execute("SELECT min(start_ns) FROM kernels").fetchone()[0]
    assert start == int(us) * 1000 + int(frac.ljust(3, "0"))


def test_level0_types_come_from_kernel_names(real):
    """Level0 writes N/A for Type; the name-derived type must equal what Level1 reports."""
    p0 = load_profile(real / "msinsight-pt-2rank-levels/text/level0/rank0_ascend_pt")
    p1 = load_profile(real / LEVEL1 / "rank0_ascend_pt")
    q = "SELECT name, type FROM kernels"
    level1_types = dict(p1.con.execute(q).fetchall())
    level0 = p0.con.execute(q).fetchall()
    assert all(t is not None for _, t in level0)
    shared = [(n, t) for n, t in level0 if n in level1_types]
    assert len(shared) > 100
    assert all(level1_types[n] == t for n, t in shared)
    # Level0 leaves Accelerator Core N/A except on the comm ops (HCCL).
    cores = p0.con.execute("SELECT DISTINCT name LIKE 'hcom%', core FROM kernels").fetchall()
    assert sorted(cores, key=str) == [(False, None), (True, "HCCL")]


def test_older_columns_and_hccl_core(real):
    path = real / "mstt-advisor-fixtures/ut/advisor/advisor_backend/compute_advice/kernel_details.csv"
    rows = csv_rows(path)
    p = load_profile(path)
    assert p.layout == "file"
    got = dict(p.con.execute("SELECT core, count(*) FROM kernels GROUP BY core").fetchall())
    want = {}
    for r in rows:
        want[r["Accelerator Core"]] = want.get(r["Accelerator Core"], 0) + 1
    assert got == want and "HCCL" in got
    # `Block Dim` (older name) lands in block_dim like `Block Num` would.
    assert p.con.execute("SELECT max(block_dim) FROM kernels").fetchone()[0] == max(
        int(r["Block Dim"]) for r in rows)


def test_mindspores_step_column(real, tmp_path):
    """MindSpore writes kernel_details.csv with `Step ID` (its OpSummaryHeaders), torch_npu `Step
    Id`: read alike. Every kernel's step had been empty, the steps run together as one."""
    src = real / LEVEL1 / "rank0_ascend_pt"
    dst = tmp_path / "rank0_ascend_ms"
    shutil.copytree(src, dst)
    kd = dst / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    data = kd.read_bytes()
    assert data.startswith(b"Step Id,")
    kd.write_bytes(b"Step ID," + data[len(b"Step Id,"):])
    q = "SELECT step, count(*) FROM kernels GROUP BY step"
    assert load_profile(dst).con.execute(q).fetchall() == load_profile(src).con.execute(q).fetchall() == [(50, 191)]


def test_mindspores_operator_details_of_names_and_shapes(real, tmp_path):
    """MindSpore writes operator_details.csv with Name and Input Shapes alone: no times, by design.
    It had been an error ("not an operator_details table"), the run incomplete, exit 2."""
    import csv

    from npu_tui.profile.health import failed, health

    dst = tmp_path / "rank0_ascend_ms"
    shutil.copytree(real / LEVEL1 / "rank0_ascend_pt", dst)
    od = dst / "ASCEND_PROFILER_OUTPUT" / "operator_details.csv"
    rows = csv_rows(od)
    with open(od, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["Name", "Input Shapes"], *[[r["Name"], r["Input Shapes"]] for r in rows]])
    p = load_profile(dst)
    items = [i for i in health(p) if i.file == str(od)]
    assert [(i.severity, i.what) for i in items] == [
        ("info", "operator_details.csv: MindSpore's operator names and input shapes without times: not loaded")]
    assert not failed(health(p)) and p.con.execute("SELECT count(*) FROM kernels").fetchone() == (191,)


@pytest.mark.parametrize("told_by", ["folder", "profiler_info"])
def test_mindspores_stage_is_not_its_step(real, tmp_path, told_by):
    """MindSpore's step_trace_time.csv writes as Stage the span of the step's HCCL tasks (0 on
    one device, without them): its step had read as 0 ms, or here 106 ms of a 136.6 ms step, and
    the account "agreed" with a step of 0. Its step is what the overlap lanes partition. A
    MindSpore rank is told by its *_ascend_ms folder, or by its profiler_info (ms_version, its
    level under profiler_parameters)."""
    src = real / LEVEL1 / "rank0_ascend_pt"
    dst = tmp_path / ("rank0_ascend_ms" if told_by == "folder" else "rank0_ascend_pt")
    shutil.copytree(src, dst)
    if told_by == "profiler_info":
        (dst / "profiler_info_0.json").write_text(json.dumps({
            "profiler_parameters": {"profiler_level": "Level1"}, "ms_profiler_info": {"rank_id": 0},
            "ms_version": "2.6.0", "cann_version": "8.1.RC1"}))
    st = dst / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
    (row,) = csv_rows(st)
    assert float(row["Stage"]) == pytest.approx(136581.0)
    hccl = 106003.5  # the span of this rank's 4 hcom_allReduce tasks in kernel_details.csv
    header = list(row)
    with open(st, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, header)
        w.writeheader()
        w.writerow({**row, "Stage": str(hccl)})
    got = open_session(dst, cache=False)
    want = open_session(src, cache=False)
    (mine,), (theirs,) = got.report["step_account_check"], want.report["step_account_check"]
    assert not mine["differs"] and mine["deviation"] == pytest.approx(theirs["deviation"], abs=1e-6)
    q = "SELECT rank, step, round(stage_us, 1) FROM step_trace"
    assert got.con.execute(q).fetchall() == want.con.execute(q).fetchall() == [(0, 50, 136581.0)]
    assert got.con.execute("SELECT profiler_level FROM ranks").fetchone() == ("Level1",)
    # Its output folder opened alone is the same rank's; an empty cell is none of the step.
    with open(st, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, header)
        w.writeheader()
        w.writerow({**row, "Stage": str(hccl), "Free": ""})
    free = float(row["Free"])
    assert load_profile(dst / "ASCEND_PROFILER_OUTPUT", cache=False).con.execute(q).fetchall() == [
        (0, 50, round(136581.009 - free, 1))]


@pytest.mark.parametrize("framework", ["torch_npu", "mindspore"])
def test_a_pipelines_step_is_its_stage_and_bubble(real, tmp_path, framework):
    """In a pipeline, step_trace_time.csv's Stage leaves out the bubble (the step's receives, waiting
    for the stage before: torch_npu's Stage = the step less Bubble). The step had been read as
    Stage alone: a last stage's step short by its bubble, the ranks' spread and the check against
    the account off by it. Here the real step's 136.6 ms holds a 20 ms bubble, told both ways."""
    src = real / LEVEL1 / "rank0_ascend_pt"
    dst = tmp_path / f"rank0_ascend_{'ms' if framework == 'mindspore' else 'pt'}"
    shutil.copytree(src, dst)
    st = dst / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
    (row,) = csv_rows(st)
    bubble, cno = 20000.0, float(row["Communication(Not Overlapped)"])
    with open(st, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, list(row))
        w.writeheader()
        # MindSpore's Stage is its HCCL tasks' span (above), not read
        w.writerow({**row, "Bubble": str(bubble), "Stage": "106003.5" if framework == "mindspore" else str(136581.0 - bubble)})
    got = open_session(dst, cache=False)
    want = open_session(src, cache=False)
    q = "SELECT rank, step, round(stage_us, 1), bubble_us, round(step_us, 1) FROM step_breakdown"
    assert got.con.execute(q).fetchall() == [(0, 50, 136581.0 - bubble, bubble, 136581.0)]
    (mine,), (theirs,) = got.report["step_account_check"], want.report["step_account_check"]
    assert not mine["differs"] and mine["deviation"] == pytest.approx(theirs["deviation"], abs=1e-6)
    step, exposed = got.con.execute("SELECT step_time_us, exposed_comm_us FROM rank_summary").fetchone()
    assert step == pytest.approx(136581.0) and exposed == pytest.approx(cno - bubble)
    assert [(s["stage_us"], s["bubble_us"], s["step_us"]) for s in got.report["steps"]] == \
        [(pytest.approx(136581.0 - bubble), bubble, pytest.approx(136581.0))]
    assert "bubble" in got.render() and "bubble" not in want.render()


def tree_digest(root: Path):
    return {str(f.relative_to(root)): (f.stat().st_size, f.stat().st_mtime_ns,
                                       hashlib.sha256(f.read_bytes()).hexdigest())
            for f in sorted(root.rglob("*")) if f.is_file()}


def test_loading_never_writes_into_the_profile(real, tmp_path):
    src = tmp_path / "level1"
    shutil.copytree(real / LEVEL1, src)
    for f in src.rglob("*"):
        f.chmod(0o555 if f.is_dir() else 0o444)
    before = tree_digest(src)
    load_profile(src)
    assert tree_digest(src) == before


# --- bad input -------------------------------------------------------------------------------

HEADER = ("Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Dim\r\n")
GOOD = ["1,aclnnAdd_AddAiCore_Add,Add,AI_VECTOR_CORE,\"1000.500\t\",2.5,0,8\r\n",
        "1,aclnnMm_MatMulCommon_MatMulV2,MatMulV2,AI_CORE,\"1003.000\t\",10.25,0.5,20\r\n"]


def write_rank(tmp_path: Path, body: bytes) -> Path:
    out = tmp_path / "r_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "kernel_details.csv").write_bytes(body)
    (out / "step_trace_time.csv").write_bytes(b"")
    return out.parent


def log_row(p):
    return p.con.execute(
        "SELECT rows, skipped_rows, note FROM load_log WHERE kind = 'kernel_details'").fetchone()


@pytest.mark.parametrize("body, reason", [
    (b"", "empty file"),
    (HEADER.encode(), "header only"),
])
def test_nothing_loadable_is_one_clear_error(tmp_path, body, reason):
    with pytest.raises(ProfileError) as e:
        load_profile(write_rank(tmp_path, body))
    assert reason in str(e.value) and "\n" not in str(e.value)


def test_a_csv_in_utf16_is_said_to_be(real, tmp_path):
    """Saved from Excel as Unicode Text: its header read as no column npu-tui knows, and the file
    was said to be no kernel table."""

    with pytest.raises(ProfileError, match="written in UTF-16"):
        load_profile(write_rank(tmp_path, (HEADER + "".join(GOOD)).encode("utf-16")))
    rank = tmp_path / "rank0_ascend_pt"
    shutil.copytree(real / LEVEL1 / "rank0_ascend_pt", rank)
    kd = rank / KD
    kd.write_bytes(kd.read_text(encoding="utf-8").encode("utf-16"))
    (item,) = failed(health(load_profile(rank)))
    assert item.what == ("kernel_details.csv is written in UTF-16 (as Excel's Unicode Text, PowerShell's "
                         "redirection and Notepad's Unicode write), not UTF-8; its kernels come from "
                         "trace_view.json instead, without their input shapes")
    assert item.fix.startswith("save it as UTF-8")


@pytest.mark.parametrize("name", ["trace_view.json", "communication.json"])
def test_a_json_file_in_utf16_is_said_to_be(real, tmp_path, name):
    """Saved again by an editor as UTF-16: said so, as a CSV is, not called empty or malformed."""
    rank = tmp_path / "rank0_ascend_pt"
    shutil.copytree(real / LEVEL1 / "rank0_ascend_pt", rank)
    f = rank / "ASCEND_PROFILER_OUTPUT" / name
    f.write_bytes(f.read_text(encoding="utf-8").encode("utf-16"))
    (item,) = failed(health(load_profile(rank)))
    assert item.what.startswith(f"{name} is written in UTF-16 (")
    assert item.fix.startswith("save it as UTF-8")


def test_bad_rows_are_skipped_and_counted(tmp_path):
    bad = [
        "1,ragged_row,Add,AI_CORE\r\n",                                     # too few cells
        "1,too,many,cells,\"1.0\t\",1,0,1,extra,extra\r\n",                 # too many cells
        "1,excel_mangled,Add,AI_CORE,1.69512E+15,3,0,1\r\n",                # rounded timestamp
        "1,N/A,Add,AI_CORE,\"1011.0\t\",1,0,1\r\n",                         # no name
        "1,negative,Add,AI_CORE,\"1012.0\t\",-4,0,1\r\n",                   # negative duration
    ]
    other_locale = "1,\xff\xffbinary,Add,AI_CORE,\"1010.0\t\",1,0,1\r\n"  # kept: its bytes are text
    body = HEADER.encode() + "".join(GOOD).encode() + "".join([*bad, other_locale]).encode("latin-1")
    p = load_profile(write_rank(tmp_path, body))
    assert log_row(p)[:2] == (3, len(bad))
    names = [n for (n,) in p.con.execute("SELECT name FROM kernels ORDER BY start_ns").fetchall()]
    assert names == ["aclnnAdd_AddAiCore_Add", "aclnnMm_MatMulCommon_MatMulV2", "\\xff\\xffbinary"]
    assert p.con.execute("SELECT sum(dur_ns), sum(wait_ns) FROM kernels").fetchone() == (13750, 500)


def test_folder_with_no_profile(tmp_path):
    """Said with how far down it was looked for: a profile deeper than that is not found."""
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "a/b/c/d/e/PROF_000001_20250101000000000_ABCDEFGHIJ").mkdir(parents=True)
    with pytest.raises(ProfileError, match=r"no profiler output found \(no \*_ascend_pt or PROF_\* folder in it or "
                                           r"up to 4 levels below"):
        load_profile(tmp_path)


def test_parent_folder_points_at_the_profiles_inside(real):
    with pytest.raises(ProfileError, match="level1"):
        load_profile(real / "msinsight-pt-2rank-levels/text")


def test_mixed_line_ends_with_a_bad_row_still_load(tmp_path):
    """Hand-edited files mix CRLF and LF; the good rows load and the bad one is counted."""
    body = (HEADER + GOOD[0] + GOOD[1].replace("\r\n", "\n") + "1,ragged,Add\n").encode()
    p = load_profile(write_rank(tmp_path, body))
    assert log_row(p) == (2, 1, "")


@pytest.mark.parametrize("cut", [False, True], ids=["whole", "last-row-cut"])
def test_cr_cr_lf_line_ends_load_as_crlf(real, tmp_path, cut):
    """Python's csv writer on Windows, given a file opened without newline="", ends each row with
    CR CR LF: the rows are the profiler's own, in every table a CSV fills. (The strict reader
    failed such a file whole; the lax one led each row's first cell with a line break, which
    memory_record's components kept.) A file also cut mid-row loses that row only."""
    from npu_tui.profile.schema import CANONICAL_TABLES
    from npu_tui.profile.sources.csvfile import MAYBE_CUT

    src = real / "msinsight-pt-2rank-levels/text/level2/rank0_ascend_pt"
    rank = tmp_path / "rank0_ascend_pt"
    shutil.copytree(src, rank)
    csvs = sorted((rank / "ASCEND_PROFILER_OUTPUT").glob("*.csv"))
    for f in csvs:
        data = f.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\r\n")
        f.write_bytes(data[:-7] if cut and f.name == "memory_record.csv" else data)
    p, intact = load_profile(rank), load_profile(src)
    for table in set(CANONICAL_TABLES) - {"ranks", "load_log"}:
        q = f"SELECT * FROM {table} ORDER BY ALL"
        got, want = p.con.execute(q).fetchall(), intact.con.execute(q).fetchall()
        if cut and table == "memory_record":  # one row the fewer, and none half-read
            assert len(got) == len(want) - 1 and not Counter(got) - Counter(want), table
        else:
            assert got == want, table
    log = p.con.execute("SELECT parse_filename(file), skipped_rows, note FROM load_log WHERE skipped_rows > 0 "
                        "OR note <> ''").fetchall()
    # Cut inside its last cell (NPU:0 to N): told only by that cell starting the one above, a guess.
    assert log == ([("memory_record.csv", 1, MAYBE_CUT)] if cut else [])


def test_a_trace_view_beside_its_gzip_copy_loads_once(real, tmp_path):
    src = real / LEVEL1 / "rank1_ascend_pt"
    rank = tmp_path / "rank1_ascend_pt"
    shutil.copytree(src, rank)
    trace = rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    (rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json.gz").write_bytes(gzip.compress(trace.read_bytes()))
    p, alone = load_profile(rank), load_profile(src)
    for table in ("kernels", "host_events", "flows", "overlap_lanes"):
        q = f"SELECT count(*) FROM {table}"
        assert p.con.execute(q).fetchone() == alone.con.execute(q).fetchone(), table
    assert p.con.execute("SELECT kind, note FROM load_log WHERE file LIKE '%.gz'").fetchall() == [
        ("discovery", "a compressed copy of trace_view.json beside it: not loaded, or every event would count twice")]


def test_a_copy_or_a_second_file_beside_a_profilers_file_is_left_out(real, tmp_path):
    """An editor's backup, a second download, a hidden copy, another run's file: each was read as
    more of the rank (its kernels, steps and comm ops twice), with nothing said and exit 0."""
    shutil.copytree(real / LEVEL1, tmp_path / "job")
    out = tmp_path / "job" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    for name in ("kernel_details.csv~", "kernel_details (1).csv", ".kernel_details.csv"):
        shutil.copy(out / "kernel_details.csv", out / name)
    shutil.copy(out / "step_trace_time.csv", out / "step_trace_time (1).csv")
    shutil.copy(out / "communication.json", out / "communication.json.bak")
    lines = (out / "kernel_details.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (out / "kernel_details_old.csv").write_text("".join(lines[:50]), encoding="utf-8")  # another run's
    p, alone = load_profile(tmp_path / "job"), load_profile(real / LEVEL1)
    for q in ("SELECT rank, count(*), sum(dur_ns) FROM kernels GROUP BY ALL ORDER BY ALL",
              "SELECT * FROM step_trace ORDER BY ALL", "SELECT rank, count(*) FROM comm_ops GROUP BY ALL ORDER BY ALL"):
        assert p.con.execute(q).fetchall() == alone.con.execute(q).fetchall(), q
    said = sorted((h.severity, h.what) for h in health(p) if h.file.startswith(str(out)))
    copy = "{}: a copy of {} beside it (the same content): not loaded, or its rows would count twice"
    assert said == sorted([("info", copy.format(c, n)) for c, n in (
        ("kernel_details.csv~", "kernel_details.csv"), ("kernel_details (1).csv", "kernel_details.csv"),
        (".kernel_details.csv", "kernel_details.csv"), ("step_trace_time (1).csv", "step_trace_time.csv"),
        ("communication.json.bak", "communication.json"))] + [
        ("warning", "kernel_details_old.csv: a second kernel_details file beside kernel_details.csv, which the "
                    "profiler writes once: not loaded (a backup, or another run's)")])
    assert not failed(health(p))


def test_a_copy_beside_a_profilers_file_that_cannot_be_read_is_what_there_is(real, tmp_path, monkeypatch):
    """The profiler's own kernel_details.csv cannot be read (a permission, an I/O error): its copy
    beside it is not left out as a second file, or the rank would have no kernels at all."""
    from npu_tui.profile import discover as disc
    from npu_tui.profile.sources import kernel_details

    out = tmp_path / "o"
    out.mkdir()
    own = out / "kernel_details.csv"
    shutil.copy(real / LEVEL1 / "rank0_ascend_pt" / KD, own)
    shutil.copy(own, out / "kernel_details (1).csv")
    size = disc._content_size
    monkeypatch.setattr(disc, "_content_size", lambda f: None if f == own else size(f))
    assert disc._one_each([own, out / "kernel_details (1).csv"], kernel_details) == [own, out / "kernel_details (1).csv"]


def test_a_rank_folder_holding_its_output_files_itself_loads_them(real, tmp_path):
    """ASCEND_PROFILER_OUTPUT's files copied straight into the rank folder: opened, "nothing could
    be loaded"; beside other ranks, a rank with no kernels, its kernel_details.csv right there.
    The raw PROF_* data a real rank folder keeps beside them is no parse still running."""
    src = real / LEVEL1 / "rank1_ascend_pt"
    rank = tmp_path / "rank1_ascend_pt"
    shutil.copytree(src, rank, ignore=shutil.ignore_patterns("ASCEND_PROFILER_OUTPUT"))
    for f in (src / "ASCEND_PROFILER_OUTPUT").iterdir():
        shutil.copy(f, rank / f.name)
    (rank / "PROF_000001_20250101_ABC" / "device_1" / "data").mkdir(parents=True)
    p, whole = load_profile(rank), load_profile(src)
    assert p.ranks == whole.ranks == [1]
    for q in ("SELECT count(*), sum(dur_ns) FROM kernels", "SELECT count(*) FROM host_events",
              "SELECT * FROM step_trace ORDER BY ALL"):
        assert p.con.execute(q).fetchall() == whole.con.execute(q).fetchall(), q
    assert not failed(health(p))


def test_a_trace_view_with_an_empty_event_list_is_its_ranks_failed_trace_view(real, tmp_path):
    """``{"traceEvents": []}`` tells no flavour: it was taken for a Kineto trace, so the other rank
    was said to lack a trace_view.json "which 1 other rank has"."""
    shutil.copytree(real / LEVEL1, tmp_path / "job")
    (tmp_path / "job" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").write_text('{"traceEvents": []}')
    p = load_profile(tmp_path / "job")
    assert p.con.execute("SELECT rank, kind FROM load_log WHERE parse_filename(file) = 'trace_view.json' "
                         "ORDER BY rank").fetchall() == [(0, "trace_view"), (1, "trace_view")]
    items = health(p)
    assert [i.rank for i in items if "trace_view" in i.what] == [0]
    (item,) = failed(items)
    assert item.what == ("trace_view.json holds no events; its kernels come from kernel_details.csv instead; "
                         "its host events, flows and overlap lanes are missing")


def test_an_archive_of_a_profile_says_to_extract_it(real, tmp_path):
    import tarfile

    for name in ("prof.tar.gz", "msprof_export.tar.gz"):  # (msprof_ is the prefix of msprof's timelines)
        path = tmp_path / name
        with tarfile.open(path, "w:gz") as tar:
            tar.add(real / LEVEL1, arcname="level1")
        with pytest.raises(ProfileError, match=rf"{name}: an archive; extract it \(tar xf, unzip\)"):
            load_profile(path)
    # The folder it was copied into, holding nothing else.
    with pytest.raises(ProfileError, match=r"no profiler output found, but archives \(msprof_export\.tar\.gz, "
                                           r"prof\.tar\.gz\): extract them \(tar xf, unzip\) and open what they give"):
        load_profile(tmp_path)


def test_a_file_where_a_rank_or_output_folder_should_be_is_said(real, tmp_path):
    """A rank folder that is a file (an archive without its ending, a copy gone wrong), or a rank's
    ASCEND_PROFILER_OUTPUT that is: its data is there and not read. It had been silent: the job
    loaded as if it had one rank fewer, or the rank said to lack each of its files."""
    import tarfile

    from npu_tui.profile.health import failed

    job = tmp_path / "job"
    shutil.copytree(real / LEVEL1 / "rank0_ascend_pt", job / "rank0_ascend_pt")
    with tarfile.open(job / "rank1_ascend_pt", "w") as tar:  # an archive named as the folder
        tar.add(real / LEVEL1 / "rank1_ascend_pt", arcname="rank1_ascend_pt")
    shutil.copytree(real / LEVEL1 / "rank1_ascend_pt", job / "rank2_ascend_pt")
    out = job / "rank2_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    shutil.rmtree(out)
    out.write_bytes(b"")
    p = load_profile(job)
    # the rank whose output folder is a file is not loaded: said by that alone, not by each file it lacks
    assert p.ranks == [0] and [i.rank for i in health(p) if i.rank is not None] == []
    items = failed(health(p))
    assert [(i.file, i.what) for i in items] == [
        (str(job / "rank1_ascend_pt"), "rank1_ascend_pt is a file where a folder should be: what it holds is left out"),
        (str(out), "ASCEND_PROFILER_OUTPUT is a file where a folder should be: what it holds is left out")]
    # Alone in the folder opened: said, not "no profiler output found" alone.
    (tmp_path / "alone").mkdir()
    (job / "rank1_ascend_pt").rename(tmp_path / "alone" / "rank1_ascend_pt")
    with pytest.raises(ProfileError, match=r"no profiler output found, but rank1_ascend_pt is a file where a "
                                           r"folder should be: if an archive"):
        load_profile(tmp_path / "alone")


def test_text_and_db_exports_of_one_run_load_once(real, tmp_path):
    """export_type=[text, db] writes both; no table may double."""
    text_only = load_profile(real / LEVEL1 / "rank0_ascend_pt")
    rank = tmp_path / "rank0_ascend_pt"
    shutil.copytree(real / LEVEL1 / "rank0_ascend_pt", rank)
    db_out = real / "msinsight-pt-2rank-levels/db/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"
    for f in db_out.iterdir():
        shutil.copy(f, rank / "ASCEND_PROFILER_OUTPUT" / f.name)
    both = load_profile(rank)
    for table in ("kernels", "host_events", "flows", "overlap_lanes", "step_trace", "comm_ops",
                  "comm_bandwidth", "comm_matrix"):
        q = f"SELECT count(*) FROM {table}"
        assert both.con.execute(q).fetchone() == text_only.con.execute(q).fetchone(), table


def test_db_only_rank_is_labelled_db(real):
    p = load_profile(real / "msinsight-pt-2rank-levels/db/level1")
    assert p.con.execute("SELECT DISTINCT source_format FROM ranks").fetchall() == [("db",)]


def test_a_folder_name_with_a_newline_gives_a_one_line_error(tmp_path):
    odd = tmp_path / "run\n\x1b[31mred"
    odd.mkdir()
    with pytest.raises(ProfileError) as e:
        load_profile(odd)
    assert "\n" not in str(e.value) and "\x1b" not in str(e.value) and "\\n" in str(e.value)


def test_the_incomplete_line_writes_a_folder_names_control_characters_as_escapes(real, tmp_path, capsys):
    """A rank folder named with a line break and ESC, its kernel file empty: the one line on stderr
    that names the file writes them as \\x0a and \\x1b, not to the terminal."""
    root = tmp_path / "job"
    root.mkdir()
    odd = root / "ra\nnk0\x1b[31mRED_ascend_pt"
    shutil.copytree(real / LEVEL1 / "rank0_ascend_pt", odd)
    shutil.copytree(real / LEVEL1 / "rank1_ascend_pt", root / "rank1_ascend_pt")
    (odd / KD).write_bytes(b"")
    assert main(["report", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err
    assert "incomplete: 1 file failed to load whole" in err and "ra\\x0ank0\\x1b[31mRED_ascend_pt" in err


def test_a_csv_header_is_a_line_of_the_head():
    """A one-line JSON trace's 64 KiB head is not a header of a thousand columns; a short file
    that is a header alone, without a line break, is still one."""
    trace_head = (b'[{"ph": "X", "name": "aten::add", "args": {}}, ' * 2000)[:HEAD_BYTES]
    assert csv_header(trace_head) == []
    assert csv_header(b"Name,Start Time(us),Duration(us)") == ["Name", "Start Time(us)", "Duration(us)"]
    assert csv_header(b'"Name", Type\r\nMatMul,MatMulV2\r\n') == ["Name", "Type"]


def test_folder_names_in_another_locale_load_and_show_as_their_bytes(real, tmp_path, capsys):
    """A rank folder named on a GBK system ("数据", not UTF-8): its files load, from the cache on the
    second open, and every output names it by its bytes; DuckDB itself opens only UTF-8 names."""
    root = tmp_path / "job"
    root.mkdir()
    shutil.copytree(real / LEVEL1 / "rank0_ascend_pt", root / "rank0_ascend_pt")
    shutil.copytree(real / LEVEL1 / "rank1_ascend_pt", root / os.fsdecode(b"\xca\xfd\xbe\xdd_rank1_ascend_pt"))
    shown = "\\xca\\xfd\\xbe\\xdd_rank1_ascend_pt"
    for _ in range(2):  # loaded, then reopened from the cache
        p = open_session(root).profile
        assert p.ranks == [0, 1]
        kernels = p.con.execute("SELECT count(*) FROM kernels WHERE rank = 1").fetchone()[0]
        assert kernels == len(csv_rows(real / LEVEL1 / "rank1_ascend_pt" / KD))
        assert p.con.execute("SELECT path FROM ranks WHERE rank = 1").fetchone()[0].endswith(shown)
        assert p.con.execute("SELECT count(*) FROM load_log WHERE rows = 0 AND note LIKE '%unreadable%'"
                             ).fetchone()[0] == 0
    assert p.from_cache
    assert main(["report", str(root), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["complete"] and report["profile"]["ranks"] == [0, 1]
    assert main(["report", str(root / os.fsdecode(b"\xca\xfd_missing"))]) == 2
    assert "\\xca\\xfd_missing: no such file" in capsys.readouterr().err


def test_a_start_before_the_clocks_zero_is_skipped_and_counted(real, tmp_path):
    """One kernel's start hand-edited negative: that row is skipped and counted, not a step 55 years long."""
    src = real / LEVEL1 / "rank0_ascend_pt"
    dst = tmp_path / "rank0_ascend_pt"
    shutil.copytree(src, dst)
    rows = csv_rows(src / KD)
    text = (src / KD).read_text(encoding="utf-8")
    start = rows[5]["Start Time(us)"]
    assert text.count(start) == 1
    (dst / KD).write_text(text.replace(start, "-" + start.strip()), encoding="utf-8")
    p = load_profile(dst)
    kernels, first = p.con.execute("SELECT count(*), min(start_ns) FROM kernels").fetchone()
    assert kernels == len(rows) - 1 and first > 0
    assert p.con.execute("SELECT skipped_rows FROM load_log WHERE kind = 'kernel_details'").fetchone()[0] == 1


def test_rank_and_prof_folders_gathered_by_links_load(real, tmp_path):
    """Ranks collected into one folder by links (often so, on a shared disk) are found like the
    folders themselves; msprof's PROF_* too. Links back up are loops, not more ranks (see
    test_robust_corpus)."""
    job = tmp_path / "job"
    job.mkdir()
    shutil.copytree(real / LEVEL1 / "rank0_ascend_pt", job / "rank0_ascend_pt")
    (job / "rank1_ascend_pt").symlink_to(real / LEVEL1 / "rank1_ascend_pt")
    (job / "again_ascend_pt").symlink_to(job / "rank0_ascend_pt")  # the same folder twice: once
    p = load_profile(job)
    assert p.ranks == [0, 1]
    assert p.con.execute("SELECT count(*) FROM load_log WHERE note LIKE '%claimed twice%'").fetchone()[0] == 0
    assert p.con.execute("SELECT count(*) FROM kernels WHERE rank = 1").fetchone()[0] == \
        len(csv_rows(real / LEVEL1 / "rank1_ascend_pt" / KD))

    msprof = tmp_path / "msprof"
    msprof.mkdir()
    profs = sorted((real / "mindinsight-msprof-2dev-hccl").glob("PROF_*"))
    for prof in profs:
        (msprof / prof.name).symlink_to(prof)
    linked = load_profile(msprof)
    direct = load_profile(real / "mindinsight-msprof-2dev-hccl")
    assert linked.ranks == direct.ranks and len(linked.ranks) == len(profs)
    count = "SELECT rank, count(*) FROM kernels GROUP BY rank ORDER BY rank"
    assert linked.con.execute(count).fetchall() == direct.con.execute(count).fetchall()


def test_rank_folders_linked_from_a_folder_beside_them_are_loaded_not_said_below(real, tmp_path):
    """Rank folders kept in nodes/ and gathered beside it by links: each is loaded through its link,
    and not also said to be a rank folder below the others, not loaded (a warning that named the
    very folders loaded). One that no link gathers still is."""
    job = tmp_path / "job"
    (job / "nodes").mkdir(parents=True)
    for r in (0, 1):
        shutil.copytree(real / LEVEL1 / f"rank{r}_ascend_pt", job / "nodes" / f"rank{r}_ascend_pt")
        (job / f"rank{r}_ascend_pt").symlink_to(Path("nodes") / f"rank{r}_ascend_pt")
    assert load_profile(job).ranks == [0, 1]
    assert not [h for h in health(load_profile(job)) if "below the others" in h.what]
    shutil.copytree(real / LEVEL1 / "rank1_ascend_pt", job / "nodes" / "rank1_copy_ascend_pt")
    below = [h.what for h in health(load_profile(job)) if "below the others" in h.what]
    assert len(below) == 1 and "rank1_copy_ascend_pt" in below[0]


def test_a_rank_folder_linked_from_a_mount_that_is_gone_is_said(real, tmp_path, capsys):
    """A rank gathered by a link whose target is gone (a node's disk not mounted) was passed
    over: one rank loaded, a report without a health line, exit 0."""
    job = tmp_path / "job"
    job.mkdir()
    shutil.copytree(real / LEVEL1 / "rank0_ascend_pt", job / "rank0_ascend_pt")
    (job / "rank1_ascend_pt").symlink_to(tmp_path / "mnt" / "node2" / "rank1_ascend_pt")
    (job / "PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP").symlink_to(tmp_path / "mnt" / "prof")
    assert main(["report", str(job), "--format", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["complete"] is False and [r["rank"] for r in doc["ranks"]] == [0]
    said = sorted((h["severity"], h["what"]) for h in doc["health"] if "partial rank set" not in h["what"])
    assert said == [("error", "job/rank1_ascend_pt/ is a link to nothing (its target is gone): left out"),
                    # beside rank folders, msprof output is another profile, not loaded in any case
                    ("warning", "job/PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP/ was not searched: it is a "
                                "link to nothing (its target is gone)")]
    (job / "rank0_ascend_pt").rename(tmp_path / "moved")
    with pytest.raises(ProfileError, match=r"rank1_ascend_pt is a link to nothing"):
        load_profile(job)


@pytest.mark.parametrize("sample,file", [
    (LEVEL1 + "/rank0_ascend_pt", "ASCEND_PROFILER_OUTPUT/communication.json"),
    (LEVEL1 + "/rank0_ascend_pt", "ASCEND_PROFILER_OUTPUT/trace_view.json"),
    (LEVEL1 + "/rank0_ascend_pt", KD),
    ("kineto/hta-alexnet-1gpu", None),
    ("kineto/hta-sampled-2rank", None),  # gzipped: the mark inside the stream
])
def test_a_byte_order_mark_changes_nothing(real, tmp_path, sample, file):
    """A file saved by a Windows editor starts with a UTF-8 byte order mark: it loads as without."""
    src = real / sample
    dst = tmp_path / "p"
    shutil.copytree(src, dst)
    targets = [dst / file] if file else [f for f in dst.iterdir() if f.is_file()]
    for f in targets:
        data = f.read_bytes()
        if data[:2] == b"\x1f\x8b":
            f.write_bytes(gzip.compress(b"\xef\xbb\xbf" + gzip.decompress(data)))
        else:
            f.write_bytes(b"\xef\xbb\xbf" + data)
    logs = "SELECT replace(file, ?, ''), kind, rows, skipped_rows, note FROM load_log ORDER BY ALL"
    tables = ["kernels", "host_events", "flows", "comm_ops", "overlap_lanes"]
    got, want = load_profile(dst), load_profile(src)
    assert got.con.execute(logs, [str(dst)]).fetchall() == want.con.execute(logs, [str(src)]).fetchall()
    for t in tables:
        q = f"SELECT count(*) FROM {t}"
        assert got.con.execute(q).fetchone() == want.con.execute(q).fetchone(), t


@pytest.mark.parametrize("cut", [None, "inside its quoted call stack", "after a line break in its call stack"])
def test_a_last_row_of_several_lines_without_a_line_break(real, tmp_path, cut):
    """operator_details.csv quotes a call stack of several lines in each row: without the final
    line break the last row is still whole; cut inside its quotes, it is the one row lost, and so
    it is cut just after one of the line breaks inside them (once read as a whole file)."""
    src = real / LEVEL1 / "rank0_ascend_pt"
    dst = tmp_path / "rank0_ascend_pt"
    shutil.copytree(src, dst)
    f = dst / "ASCEND_PROFILER_OUTPUT" / "operator_details.csv"
    data = f.read_bytes().rstrip(b"\r\n")
    with open(src / "ASCEND_PROFILER_OUTPUT" / "operator_details.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))[1:]
    assert any("\n" in cell for cell in rows[-1])  # the last row spans lines
    f.write_bytes(data if cut is None else data[:data.rindex(b"\n") + (1 if cut.startswith("after") else -3)])
    p = load_profile(dst)
    log = p.con.execute("SELECT rows, skipped_rows, note FROM load_log WHERE kind = 'operator_details'").fetchone()
    assert log == ((len(rows), 0, "") if cut is None else (len(rows) - 1, 1, "cut short: its last row is partial"))


def test_a_stray_quote_is_not_a_cut(real, tmp_path):
    """A quote inside an unquoted cell (hand-edited) leaves the file's quotes unpaired, and its
    last line break after an odd number of them: the file is whole all the same."""
    src = real / LEVEL1 / "rank0_ascend_pt"
    dst = tmp_path / "rank0_ascend_pt"
    shutil.copytree(src, dst)
    f = dst / KD
    lines = f.read_bytes().split(b"\n")
    lines[5] = lines[5].replace(b"aclnn", b'acl"nn', 1)
    assert b'acl"nn' in lines[5] and lines[-1] == b""
    f.write_bytes(b"\n".join(lines))
    p = load_profile(dst)
    rows = p.con.execute("SELECT rows, skipped_rows, note FROM load_log WHERE kind = 'kernel_details'").fetchone()
    assert rows == load_profile(src).con.execute(
        "SELECT rows, skipped_rows, note FROM load_log WHERE kind = 'kernel_details'").fetchone()


@pytest.mark.parametrize("at", [32768, 40000])
def test_zero_bytes_inside_a_csv_make_it_damaged(real, tmp_path, at):
    """A block of zeros inside a kernel file (the disk, or a sparse copy, never filled it) runs
    rows together, or loads them with the zeros as text: the file is damaged, and the run
    incomplete, however few rows the reader rejected (at 32768 none)."""
    from npu_tui.profile.health import failed, health

    src = real / LEVEL1 / "rank0_ascend_pt"
    dst = tmp_path / "rank0_ascend_pt"
    shutil.copytree(src, dst)
    f = dst / KD
    data = bytearray(f.read_bytes())
    data[at:at + 4096] = bytes(4096)
    f.write_bytes(bytes(data))
    (item,) = [i for i in failed(health(load_profile(dst))) if "zero bytes" in i.what]
    assert item.what.startswith(f"kernel_details.csv: damaged: 4,096 zero bytes inside it, from byte {at:,}; ")
    assert item.fix.startswith("the file is damaged")


@pytest.mark.parametrize("given", ["path", "dot"])
def test_an_output_folder_opens_as_its_rank(real, tmp_path, monkeypatch, given):
    """ASCEND_PROFILER_OUTPUT given itself is its rank folder's: the rank id and level of the
    profiler_info beside it, not rank 0 and nothing; given as `.` too (`npu-tui .` in it)."""
    rank = tmp_path / "rank1_ascend_pt"
    shutil.copytree(real / LEVEL1 / "rank1_ascend_pt", rank)
    whole = load_profile(rank)
    if given == "dot":
        monkeypatch.chdir(rank / "ASCEND_PROFILER_OUTPUT")
    output = load_profile(Path(".") if given == "dot" else rank / "ASCEND_PROFILER_OUTPUT")
    assert output.ranks == whole.ranks == [1]
    q = "SELECT rank, profiler_level, torch_npu_version FROM ranks"
    assert output.con.execute(q).fetchall() == whole.con.execute(q).fetchall()
    assert output.con.execute(q).fetchone()[1] is not None


def test_a_csv_with_old_mac_line_ends_loads(real, tmp_path):
    """Lines ended by a bare CR (an old Mac editor's save): every row, not 'no Name column'."""
    dst = tmp_path / "rank0_ascend_pt"
    shutil.copytree(real / LEVEL1 / "rank0_ascend_pt", dst)
    kd = dst / KD
    kd.write_bytes(kd.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r"))
    p = load_profile(dst)
    log = p.con.execute("SELECT rows, skipped_rows, note FROM load_log WHERE kind = 'kernel_details'").fetchone()
    assert log == (len(csv_rows(real / LEVEL1 / "rank0_ascend_pt" / KD)), 0, "")


@pytest.mark.parametrize("end", ["whole last row", "cut last row"])
def test_a_stray_quote_does_not_hide_where_the_last_row_starts(tmp_path, end):
    """A hand-edited cell with one quote inside it (a"b): the reader takes it as it is, and the
    quotes after it no longer pair up; the last row is still found as the last line."""
    out = tmp_path / "r" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    rows = ["Name,Type,Accelerator Core,Start Time(us),Duration(us)", 'a"b,MatMul,AI_CORE,1000,1']
    rows += [f"k{i},MatMul,AI_CORE,{2000 + 10 * i},1" for i in range(1000)]
    text = "\n".join(rows)
    (out / "kernel_details.csv").write_text(text if end == "whole last row" else text[:-3])
    p = load_profile(out.parent)
    log = p.con.execute("SELECT rows, skipped_rows FROM load_log WHERE kind = 'kernel_details'").fetchone()
    assert log == ((1001, 0) if end == "whole last row" else (1000, 1))


def test_another_profile_beside_the_rank_folders_is_said_not_passed_over(real, tmp_path, monkeypatch):
    """A Kineto trace or a PROF_* folder dropped beside the rank folders is another run: not
    loaded as one of its ranks, and not ignored in silence either (nor once it is gone)."""
    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))
    job = tmp_path / "job"
    shutil.copytree(real / "msinsight-pt-2rank-levels/text/level1", job)
    trace = next((real / "kineto/hta-sampled-2rank").iterdir())
    shutil.copy(trace, job / trace.name)
    (job / "PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP" / "device_0").mkdir(parents=True)

    def beside():
        p = load_profile(job, cache=True)
        p.save_cache()
        said = p.con.execute("SELECT file, note FROM load_log WHERE note LIKE 'another profile%'").fetchall()
        assert p.ranks == [0, 1]
        p.con.close()
        return sorted((Path(f).name, note) for f, note in said)

    assert beside() == [("PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP", "another profile beside the rank folders"),
                        (trace.name, "another profile beside the rank folders")]
    (job / trace.name).unlink()
    assert [name for name, _ in beside()] == ["PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP"]


def test_an_integer_cell_past_32_bits_costs_its_cell_not_the_file(tmp_path):
    """One Block Num, Step Id or Device_id of 3e9 in kernel_details.csv, or a Size(KB) of 1e16 in
    operator_memory.csv: a failed cast lost the whole file. The kernel keeps its row (the cell is
    NULL, the other rows' device stands); the allocation of no possible size is skipped, counted."""
    from npu_tui.demo import PATH as DEMO

    demo = shutil.copytree(DEMO, tmp_path / "demo")
    (out,) = [d / "ASCEND_PROFILER_OUTPUT" for d in demo.iterdir() if "3096504" in d.name]
    before = load_profile(DEMO)
    kernels = before.con.execute("SELECT count(*), sum(dur_ns) FROM kernels WHERE rank = 0").fetchone()
    allocations = before.con.execute("SELECT count(*) FROM operator_memory WHERE rank = 0").fetchone()[0]

    path = out / "kernel_details.csv"
    header, *rows = list(csv.reader(path.open(newline="", encoding="utf-8")))
    for row, column in zip(rows, ("Block Num", "Step Id", "Device_id")):
        row[header.index(column)] = "3000000000"
    kernel_rows = len(rows)
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([header, *rows])
    path = out / "operator_memory.csv"
    header, *rows = list(csv.reader(path.open(newline="", encoding="utf-8")))
    rows[0][header.index("Size(KB)")] = "9999999999999999"
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([header, *rows])

    p = load_profile(demo)
    assert p.con.execute("SELECT count(*), sum(dur_ns) FROM kernels WHERE rank = 0").fetchone() == kernels
    assert p.con.execute("SELECT count(DISTINCT device_id) FROM kernels WHERE rank = 0").fetchone()[0] == 1
    assert p.con.execute("SELECT count(*) FROM operator_memory WHERE rank = 0").fetchone()[0] == allocations - 1
    log = {Path(f).name: (r, s) for f, r, s in
           p.con.execute("SELECT file, rows, skipped_rows FROM load_log WHERE rank = 0").fetchall()}
    assert log["kernel_details.csv"] == (kernel_rows, 0) and log["operator_memory.csv"] == (allocations - 1, 1)


def test_a_step_given_twice_in_step_trace_time_keeps_its_first_row(tmp_path):
    """Two rows of one step id: the analysis took both as the step (a step account 20 % over, that
    step shown four times in the breakdown). The later row is skipped, counted and named."""
    from npu_tui.demo import PATH as DEMO

    demo = shutil.copytree(DEMO, tmp_path / "demo")
    (path,) = demo.glob("*3096504*/ASCEND_PROFILER_OUTPUT/step_trace_time.csv")
    header, *rows = list(csv.reader(path.open(newline="", encoding="utf-8")))
    step, computing = header.index("Step"), header.index("Computing")
    first = rows[0][:]
    rows[1][step] = first[step]
    # A step whose first row is unusable (its Computing not a number) keeps its second.
    rows[3][step] = rows[2][step]
    rows[2][computing] = "N/A"
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([header, *rows])

    session = open_session(demo)
    whole = open_session(DEMO).sql("SELECT rank, steps FROM rank_times ORDER BY rank").values.tolist()
    # The steps whose rows went (one was 2 more) are measured as a rank's without a step trace.
    assert session.sql("SELECT rank, steps FROM rank_times ORDER BY rank").values.tolist() == whole
    assert session.con.execute("SELECT step FROM step_breakdown WHERE rank = 0 AND source = 'overlap_lanes' "
                               "ORDER BY step").fetchall() == [(int(rows[1][step]) + 1,), (int(rows[3][step]) + 1,)]
    kept = session.con.execute("SELECT step, computing_us FROM step_trace WHERE rank = 0 ORDER BY step").fetchall()
    assert kept == [(int(r[step]), pytest.approx(float(r[computing]))) for i, r in enumerate(rows) if i not in (1, 2)]
    ((skipped, note),) = session.con.execute(
        "SELECT skipped_rows, note FROM load_log WHERE rank = 0 AND file LIKE '%step_trace_time.csv'").fetchall()
    assert skipped == 2 and f"step {first[step]} given again" in note and f"step {rows[2][step]}" not in note


def test_a_step_trace_row_of_zeros_is_no_step(tmp_path):
    """Older torch_npu write a row of zeros for a step scheduled that ran nothing on the device: it
    was averaged in as a step of 0 µs (the rank's mean step 8 % short, a rank imbalance doubled)."""
    from npu_tui.demo import PATH as DEMO

    demo = shutil.copytree(DEMO, tmp_path / "demo")
    (path,) = demo.glob("*3096504*/ASCEND_PROFILER_OUTPUT/step_trace_time.csv")
    header, *rows = list(csv.reader(path.open(newline="", encoding="utf-8")))
    step = header.index("Step")
    last = max(int(r[step]) for r in rows)
    zeros = ["0"] * len(header)
    zeros[step] = str(last + 1)
    with path.open("a", newline="", encoding="utf-8") as f:
        csv.writer(f).writerow(zeros)
    q = "SELECT rank, steps, step_time_us FROM rank_times ORDER BY rank"
    assert open_session(demo).sql(q).values.tolist() == open_session(DEMO).sql(q).values.tolist()
    ((skipped, note),) = open_session(demo).con.execute(
        "SELECT skipped_rows, note FROM load_log WHERE rank = 0 AND file LIKE '%step_trace_time.csv'").fetchall()
    assert skipped == 1 and note == (f"step {last + 1}: every figure 0, a step the device did nothing in (older "
                                     "torch_npu write one for each step scheduled): skipped")
    # Every step such (none ran on the device): nothing of the file failed, the run is not incomplete.
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([header, zeros])
    (item,) = [i for i in health(load_profile(demo)) if i.file.endswith("step_trace_time.csv")]
    assert item.severity == "warning"


def test_a_step_written_as_step_n_or_n_point_0_is_step_n_in_every_file(tmp_path):
    """The step tables write a step as "50", "50.0" or "step50"; a kernel file's Step Id in the
    last form read as no step, so its kernels fell out of every step and the step account no
    longer met step_trace_time.csv's. Every form reads as the step, in both files."""
    from npu_tui.demo import PATH as DEMO

    demo = shutil.copytree(DEMO, tmp_path / "demo")
    (out,) = [d / "ASCEND_PROFILER_OUTPUT" for d in demo.iterdir() if "3096504" in d.name]
    for name, column in (("kernel_details.csv", "Step Id"), ("step_trace_time.csv", "Step")):
        path = out / name
        header, *rows = list(csv.reader(path.open(newline="", encoding="utf-8")))
        at = header.index(column)
        for i, row in enumerate(rows):
            row[at] = (f"step{row[at]}", f"{row[at]}.0", f" STEP {row[at]}")[i % 3]
        with path.open("w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([header, *rows])
    steps = ("SELECT (SELECT list((step, n, ns) ORDER BY step) FROM (SELECT step, count(*) AS n, sum(dur_ns) AS ns "
             "FROM kernels WHERE rank = 0 GROUP BY step)), (SELECT list(step ORDER BY step) FROM step_trace WHERE rank = 0)")
    before, after = load_profile(DEMO).con.execute(steps).fetchone(), load_profile(demo).con.execute(steps).fetchone()
    assert after == before and None not in [s for s, _, _ in after[0]] and len(after[1]) >= 5


@pytest.mark.parametrize("file", ["text/level1/rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv",
                                  "text/level1/rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json",
                                  "db/level1/rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_1.db"])
def test_one_file_of_a_rank_opened_alone_keeps_the_rank_its_folder_says(real, file):
    """Its rank folder's profiler_info_1.json says rank 1, as where the folder is opened; a file
    opened alone had been rank 0, beside its own device id 1."""
    p = load_profile(real / "msinsight-pt-2rank-levels" / file)
    assert p.ranks == [1]
    assert p.con.execute("SELECT rank, device_id, profiler_level FROM ranks").fetchall() == \
        load_profile(real / "msinsight-pt-2rank-levels" / file.split("/ASCEND")[0]).con.execute(
            "SELECT rank, device_id, profiler_level FROM ranks").fetchall()


def test_one_file_of_a_rank_folder_holding_its_files_itself_keeps_its_rank(real, tmp_path):
    """The output folder's files copied up into the rank folder (loaded as the rank's where the
    folder is opened): one of them opened alone is rank 1 too, by the profiler_info beside it."""
    rank = tmp_path / "r_ascend_pt"
    rank.mkdir()
    src = real / "msinsight-pt-2rank-levels/text/level1/rank1_ascend_pt"
    shutil.copy(src / "profiler_info_1.json", rank)
    shutil.copy(src / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", rank)
    assert load_profile(rank).ranks == [1] and load_profile(rank / "kernel_details.csv").ranks == [1]


def test_one_file_opened_alone_is_loaded_again_when_its_rank_folder_says_another_rank(real, tmp_path):
    """The rank comes from the rank folder above the file: its profiler_info is part of the cache's key."""
    rank = shutil.copytree(real / "msinsight-pt-2rank-levels/text/level1/rank1_ascend_pt", tmp_path / "r_ascend_pt")
    path = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    first = load_profile(path, cache=True)
    first.save_cache()
    first.con.close()
    assert first.ranks == [1] and load_profile(path, cache=True).from_cache
    (rank / "profiler_info_1.json").rename(rank / "profiler_info_3.json")
    again = load_profile(path, cache=True)
    assert again.ranks == [3] and not again.from_cache


@pytest.mark.parametrize("part", ["timeline", "timeline/msprof_1_0_2.json"])
def test_an_msprof_devices_timeline_opened_alone_is_that_devices_rank(real, part):
    """device_1's info.json.1 says rank 1, as where device_1 is opened; its timeline folder or one
    of its files opened alone had been rank 0, and of no device."""
    prof = real / "mindinsight-msprof-2dev-hccl" / "PROF_000001_20230818142704567_GQFAMHBKGODKJMLA"
    ranks = "SELECT rank, device_id FROM ranks"
    assert load_profile(prof / "device_1").con.execute(ranks).fetchall() == [(1, 1)]
    assert load_profile(prof / "device_1" / part).con.execute(ranks).fetchall() == [(1, 1)]


def test_a_loaders_own_fault_on_one_file_costs_that_file_not_the_load(real, tmp_path, monkeypatch, capsys):
    """A loader that raised other than by the file's fault (a TypeError: a defect of npu-tui's)
    failed the whole load with a traceback ("Load failed" in the app): that file is lost and said,
    the run incomplete, the other files loaded."""
    from npu_tui.cli import main
    from npu_tui.profile.sources import step_trace_time

    def broken(con, path, ctx):
        raise TypeError("object of type 'NoneType' has no len()")

    monkeypatch.setattr(step_trace_time, "load", broken)
    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))  # (a cache of the whole load beside)
    folder = real / "msinsight-pt-2rank-levels" / "text" / "level1"
    assert main(["report", str(folder), "--format", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    said = [h for h in doc["health"] if h["file"].endswith("step_trace_time.csv")]
    assert len(said) == 2 and {h["severity"] for h in said} == {"error"}
    assert said[0]["what"].endswith("npu-tui's loader failed on it (TypeError: object of type 'NoneType' has no "
                                    "len()), not the file's: please report it")
    assert [r["kernel_count"] for r in doc["ranks"]] == [191, 191]
    from npu_tui.profile.cache import cache_dir  # not kept: the next open loads the files again
    assert not list(cache_dir().glob("*.duckdb"))


def test_one_file_opened_alone_says_the_profiler_files_beside_it(real):
    """kernel_details.csv opened alone: the Overview said "no memory records (profile with
    profile_memory=True)" with memory_record.csv beside it, and nothing of the folder's other files."""
    out = real / "msinsight-pt-2rank-levels" / "text" / "level1" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    whole = load_profile(out.parent)
    beside = sorted(Path(f).name for (f,) in whole.con.execute("SELECT file FROM load_log").fetchall()
                    if Path(f).parent == out and Path(f).name != "kernel_details.csv")
    (item,) = [h for h in health(load_profile(out / "kernel_details.csv")) if "opened alone" in h.what]
    assert item.severity == "warning" and item.file == str(out)
    assert item.what.endswith(f"opened alone: {len(beside)} other profiler files beside kernel_details.csv "
                              f"({', '.join(beside[:3])} and {len(beside) - 3} more) not loaded; open the folder "
                              "to load them")
    assert not [h for h in health(whole) if "opened alone" in h.what]
