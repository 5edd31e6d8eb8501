"""The data-health summary: each problem a load logged, said once, with its cause and fix."""

import csv
import io
import shutil
from pathlib import Path

from npu_tui.profile import load_profile
from npu_tui.profile.health import NOT_STOPPED, health

ROOT = Path(__file__).resolve().parents[1]
L1 = "msinsight-pt-2rank-levels/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"


def rank_folder(real: Path, folder: Path, info=0) -> Path:
    out = folder / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    for name in ("kernel_details.csv", "step_trace_time.csv"):
        shutil.copyfile(real / L1 / name, out / name)
    if info is not None:
        (folder / f"profiler_info_{info}.json").write_text("{}")
    return folder


def test_clean_profile_has_nothing_to_say(real):
    assert health(load_profile(real / "msinsight-pt-2rank-levels/text/level1")) == []


def test_profile_still_being_written(tmp_path):
    rank = tmp_path / "node_1_ascend_pt"
    out = rank / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    data = (ROOT / "fixtures" / "bare_trace" / "trace_view.json").read_bytes()
    (out / "trace_view.json").write_bytes(data[: len(data) // 2])
    items = health(load_profile(rank))
    assert [(i.severity, i.rank) for i in items] == [("warning", None), ("warning", 0)]
    info, cut = items
    assert info.what == "node_1_ascend_pt: no profiler_info.json; rank taken from folder order"
    # One unfinished event dropped at the cut; nothing else in the first half is untimed.
    assert cut.line() == f"rank 0: trace_view.json was cut short: 1 event lost ({NOT_STOPPED})"
    assert info.fix == NOT_STOPPED and cut.lost == 1


def test_duplicate_rank_and_skipped_rows(real, tmp_path):
    run = tmp_path / "run"
    rank_folder(real, run / "a_ascend_pt")
    b = rank_folder(real, run / "b_ascend_pt")
    kd = b / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    rows = list(csv.reader(io.StringIO(kd.read_text(encoding="utf-8"), newline="")))
    for r in rows[1:4]:
        del r[-5:]  # three ragged rows
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    kd.write_text(out.getvalue(), encoding="utf-8")
    dup, skipped = health(load_profile(run))
    assert dup.rank is None and dup.what == "rank 0 claimed twice; renumbered"
    assert "remove the duplicate" in dup.fix
    assert (skipped.rank, skipped.severity, skipped.lost) == (1, "warning", 3)
    assert skipped.what.startswith("kernel_details.csv: 3 rows skipped")


def test_file_that_gave_nothing_is_an_error(real, tmp_path):
    rank = rank_folder(real, tmp_path / "r_ascend_pt")
    (rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").write_bytes(b"")
    (item,) = health(load_profile(rank))
    assert (item.severity, item.rank, item.what) == ("error", 0, "kernel_details.csv is empty")
    assert "killed" in item.fix and "\n" not in item.line()
