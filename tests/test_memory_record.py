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

