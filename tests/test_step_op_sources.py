"""step_trace_time.csv, op_statistic.csv and operator_details.csv loaders, checked against the
profiler's own files read here with Python's csv module."""

import csv
import json
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from npu_tui.profile import load_profile
from npu_tui.profile.sources import kernel_details, op_statistic, operator_details, step_trace_time
from npu_tui.profile.sources.base import read_head

TEXT = Path("msinsight-pt-2rank-levels") / "text"
LEVELS = ("level0", "level1", "level2")
STEP_COLUMNS = {
    "Computing": "computing_us",
    "Communication(Not Overlapped)": "comm_not_overlapped_us",
    "Overlapped": "overlapped_us",
    "Communication": "comm_us",
    "Free": "free_us",
    "Stage": "stage_us",
    "Bubble": "bubble_us",
    "Communication(Not Overlapped and Exclude Receive)": "comm_not_overlapped_excl_recv_us",
    "Preparing": "preparing_us",
}


def output_dir(real: Path, level: str, rank: int) -> Path:
    return real / TEXT / level / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"


def read_rows(path: Path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def levels(real):
    """Each level's two-rank folder, loaded once (ranks come from profiler_info_{0,1}.json)."""
    return {lv: load_profile(real / TEXT / lv) for lv in LEVELS}


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("rank", (0, 1))
def test_step_trace_equals_file(levels, real, level, rank):
    (row,) = read_rows(output_dir(real, level, rank) / "step_trace_time.csv")
    con = levels[level].con
    names = ", ".join(STEP_COLUMNS.values())
    got = con.execute(
        f"SELECT step, {names}, source FROM step_trace WHERE rank = ?", [rank]
    ).fetchall()
    assert len(got) == 1
    step, *values, source = got[0]
    assert step == int(row["Step"]) == 50
    assert values == [float(row[c]) for c in STEP_COLUMNS]
    assert source == "step_trace_time.csv"


@pytest.mark.parametrize(
    "level, rank, expected",
    [  # PROVENANCE.md: the values step_trace_time.csv reports for Step 50, in µs
        ("level1", 0, (8873.756, 101963.203, 25744.050, 136581.0)),
        ("level1", 1, (8878.295, 96359.047, 26675.274, 131912.5)),
        ("level0", 0, (8827.473, 81515.607, 25908.102, 116251.25)),
    ],
)
def test_step_trace_provenance_values(levels, level, rank, expected):
    got = levels[level].con.execute(
        "SELECT computing_us, comm_not_overlapped_us, free_us, stage_us FROM step_trace "
        "WHERE rank = ? AND step = 50", [rank]
    ).fetchone()
    assert got == pytest.approx(expected, abs=5e-4)


def test_step_trace_columns_by_name(tmp_path):
    """A newer file: Device_id in front, columns in another order, Step as text or empty; a figure
    given that is no number skips its row, counted (kept NULL, the step had read as one without
    exposed communication)."""
    out = tmp_path / "r_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "step_trace_time.csv").write_text(
        "Device_id,Step,Free,Computing,Stage,Communication(Not Overlapped)\n"
        "4,step7,30.5,10.25,100.0,59.25\n"
        "4,,1,2,3,4\n"
        "4,8,5,6,7,x\n"
    )
    con = load_profile(tmp_path).con
    rows = con.execute(
        "SELECT device_id, step, free_us, computing_us, stage_us, comm_not_overlapped_us, "
        "overlapped_us FROM step_trace ORDER BY computing_us"
    ).fetchall()
    assert rows == [
        (4, None, 1.0, 2.0, 3.0, 4.0, None),
        (4, 7, 30.5, 10.25, 100.0, 59.25, None),
    ]
    assert con.execute("SELECT rows, skipped_rows FROM load_log WHERE kind = 'step_trace_time'").fetchone() == (2, 1)


STEP_HEADER = "Device_id,Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble\n"


@pytest.mark.parametrize("cell, step", [
    ("Free=12us", None), ("Free=2,300", None), ("Computing=1.01E+04", None), ("Stage=1.55E+04", None),
    ("Free=3e-05", 3), ("Step=5.5", "no step")])
def test_a_step_figure_that_does_not_read_skips_its_row_counted(tmp_path, cell, step):
    """A figure given as text ("12us"), grouped ambiguously ("2,300": 2.3 where a comma is a
    decimal point) or rounded by a spreadsheet ("1.01E+04") had loaded NULL (the step without its
    Free) or rounded: skipped, counted. Python's own exponent for a tiny value reads. A step
    written "5.5" had read as step 6: none."""
    out = tmp_path / "r_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    rows = {s: dict(Device_id="0", Step=str(s), Computing="10000", **{"Communication(Not Overlapped)": "3000"},
                    Overlapped="500", Communication="3500", Free="2000", Stage="15000", Bubble="0") for s in (2, 3, 4)}
    column, value = cell.split("=", 1)
    rows[3][column] = value
    (out / "step_trace_time.csv").write_text(STEP_HEADER + "".join(
        ",".join(f'"{v}"' if "," in v else v for v in r.values()) + "\n" for r in rows.values()))
    con = load_profile(tmp_path).con
    got = [s for (s,) in con.execute("SELECT step FROM step_trace ORDER BY step NULLS LAST").fetchall()]
    log = con.execute("SELECT rows, skipped_rows FROM load_log WHERE kind = 'step_trace_time'").fetchone()
    if step is None:
        assert got == [2, 4] and log == (2, 1)
    elif step == "no step":
        assert got == [2, 4, None] and log == (3, 0)
    else:
        assert got == [2, 3, 4] and log == (3, 0)


def test_a_step_trace_of_two_devices_keeps_the_ranks_own(tmp_path):
    """A file merged by hand from two devices' (each step twice): the rank's steps had been
    counted twice, each device's once, unsaid. The rank's device (its profiler_info's, else the
    file's first) is loaded, the other's rows said and counted."""
    out = tmp_path / "r_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "step_trace_time.csv").write_text(STEP_HEADER + "".join(
        f"{d},{s},{10000 + d},3000,500,3500,2000,15000,0\n" for d in (1, 0) for s in (2, 3)))
    con = load_profile(tmp_path).con
    assert con.execute("SELECT DISTINCT device_id FROM step_trace").fetchall() == [(1,)]
    rows, skipped, note = con.execute(
        "SELECT rows, skipped_rows, note FROM load_log WHERE kind = 'step_trace_time'").fetchone()
    assert (rows, skipped) == (2, 2)
    assert note == ("rows of device 0 beside this rank's device 1 (a file merged by hand?): another rank's, "
                    "not loaded")


@pytest.mark.parametrize("level", ("level1", "level2"))
@pytest.mark.parametrize("rank", (0, 1))
def test_op_statistic_equals_file(levels, real, level, rank):
    rows = read_rows(output_dir(real, level, rank) / "op_statistic.csv")
    got = {
        r[0]: r[1:]
        for r in levels[level].con.execute(
            "SELECT op_type, core_type, count, total_us, min_us, avg_us, max_us, ratio "
            "FROM op_statistic WHERE rank = ?", [rank]
        ).fetchall()
    }
    want = {
        r["OP Type"]: (r["Core Type"], int(r["Count"]), float(r["Total Time(us)"]),
                       float(r["Min Time(us)"]), float(r["Avg Time(us)"]),
                       float(r["Max Time(us)"]), pytest.approx(float(r["Ratio(%)"]) / 100))
        for r in rows
    }
    assert got == want
    assert sum(g[2] for g in got.values()) == pytest.approx(sum(float(r["Total Time(us)"]) for r in rows))


@pytest.mark.parametrize("level", ("level1", "level2"))
@pytest.mark.parametrize("rank", (0, 1))
def test_op_statistic_matches_kernel_details(levels, real, level, rank):
    """Every OP Type total is the sum of that Type's kernel durations in kernel_details.csv.

    The hcom_allReduce_ kernels are the exception: op_statistic.csv counts computation only and
    has no row for them (their sum is the step's Communication time instead)."""
    per_type = defaultdict(float)
    for r in read_rows(output_dir(real, level, rank) / "kernel_details.csv"):
        per_type[r["Type"]] += float(r["Duration(us)"])
    got = dict(levels[level].con.execute(
        "SELECT op_type, total_us FROM op_statistic WHERE rank = ?", [rank]).fetchall())
    assert set(per_type) - set(got) == {"hcom_allReduce_"}
    for op_type, total in got.items():
        assert total == pytest.approx(per_type[op_type], rel=1e-3), op_type
    comm = levels[level].con.execute(
        "SELECT comm_us FROM step_trace WHERE rank = ?", [rank]).fetchone()[0]
    assert per_type["hcom_allReduce_"] == pytest.approx(comm, rel=1e-3)


@pytest.mark.parametrize("level", LEVELS)
def test_operator_details_equals_file(levels, real, level):
    rows = read_rows(output_dir(real, level, 0) / "operator_details.csv")
    con = levels[level].con
    count, host_self, device_self, stacks = con.execute(
        "SELECT count(*), sum(host_self_us), sum(device_self_us), count(call_stack) "
        "FROM operators WHERE rank = 0").fetchone()
    assert count == len(rows) == 859
    assert host_self == pytest.approx(sum(float(r["Host Self Duration(us)"]) for r in rows))
    assert device_self == pytest.approx(sum(float(r["Device Self Duration(us)"]) for r in rows))
    assert stacks == sum(1 for r in rows if r["Call Stack"].strip())
    # The multi-line cells come through whole: the longest call stack, and shapes without breaks.
    longest = max((r["Call Stack"] for r in rows), key=len)
    assert con.execute("SELECT max_by(call_stack, length(call_stack)) FROM operators "
                       "WHERE rank = 0").fetchone()[0] == longest.strip()
    conv = next(r for r in rows if r["Name"] == "aten::conv2d")
    assert conv["Input Shapes"].count("\n") >= 2
    assert con.execute(
        "SELECT count(*) FROM operators WHERE rank = 0 AND name = 'aten::conv2d' AND input_shapes = ?",
        [conv["Input Shapes"].replace("\n", "")]).fetchone()[0] >= 1


@pytest.mark.parametrize("damage", ["row given twice", "Count=x", "Count=57.5", "Total Time(us)=1.42E+03"])
def test_an_op_statistic_row_that_does_not_read_is_skipped_and_kernel_details_not_blamed(real, tmp_path, capsys,
                                                                                            damage):
    """TransData's row given twice had counted its 57 kernels twice, and the report blamed
    kernel_details.csv for 57 rows "missing from it" (exit 2); a count or time that does not read
    had loaded NULL or rounded (57.5 as 58: one kernel "missing")."""
    from npu_tui.cli import main

    rank = shutil.copytree(real / TEXT / "level1" / "rank0_ascend_pt", tmp_path / "rank0_ascend_pt")
    stat = rank / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv"
    lines = stat.read_text().splitlines(keepends=True)
    row = next(i for i, line in enumerate(lines) if line.startswith("TransData,"))
    if damage == "row given twice":
        lines.insert(row + 1, lines[row])
    else:
        column, value = damage.split("=")
        cells = lines[row].rstrip("\r\n").split(",")
        cells[lines[0].rstrip("\r\n").split(",").index(column)] = value
        lines[row] = ",".join(cells) + "\n"
    stat.write_text("".join(lines))
    assert main(["report", str(rank), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["complete"] is True
    assert [h["file"] for h in doc["health"] if h["severity"] != "info" and "kernel_details" in h["file"]] == []
    (said,) = [h for h in doc["health"] if h["file"].endswith("op_statistic.csv")]
    assert said["severity"] == "warning" and said["lost"] == 1


def test_sniffers_claim_only_their_own_files(real):
    own = {step_trace_time: "step_trace_time.csv", op_statistic: "op_statistic.csv",
           operator_details: "operator_details.csv"}
    files = sorted((real / TEXT).glob("level*/rank*_ascend_pt/ASCEND_PROFILER_OUTPUT/*.csv"))
    files += sorted((real / "mstt-advisor-fixtures").rglob("*.csv"))
    assert len(files) > 40
    for f in files:
        head = read_head(f)
        for module, name in own.items():
            assert module.sniff(head) == (f.name == name), (module.KIND, f)
    # kernel_details.csv shares Name and Input Shapes with operator_details.csv: neither claims the other.
    ops = read_head(output_dir(real, "level1", 0) / "operator_details.csv")
    assert not kernel_details.sniff(ops)


def bad_copies(src: Path):
    lines = src.read_bytes().splitlines(keepends=True)
    yield "empty", b""
    yield "header_only", lines[0]
    row = lines[2].rstrip(b"\r\n")
    ragged = lines[:2] + [row + b",extra" + lines[2][len(row):]] + lines[3:]
    yield "ragged", b"".join(ragged)
    broken = lines[:2] + [b"\xff\xfe" + lines[2]] + lines[3:]
    yield "non_utf8", b"".join(broken)


@pytest.mark.parametrize("name, kind, table", [
    ("op_statistic.csv", "op_statistic", "op_statistic"),
    ("step_trace_time.csv", "step_trace_time", "step_trace"),
])
def test_bad_csv_is_noted_not_raised(real, tmp_path, name, kind, table):
    src = output_dir(real, "level1", 0) / name
    if kind == "step_trace_time":
        # One data row only in the real file: add a second so a ragged row leaves one behind.
        good = src.read_bytes().splitlines(keepends=True)
        src = tmp_path / "src.csv"
        src.write_bytes(b"".join(good + [good[1].replace(b"50,", b"51,", 1)]))
    good_rows = len(src.read_bytes().splitlines()) - 1
    for case, data in bad_copies(src):
        out = tmp_path / "job" / f"{case}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
        out.mkdir(parents=True)
        (out / name).write_bytes(data)
    prof = load_profile(tmp_path / "job")
    log = {Path(f).parts[-3].rsplit("_ascend_pt")[0]: (k, rows, skipped, note)
           for f, k, rows, skipped, note in prof.con.execute(
               "SELECT file, kind, rows, skipped_rows, note FROM load_log WHERE rank IS NOT NULL").fetchall()}
    assert log["empty"] == (kind, 0, 0, "empty file")
    assert log["header_only"][:3] == (kind, 0, 0) and "header only" in log["header_only"][3]
    assert log["ragged"] == (kind, good_rows - 1, 1, "")
    # Kept, its first cell with those bytes written \xNN.
    assert log["non_utf8"] == (kind, good_rows, 0, "not UTF-8: 1 row with bytes of another encoding, kept "
                                                   "with those bytes written as \\xNN")
    for _, _, _, note in log.values():
        assert "\n" not in note
    assert prof.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 2 * good_rows - 1


def test_bad_operator_details(real, tmp_path):
    """A ragged row inside the multi-line cells costs that row only."""
    src = output_dir(real, "level1", 0) / "operator_details.csv"
    text = src.read_bytes()
    first_row_end = text.index(b'",1960.1,3332.4,0,0,0,0\n') + len(b'",1960.1,3332.4,0,0,0,0')
    out = tmp_path / "r_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "operator_details.csv").write_bytes(text[:first_row_end] + b",9" + text[first_row_end:])
    prof = load_profile(tmp_path)
    rows, skipped, note = prof.con.execute(
        "SELECT rows, skipped_rows, note FROM load_log WHERE kind = 'operator_details'").fetchone()
    assert (rows, skipped, note) == (len(read_rows(src)) - 1, 1, "")
    assert prof.con.execute("SELECT count(*) FROM operators WHERE name LIKE 'enumerate(DataLoader)%'"
                            ).fetchone()[0] == 0
