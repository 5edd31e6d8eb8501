"""memory_record.csv (what profile_memory=True records): every row loaded, the peaks as the file
says them, npu_module_mem.csv kept apart, bad input counted."""

import csv
from collections import defaultdict
from decimal import Decimal

import pytest

from npu_tui.profile import ProfileError, load_profile

LEVELS = ("level0", "level1", "level2")
HEADER = "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),Stream Ptr,Device Type\n"


def _file_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("level", LEVELS)
def test_memory_record_holds_every_row_and_the_files_peaks(real, level):
    folder = real / "msinsight-pt-2rank-levels" / "text" / level
    p = load_profile(folder)
    for rank in (0, 1):
        rows = _file_rows(folder / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv")
        peak = defaultdict(float)
        for r in rows:
            if r["Total Reserved(MB)"]:
                peak[r["Component"]] = max(peak[r["Component"]], float(r["Total Reserved(MB)"]))
        got = dict(p.con.execute("SELECT component, max(reserved_bytes) FROM memory_record WHERE rank = ? "
                                 "GROUP BY ALL", [rank]).fetchall())
        assert p.con.execute("SELECT count(*) FROM memory_record WHERE rank = ?", [rank]).fetchone()[0] == len(rows)
        # kept as bytes: the file's MB are 2^20 bytes, and its values whole bytes
        assert {c: v for c, v in got.items() if v is not None} == {c: round(mb * 2**20) for c, mb in peak.items()}
        # Times exact to the ns, as written (with the profiler's trailing TAB).
        first = min(int(Decimal(r["Timestamp(us)"].strip()) * 1000) for r in rows)
        assert p.con.execute("SELECT min(ts_ns) FROM memory_record WHERE rank = ?", [rank]).fetchone()[0] == first
    # npu_module_mem.csv (per device module) shares three columns with it, and stays out.
    assert not p.con.execute("SELECT count(*) FROM memory_record WHERE component = 'SLOG'").fetchone()[0]


def test_bad_rows_are_counted_and_a_header_only_file_is_said(tmp_path):
    rank = tmp_path / "node_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    rank.mkdir(parents=True)
    (rank / "memory_record.csv").write_text(
        HEADER + "PTA,1736408883573957.920\t,10.0,20.0,10.0,1,NPU:0\n"
        "PTA,not a time,11.0,21.0,11.0,1,NPU:0\n"
        "PTA,1736408883573958.920,12.5,22.5,12.5,1,NPU:0\n")
    p = load_profile(rank.parent)
    assert p.con.execute("SELECT count(*), max(reserved_bytes) FROM memory_record").fetchone() == (2, 22.5 * 2**20)
    (log,) = p.con.execute("SELECT rows, skipped_rows FROM load_log WHERE kind = 'memory_record'").fetchall()
    assert log == (2, 1)
    (rank / "memory_record.csv").write_text(HEADER)
    with pytest.raises(ProfileError, match="memory_record.csv: header only, no memory records"):
        load_profile(rank.parent)


def test_mindspores_framework_components(real, tmp_path):
    """MindSpore's memory_record.csv names its framework's allocators MindSpore and MindSpore+GE
    (its ascend_memory_viewer), where torch_npu's are PTA and PTA+GE: they had been passed over,
    the peak read as the whole process's (APP) and no allocated figure, so no memory finding could
    fire."""
    import shutil

    from npu_tui.session import open_session

    src = real / "msinsight-pt-2rank-levels" / "text" / "level1" / "rank0_ascend_pt"
    dst = tmp_path / "rank0_ascend_ms"
    shutil.copytree(src, dst)
    mr = dst / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv"
    lines = mr.read_text().splitlines(keepends=True)
    renamed = [lines[0]] + [line.replace("PTA+GE,", "MindSpore+GE,", 1) if line.startswith("PTA+GE,")
                            else line.replace("PTA,", "MindSpore,", 1) if line.startswith("PTA,") else line
                            for line in lines[1:]]
    assert sum(line.startswith("MindSpore") for line in renamed) > 100
    mr.write_text("".join(renamed))
    q = "SELECT * FROM memory_peaks ORDER BY ALL"
    got = open_session(dst, cache=False).con.execute(q).fetchall()
    assert got == open_session(src, cache=False).con.execute(q).fetchall()
    assert got[0][2] is not None  # allocated, which APP does not give



OPERATOR_HEADER = ("Name,Size(KB),Allocation Time(us),Release Time(us),Active Release Time(us),Duration(us),"
                   "Active Duration(us),Allocation Total Allocated(MB),Allocation Total Reserved(MB),"
                   "Allocation Total Active(MB),Release Total Allocated(MB),Release Total Reserved(MB),"
                   "Release Total Active(MB),Stream Ptr,Device Type\n")


def _operator_row(size="2.0", release="1736408883574000.000", duration="42.08", reserved="1452.0"):
    return (f"aten::empty,{size},1736408883573957.920\t,{release}\t,{release},{duration},{duration},"
            f"954.37,{reserved},954.37,954.37,{reserved},954.37,897357296,NPU:0\n")


# Each file: a good row, then rows whose cells give a value that does not read as one (a unit
# after it, an exponent, a sign no amount has). Kept with the cell NULL, each had read as "not
# recorded" (a peak from the other rows, an allocation never released, an index to the graph's end).
BAD_CELLS = {
    "memory_record.csv": (HEADER, "PTA+GE,1736408883573957.920\t,10.0,20.0,10.0,1,NPU:0\n", [
        "PTA+GE,1736408883573958.920,1261.04 MB,1300.0,10.0,1,NPU:0\n",
        "PTA+GE,1736408883573959.920,10.0,-1452.0,10.0,1,NPU:0\n",
        "PTA+GE,1736408883573960.920,10.0,20.0,1e999,1,NPU:0\n"]),
    "npu_module_mem.csv": ("Component,Timestamp(us),Total Reserved(MB),Device\n", "SLOG,1736408883657086.220\t,2.0,NPU:0\n", [
        "APP,1736408883657087.220\t,28339.77MB,NPU:0\n", "APP,1736408883657088.220\t,-5.0,NPU:0\n"]),
    "operator_memory.csv": (OPERATOR_HEADER, _operator_row(), [
        _operator_row(release="1.736408883736794e+15"), _operator_row(release="1736408883574000.000us"),
        _operator_row(size="-2.0"), _operator_row(duration="42us"), _operator_row(reserved="-1.0")]),
    "static_op_mem.csv": ("Device_id,Op Name,Model Name,Graph ID,Node Index Start,Node Index End,Size(KB)\n",
                          "0,MatMul_1,0,1,3,4294967295,1024.0\n", [
        "0,Add_2,0,1,4,12us,16.0\n", "0,Cast_3,0,1,x5,9,16.0\n", "0,Mul_4,0,1,5,9,-16.0\n"]),
}


@pytest.mark.parametrize("name", list(BAD_CELLS))
def test_a_memory_cell_that_gives_no_value_skips_its_row_counted(tmp_path, name):
    header, good, bad = BAD_CELLS[name]
    out = tmp_path / "node_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / name).write_text(header + good + "".join(bad))
    p = load_profile(out.parent)
    kind = name[:-4]
    assert p.con.execute(f"SELECT count(*) FROM {kind}").fetchone() == (1,)
    assert p.con.execute("SELECT rows, skipped_rows FROM load_log WHERE kind = ?", [kind]).fetchall() == \
        [(1, len(bad))]


def test_a_memory_record_without_its_allocated_column_is_not_read_as_npu_module_mem(tmp_path):
    """Without Total Allocated, memory_record.csv's columns are npu_module_mem's: read as that by
    its content, its rows went into the per-module table, and the memory peaks were none, unsaid.
    By its name it is a memory_record table that lacks a column: said, the load failed."""
    out = tmp_path / "node_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "memory_record.csv").write_text("Component,Timestamp(us),Total Reserved(MB),Device Type\n"
                                           "PTA+GE,1736408883573957.920\t,20.0,NPU:0\n")
    with pytest.raises(ProfileError, match="memory_record.csv: not a memory_record table"):
        load_profile(out.parent)


@pytest.mark.parametrize("second", [HEADER.replace("(MB)", "(KB)"),
                                    "Timestamp(us),Component,Total Reserved(MB),Total Allocated(MB),Total Active(MB),"
                                    "Stream Ptr,Device Type\n"])
def test_a_table_joined_under_a_header_in_other_units_or_order_is_not_read(tmp_path, second):
    """Two exports in one file, the second's header in KB (or its columns in another order): its
    rows had loaded as MB (a peak a thousand times too high) or under the wrong columns, the
    header row alone skipped. Read up to it, said, the load not whole."""
    from npu_tui.profile.health import health

    out = tmp_path / "node_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "memory_record.csv").write_text(
        HEADER + "PTA+GE,1736408883573957.920\t,10.0,20.0,10.0,1,NPU:0\n"
        "PTA+GE,1736408883573958.920,12.0,22.0,12.0,1,NPU:0\n" + second
        + "PTA+GE,1736408883573959.920,12288.0,22528.0,12288.0,1,NPU:0\n" * 3)
    p = load_profile(out.parent)
    assert p.con.execute("SELECT count(*), max(reserved_bytes) FROM memory_record").fetchone() == (2, 22 * 2**20)
    (log,) = p.con.execute("SELECT rows, skipped_rows, note FROM load_log WHERE kind = 'memory_record'").fetchall()
    assert log == (2, 4, "a header in other units or order at row 3: another table joined to it (two exports in "
                         "one file?), not loaded")
    assert [i.severity for i in health(p) if i.file.endswith("memory_record.csv")] == ["error"]


def test_a_second_devices_memory_in_a_ranks_file_is_left_out_and_said(real, tmp_path):
    """A process that put part of its pipeline on another device records that device's memory in
    the same memory_record.csv: its samples were one series with the rank's own, the rank's peak
    the other device's. The figures are its own device's (the peaks read from the file here); the
    other's rows are said, and its operators' allocations left out with them."""
    import shutil

    from npu_tui.profile.health import health
    from npu_tui.session import open_session

    folder = shutil.copytree(real / "msinsight-pt-2rank-levels" / "text" / "level1", tmp_path / "level1")
    path = folder / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv"
    with open(path, newline="") as f:
        header, *rows = list(csv.reader(f))
    col = {c: i for i, c in enumerate(header)}
    own = [r for r in rows if r[col["Component"]] == "PTA+GE"]
    assert {r[col["Device Type"]] for r in own} == {"NPU:0"}
    other = [[*r[:col["Total Allocated(MB)"]], str(3 * float(r[col["Total Allocated(MB)"]])),
              str(3 * float(r[col["Total Reserved(MB)"]])), *r[col["Total Reserved(MB)"] + 1:col["Device Type"]],
              "NPU:1", *r[col["Device Type"] + 1:]] for r in own]
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([header, *rows, *other])
    s = open_session(folder, cache=False)
    peak = s.con.execute("SELECT peak_allocated_mb, peak_reserved_mb FROM memory_peaks "
                         "WHERE rank = 0 AND stage IS NULL").fetchone()
    assert peak == pytest.approx((max(float(r[col["Total Allocated(MB)"]]) for r in own),
                                  max(float(r[col["Total Reserved(MB)"]]) for r in own)))
    (item,) = [i for i in health(s.profile) if "NPU:1" in i.what]
    assert (item.severity, item.rank) == ("warning", 0)
    assert f"memory of NPU:1 ({len(other):,} records)" in item.what and "figures are NPU:0's" in item.what


def test_records_that_name_no_device_are_the_ranks_own(real, tmp_path):
    """Rows whose Device Type is empty beside rows naming NPU:0 were "another device" (said as
    the memory "of  (3 records)") and left out of the series."""
    import shutil

    from npu_tui.profile.health import health
    from npu_tui.session import open_session

    folder = shutil.copytree(real / "msinsight-pt-2rank-levels" / "text" / "level1", tmp_path / "level1")
    path = folder / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv"
    with open(path, newline="") as f:
        header, *rows = list(csv.reader(f))
    device = header.index("Device Type")
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([header, *[r[:device] + [""] + r[device + 1:] if i % 2 else r
                                          for i, r in enumerate(rows)]])
    q = "SELECT rank, peak_allocated_mb, peak_reserved_mb FROM memory_peaks WHERE stage IS NULL ORDER BY rank"
    s = open_session(folder, cache=False)
    assert s.con.execute(q).fetchall() == open_session(real / "msinsight-pt-2rank-levels" / "text" / "level1",
                                                       cache=False).con.execute(q).fetchall()
    assert not [i for i in health(s.profile) if "memory of" in i.what]
