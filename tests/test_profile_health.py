"""The data-health summary: each problem a load logged, said once, with its cause and fix."""

import collections
import csv
import io
import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest

from npu_tui.profile import ProfileError, load_profile
from npu_tui.profile.health import NOT_STOPPED, failed, health, passing_failure

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


def test_clean_profile_has_nothing_to_say():
    assert health(load_profile(ROOT / "fixtures" / "diffusion_2rank")) == []


def test_a_partial_rank_set_names_the_missing_peers(real):
    """level1 holds ranks 0 and 1 of an 8-rank job: communication_matrix.json links rank 1 to 2–7,
    as its group numbers them (which of the job's ranks they are, no file here says; in this group,
    the job's whole, the same numbers)."""
    import json

    folder = real / "msinsight-pt-2rank-levels/text/level1"
    peers = set()
    for f in folder.glob("*/ASCEND_PROFILER_OUTPUT/communication_matrix.json"):
        for groups in json.loads(f.read_text()).values():
            for ops in groups.values():
                for links in ops.values():
                    for link in links:
                        peers |= {int(r) for r in link.split("-")}
    assert peers - {0, 1} == set(range(2, 8))  # from the files themselves
    (item,) = health(load_profile(folder))
    assert item.severity == "warning" and item.rank is None
    assert item.what == ("partial rank set: the communication data links to at least 6 ranks, not loaded (2 of "
                         "at least 8 ranks loaded)")
    assert item.fix.startswith("a rank not loaded is known only by its number within a communication group")


def test_profile_still_being_written(tmp_path):
    rank = tmp_path / "node_1_ascend_pt"
    out = rank / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    data = (ROOT / "fixtures" / "bare_trace" / "trace_view.json").read_bytes()
    (out / "trace_view.json").write_bytes(data[: len(data) // 2])
    items = health(load_profile(rank))
    # Cut short, how much it lost unknown: the run is incomplete.
    assert [(i.severity, i.rank) for i in items] == [("error", 0), ("warning", 0)]
    cut, info = items
    assert info.what == ("node_1_ascend_pt: no profiler_info.json; numbered as the first rank no other folder "
                         "claims, its own number unknown")
    # One unfinished event dropped at the cut; nothing else in the first half is untimed.
    assert cut.line() == ("rank 0: trace_view.json was cut short: what followed the cut is missing, how much the file "
                          f"cannot tell; 1 event skipped ({NOT_STOPPED})")
    assert info.fix == NOT_STOPPED and cut.lost == 1


def test_duplicate_rank_and_skipped_rows(real, tmp_path):
    run = tmp_path / "run"
    a = rank_folder(real, run / "a_ascend_pt")
    rank_folder(real, run / "b_ascend_pt")
    kd = a / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    rows = list(csv.reader(io.StringIO(kd.read_text(encoding="utf-8"), newline="")))
    for r in rows[1:4]:
        del r[-5:]  # three ragged rows
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    kd.write_text(out.getvalue(), encoding="utf-8")
    skipped, dup = health(load_profile(run))  # the rows lost first
    # Named by its folder, and by the folder that holds the rank: the profile's, not a rank's.
    assert (dup.rank, dup.severity) == (None, "warning")
    assert dup.what == "run/b_ascend_pt: rank 0 claimed twice, by a_ascend_pt too: not loaded"
    assert "remove the duplicate" in dup.fix
    assert (skipped.rank, skipped.severity, skipped.lost) == (0, "warning", 3)
    assert skipped.what.startswith("kernel_details.csv: 3 rows skipped")


@pytest.mark.parametrize("ragged", [0, 3])
def test_a_kernel_file_cut_at_a_line_end_is_said_by_op_statistic(real, tmp_path, ragged):
    """A copy of kernel_details.csv cut exactly at a line end reads as a whole file; op_statistic.csv
    counts each type's kernels, so the rows gone are said there, by type: all but the rows already
    said as skipped (``ragged`` of the rows kept). The run is incomplete, as with any cut."""
    rank = rank_folder(real, tmp_path / "r_ascend_pt")
    out = rank / "ASCEND_PROFILER_OUTPUT"
    shutil.copyfile(real / L1 / "op_statistic.csv", out / "op_statistic.csv")
    kd = out / "kernel_details.csv"
    rows = list(csv.reader(io.StringIO(kd.read_text(encoding="utf-8"), newline="")))
    kept, cut = rows[:151], rows[151:]
    for r in kept[1:1 + ragged]:
        del r[-5:]
    text = io.StringIO()
    csv.writer(text, lineterminator="\r\n").writerows(kept)
    kd.write_text(text.getvalue(), encoding="utf-8")
    # op_statistic counts compute kernels only, not the hcom_ ones.
    gone = [r for r in cut if r[7] != "HCCL"]
    # The types short: of the rows gone, and of the rows skipped (which the count leaves out).
    short = collections.Counter(r[5] for r in gone + kept[1:1 + ragged] if r[7] != "HCCL")
    types = sorted(short, key=lambda t: (-short[t], t))
    assert len(gone) > 10 and len(types) > 3
    items = health(load_profile(rank))
    (said,) = [i for i in items if "op_statistic" in i.what]
    # The kernel file is the one not loaded whole: an error, as a file cut mid-row is.
    assert (said.rank, said.severity, said.lost, said.file) == (0, "error", len(gone), str(kd))
    assert said.what == (f"op_statistic.csv: kernel_details.csv holds {len(gone)} kernels fewer than this file counts "
                         f"(of {', '.join(types[:3])} and {len(types) - 3} more types): rows missing from it that no "
                         "reader can see")
    assert [i.lost for i in items if i.what.startswith("kernel_details.csv")] == ([ragged] if ragged else [])


def test_a_kernel_file_with_rows_appended_is_said_by_op_statistic(real, tmp_path):
    """Another rank's rows appended without their header (`tail -n +2 b >> a`) read as this rank's
    kernels: op_statistic.csv counts fewer, so the kernel file is said to hold them twice over (an
    error: every figure of the rank counts them). Before, nothing was said."""
    rank = rank_folder(real, tmp_path / "r_ascend_pt")
    out = rank / "ASCEND_PROFILER_OUTPUT"
    shutil.copyfile(real / L1 / "op_statistic.csv", out / "op_statistic.csv")
    kd = out / "kernel_details.csv"
    other = (real / L1.replace("rank0", "rank1") / "kernel_details.csv").read_bytes()
    kd.write_bytes(kd.read_bytes() + other.split(b"\n", 1)[1])
    added = list(csv.reader(io.StringIO(other.decode("utf-8"), newline="")))[1:]
    # op_statistic counts compute kernels only, not the hcom_ ones.
    counted = collections.Counter(r[5] for r in added if r[7] != "HCCL")
    types = sorted(counted, key=lambda t: (-counted[t], t))
    (said,) = [i for i in health(load_profile(rank)) if "op_statistic" in i.what]
    assert (said.rank, said.severity, said.lost, said.file) == (0, "error", 0, str(kd))
    assert said.what == (f"op_statistic.csv: kernel_details.csv holds {sum(counted.values())} kernels more than this "
                         f"file counts (of {', '.join(types[:3])} and {len(types) - 3} more types): rows added to it "
                         "(another export's, appended?)")
    assert "the rows added to it count among the rank's kernels" in said.fix


@pytest.mark.parametrize("cell", ["Total Time(us)", "Count"])
def test_an_op_statistic_row_it_skipped_makes_no_kernel_file_too_long(real, tmp_path, cell):
    """A row op_statistic.csv could not read (a total N/A), or read without its count, counts no
    kernel there: the intact kernel file beside it is not said to hold rows added (it was, an
    error, exit 2)."""
    rank = rank_folder(real, tmp_path / "r_ascend_pt")
    out = rank / "ASCEND_PROFILER_OUTPUT"
    rows = list(csv.reader(io.StringIO((real / L1 / "op_statistic.csv").read_text(encoding="utf-8"), newline="")))
    rows[2][rows[0].index(cell)] = "N/A"
    text = io.StringIO()
    csv.writer(text, lineterminator="\r\n").writerows(rows)
    (out / "op_statistic.csv").write_text(text.getvalue(), encoding="utf-8")
    items = health(load_profile(rank))
    assert [i.what for i in items if "op_statistic" in i.what] == [
        "op_statistic.csv: 1 row skipped (ragged, cut or hand-edited rows, cells that are not numbers, or times "
        "written with an exponent)"] * (cell != "Count")
    assert not failed(items)


def test_a_kernel_file_cut_mid_row_is_said_with_what_op_statistic_counts_it_lost(real, tmp_path):
    """Cut inside a row, the file says it was cut short (an error), how much it lost it cannot tell,
    and its row cut in two was all its health counted ("1 row skipped", where a cut at a line end
    one row later was "N kernels fewer"): op_statistic.csv counts the kernels gone, and says so."""
    rank = rank_folder(real, tmp_path / "r_ascend_pt")
    out = rank / "ASCEND_PROFILER_OUTPUT"
    shutil.copyfile(real / L1 / "op_statistic.csv", out / "op_statistic.csv")
    kd = out / "kernel_details.csv"
    data = kd.read_bytes()
    kd.write_bytes(data[:len(data) // 2])
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    whole = len(list(csv.reader(io.StringIO(data[:len(data) // 2].decode("utf-8").rsplit("\n", 1)[0], newline=""))))
    # op_statistic counts compute kernels only, not the hcom_ ones; the row cut in two is skipped.
    gone = [r for r in rows[whole:] if r[7] != "HCCL"]
    items = health(load_profile(rank))
    assert [(i.severity, i.lost) for i in items if i.what.startswith("kernel_details.csv was cut short")] == [
        ("error", 1)]
    (said,) = [i for i in items if "op_statistic" in i.what]
    assert (said.severity, said.file, said.lost) == ("error", str(kd), len(gone) - 1)
    assert said.what.startswith(f"op_statistic.csv: kernel_details.csv holds {len(gone) - 1} kernels fewer than "
                                "this file counts (of ") and said.what.endswith("): what its cut lost")


def test_a_whole_kernel_file_matches_op_statistic(real):
    """Both of a real run's ranks, whole: op_statistic's counts are kernel_details' type by type."""
    p = load_profile(real / "msinsight-pt-2rank-levels/text/level1")
    assert p.con.execute("SELECT count(*) FROM op_statistic").fetchone()[0] > 0
    assert [i for i in health(p) if "op_statistic" in i.what] == []


@pytest.mark.parametrize("background", [False, True], ids=["report", "app"])
def test_a_kernel_file_cut_at_a_line_end_is_said_by_the_trace_beside_it(real, tmp_path, background):
    """Level0 writes no op_statistic.csv; its trace_view.json runs the same device tasks as
    kernel_details.csv, so those after the kernel file's last row are the rows it lost. (The
    app loads the trace after the first screen, the report at once: both say it.)"""
    rank = tmp_path / "rank0_ascend_pt"
    shutil.copytree(real / "msinsight-pt-2rank-levels/text/level0/rank0_ascend_pt", rank)
    assert not list(rank.rglob("op_statistic*.csv"))
    kd = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    rows = list(csv.reader(io.StringIO(kd.read_text(encoding="utf-8"), newline="")))
    text = io.StringIO()
    csv.writer(text, lineterminator="\r\n").writerows(rows[:97])
    kd.write_text(text.getvalue(), encoding="utf-8")
    p = load_profile(rank, background=background)
    if background:
        p.load_pending()
    (said,) = [i for i in health(p) if "kernels fewer" in i.what]
    # The kernel file is the one not loaded whole: an error, as a file cut mid-row is.
    assert (said.severity, said.lost, said.file) == ("error", len(rows) - 97, str(kd))
    assert said.what == (f"trace_view.json: kernel_details.csv holds {len(rows) - 97} kernels fewer than this file's "
                         "device tasks, which run on after its last row: rows missing from it that no reader can see")


def test_a_kernel_file_ending_in_a_comm_op_is_whole(real, tmp_path):
    """The HCCL plane rounds its times 1 ns off the kernel file's: a whole pair of files that ends
    in a comm op (a parallel decode ends in an all-gather) has no task after the file's last row."""
    import json
    from decimal import Decimal

    rank = tmp_path / "rank0_ascend_pt"
    shutil.copytree(real / "msinsight-pt-2rank-levels/text/level0/rank0_ascend_pt", rank)
    out = rank / "ASCEND_PROFILER_OUTPUT"
    rows = list(csv.reader(io.StringIO((out / "kernel_details.csv").read_text(encoding="utf-8"), newline="")))
    start = rows[0].index("Start Time(us)")
    events = json.loads((out / "trace_view.json").read_text(encoding="utf-8"))
    traced = {e["name"]: Decimal(e["ts"]) for e in events if str(e.get("name")).startswith("hcom_")}
    # The last comm op whose times differ in the two files: the file is cut after it, the trace too.
    last = max((r for r in rows[1:] if r[1] in traced and traced[r[1]] != Decimal(r[start].strip())),
               key=lambda r: Decimal(r[start].strip()))
    assert traced[last[1]] - Decimal(last[start].strip()) == Decimal("0.001")
    text = io.StringIO()
    csv.writer(text, lineterminator="\r\n").writerows(
        [rows[0]] + [r for r in rows[1:] if Decimal(r[start].strip()) <= Decimal(last[start].strip())])
    (out / "kernel_details.csv").write_text(text.getvalue(), encoding="utf-8")
    trace = [e for e in events if not ("dur" in e and Decimal(str(e["ts"])) > traced[last[1]])]
    (out / "trace_view.json").write_text(json.dumps(trace), encoding="utf-8")
    assert [i for i in health(load_profile(rank)) if "fewer" in i.what] == []


@pytest.mark.parametrize("level", ["level0", "level1", "level2"])
def test_whole_kernel_files_match_the_trace_beside_them(real, level):
    """Every rank of the real runs, whole (Level0 has no op_statistic.csv, only the trace to check)."""
    p = load_profile(real / "msinsight-pt-2rank-levels/text" / level)
    assert [i for i in health(p) if "kernels fewer" in i.what] == []


def test_ranks_of_two_runs_are_said_and_not_compared(real, tmp_path):
    """Rank 0 of one run copied beside rank 1 of a run 57 minutes later (at another profiler
    level): nothing failed to load, but their figures are of other steps. Compared, they made a
    5.7% exposed-comm imbalance, and rank 0 was told to copy the communication.json its Level0
    never wrote."""
    from npu_tui.session import open_session

    levels = real / "msinsight-pt-2rank-levels/text"
    shutil.copytree(levels / "level0/rank0_ascend_pt", tmp_path / "rank0_ascend_pt")
    shutil.copytree(levels / "level1/rank1_ascend_pt", tmp_path / "rank1_ascend_pt")
    s = open_session(tmp_path, cache=False)
    said = [i for i in s.health if i.rank == 0]
    assert [(i.severity, i.what) for i in said] == [
        ("warning", "another run's: its kernels ran 57.3 min before those of rank 1; not compared with them")]
    assert s.report["complete"] and s.report["cluster"]["spread"] == []
    assert [(r["rank"], r["apart"]) for r in s.report["cluster"]["ranks"]] == [(0, "another run"), (1, None)]
    assert [f["rule"] for f in s.report["findings"] if f["metric"] == "spread"] == []
    whole = open_session(levels / "level1", cache=False)
    assert [i for i in whole.health if "another run" in i.what] == []
    assert [f["rule"] for f in whole.report["findings"] if f["metric"] == "spread"] == ["rank_comm_imbalance"]


def test_msprof_devices_of_two_hosts_are_one_run(real, tmp_path):
    """msprof times count from each host's boot: two hosts of one job are hours apart on them.
    Only times on the wall clock tell another run's rank."""
    import re

    job = tmp_path / "job"
    shutil.copytree(real / "mindinsight-msprof-2dev-hccl", job)
    for f in job.glob("PROF_*/device_1/timeline/*.json"):
        f.write_bytes(re.sub(rb'("ts":\s*"?)(\d+)', lambda m: m[1] + b"%d" % (int(m[2]) + 7200 * 10**6), f.read_bytes()))
    p = load_profile(job)
    first = dict(p.con.execute("SELECT rank, min(start_ns) FROM kernels GROUP BY rank").fetchall())
    assert first[1] - first[0] > 7000 * 10**9 and first[1] < 10**18
    assert [i for i in health(p) if "another run" in i.what] == []


def test_of_three_ranks_the_other_run_s_is_said_alone(real, tmp_path):
    """Level0's ranks 0 and 1, and Level1's rank 1 as rank 2 of a run 57 minutes later: the two
    ranks of the run are told nothing of the files only the other run's rank has."""
    levels = real / "msinsight-pt-2rank-levels/text"
    for r in (0, 1):
        shutil.copytree(levels / f"level0/rank{r}_ascend_pt", tmp_path / f"rank{r}_ascend_pt")
    other = tmp_path / "rank2_ascend_pt"
    shutil.copytree(levels / "level1/rank1_ascend_pt", other)
    for f in other.glob("profiler_info_1.json"):  # (its rank_id too: a name alone changed is said)
        info = json.loads(f.read_text())
        f.unlink()
        (other / "profiler_info_2.json").write_text(json.dumps({**info, "rank_id": 2}))
    from npu_tui.session import open_session

    s = open_session(tmp_path, cache=False)
    assert s.ranks == [0, 1, 2]
    assert [(i.rank, i.what) for i in s.health] == [
        (2, "another run's: its kernels ran 57.3 min after those of ranks 0, 1; not compared with them")]
    # Nothing that compares or ranks the ranks counts it: not the worst rank of a finding it shares
    # with this run's ranks, not the waits at the collectives, not the slowest rank of a step.
    shared = [f for f in s.findings if set(f["ranks"]) - {2}]
    assert shared and all(f["rank"] != 2 for f in shared)
    assert 2 in {r for f in s.findings for r in f["ranks"]}  # its own figures are still there
    assert s.con.execute("SELECT count(*) FILTER (waits_for = 2), any_value(collectives) FILTER (rank = 2) "
                         "FROM rank_waits").fetchone() == (0, None)
    assert s.con.execute("SELECT max(ranks), count(*) FILTER (longest_rank = 2) FROM step_times").fetchone() == (2, 0)


def test_file_that_gave_nothing_is_an_error(real, tmp_path):
    rank = rank_folder(real, tmp_path / "r_ascend_pt")
    (rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").write_bytes(b"")
    (item,) = health(load_profile(rank))
    assert (item.severity, item.rank, item.what) == ("error", 0, "kernel_details.csv is empty")
    assert "killed" in item.fix and "\n" not in item.line()


def test_a_kernel_file_that_failed_says_which_file_gave_the_kernels_instead(tmp_path):
    """The trace's kernels stand in for a damaged kernel_details.csv: the error says so, and what
    they lack, or "could not be loaded" reads as a rank without kernels."""
    rank = shutil.copytree(ROOT / "fixtures" / "level0", tmp_path / "level0")
    (rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").write_bytes(b"\x00\x01garbage")
    profile = load_profile(rank)
    (item,) = health(profile)
    assert item.severity == "error" and item.file.endswith("kernel_details.csv")
    assert item.what.endswith("; its kernels come from trace_view.json instead, without their input shapes")
    assert profile.con.execute("SELECT count(*), count(input_shapes) FROM kernels").fetchone()[0] > 0
    # Without the trace there is nothing to stand in: the error is as it was.
    (rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").unlink()
    assert "instead" not in health(load_profile(rank))[0].what


def _rewrite_rows(kd: Path, change) -> int:
    """Apply ``change(row)`` to every data row of a kernel_details.csv; the number of rows."""
    rows = list(csv.reader(io.StringIO(kd.read_text(encoding="utf-8"), newline="")))
    for r in rows[1:]:
        change(rows[0], r)
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    kd.write_text(out.getvalue(), encoding="utf-8")
    return len(rows) - 1


def test_a_file_whose_every_row_was_skipped_gave_nothing_an_error(real, tmp_path):
    rank = rank_folder(real, tmp_path / "r_ascend_pt")
    kd = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    n = _rewrite_rows(kd, lambda head, r: r.__setitem__(head.index("Duration(us)"), "N/A"))
    (item,) = health(load_profile(rank))
    assert (item.severity, item.rank, item.lost) == ("error", 0, n)
    assert item.what.startswith(f"kernel_details.csv: every one of its {n} rows skipped")
    # Alone, it is a profile that loads nothing, and the message says why.
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copyfile(kd, alone / "kernel_details.csv")
    with pytest.raises(ProfileError, match=f"every one of its {n} rows skipped"):
        load_profile(alone / "kernel_details.csv")


def test_rows_in_another_encoding_are_said_to_be_not_utf8(real, tmp_path):
    rank = rank_folder(real, tmp_path / "r_ascend_pt")
    kd = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    lines = kd.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b",", "\u77e9\u9635,".encode("gbk"), 1)  # a name saved as GBK
    kd.write_bytes(b"\n".join(lines))
    p = load_profile(rank)
    (item,) = health(p)
    assert (item.severity, item.lost) == ("warning", 0)
    assert item.what == ("kernel_details.csv holds text that is not UTF-8 (1 row with bytes of another encoding, "
                         "read as GBK)") and "UTF-8" in item.fix
    # The row is loaded, its time with it.
    rows = sum(1 for _ in csv.DictReader(io.StringIO(kd.read_bytes().decode("utf-8", "replace"), newline="")))
    assert p.con.execute("SELECT count(*) FROM kernels").fetchone()[0] == rows


def test_a_rank_without_kernels_is_said(real, tmp_path):
    run = tmp_path / "run"
    rank_folder(real, run / "a_ascend_pt")
    b = rank_folder(real, run / "b_ascend_pt", info=1)
    (b / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").unlink()  # step_trace_time.csv alone
    (item,) = health(load_profile(run))
    assert (item.severity, item.rank) == ("warning", 1) and item.what.startswith("no kernels")
    assert "kernel_details.csv" in item.fix


def test_a_rank_without_kernels_is_said_beside_another_files_failure(real, tmp_path):
    """A damaged communication.json does not say that the rank has no kernels; a damaged
    kernel_details.csv does, and then the warning would only repeat it."""
    run = tmp_path / "run"
    rank_folder(real, run / "a_ascend_pt")
    out = rank_folder(real, run / "b_ascend_pt", info=1) / "ASCEND_PROFILER_OUTPUT"
    (out / "kernel_details.csv").unlink()
    (out / "communication.json").write_text('{"step1": {')
    items = health(load_profile(run))
    # Rank 0 has no communication.json, which rank 1 has (damaged): said too.
    assert [(i.severity, i.rank, i.file.endswith("communication.json")) for i in items] == [
        ("error", 1, True), ("warning", 0, False), ("warning", 1, False)]
    assert items[1].what.startswith("no communication.json, which 1 other rank has")
    assert items[2].what.startswith("no kernels")
    (out / "communication.json").unlink()
    (out / "kernel_details.csv").write_text("Name,Type\n")  # header only: nothing loaded
    items = health(load_profile(run))
    assert [i.what.startswith("no kernels") for i in items] == [False]


def test_a_file_missing_beside_raw_data_may_be_one_the_parse_has_not_written(real, tmp_path):
    """No analyse.done tells a parse still running (older torch_npu write none, and its files may
    stand still for a while): where the raw data lies beside a missing file, the fix says both."""
    from npu_tui.profile.discover import PARSE_DONE

    run = tmp_path / "run"
    rank_folder(real, run / "a_ascend_pt")
    b = rank_folder(real, run / "b_ascend_pt", info=1)
    shutil.copyfile(real / L1 / "trace_view.json", run / "a_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "trace_view.json")
    plain = "copy the rank's trace_view.json too, from where the profiler wrote it"

    def fix():
        (item,) = [i for i in health(load_profile(run)) if "trace_view.json" in i.what]
        assert (item.rank, item.what) == (1, "no trace_view.json, which 1 other rank has: its figures that need "
                                             "it are missing")
        return item.fix

    assert fix() == plain
    (b / "PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP").mkdir()
    assert fix() == ("if its parse is still running (its raw PROF_* data is there, no analyse.done), open it "
                     "again once the parse has finished; else " + plain)
    for rank in ("a_ascend_pt", "b_ascend_pt"):  # both parses said to have finished
        (run / rank / "ASCEND_PROFILER_OUTPUT" / PARSE_DONE).write_text("")
    assert fix() == plain


def test_raw_data_without_analyse_done_is_in_doubt(real, tmp_path):
    """A parse stands still for seconds between its files, longer than the look for files growing:
    a rank whose raw data (PROF_*) has no analyse.done, its files written a minute ago, was loaded
    as complete (its kernel file half-written, exit 0, cached). Now the run is incomplete until the
    parse ends, and, its files older, said to be in doubt (older torch_npu write no analyse.done)."""
    import time

    from npu_tui.cli import main
    from npu_tui.profile.discover import PARSE_DONE

    rank = _rank_copy(real, tmp_path / "r_ascend_pt")
    (rank / "PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP").mkdir()
    out = rank / "ASCEND_PROFILER_OUTPUT"
    minute_ago = time.time() - 60
    for f in out.iterdir():
        os.utime(f, (minute_ago, minute_ago))
    def said(p):  # (the sample is 1 rank of 8: a partial rank set, said too)
        return [i for i in health(p) if "partial rank set" not in i.what]

    p = load_profile(rank)
    (item,) = said(p)
    assert (item.severity, item.rank, item.file) == ("error", 0, str(out))
    assert item.what == ("r_ascend_pt/ASCEND_PROFILER_OUTPUT: parse may be in progress: its files were written 60 s "
                         "ago, and no analyse.done yet")
    assert passing_failure(p)  # not cached: it passes
    assert main(["report", str(rank), "--format", "json"]) == 2
    hour_ago = time.time() - 3600
    for f in out.iterdir():
        os.utime(f, (hour_ago, hour_ago))
    (item,) = said(load_profile(rank))
    assert (item.severity, item.rank) == ("warning", 0)
    assert item.what.startswith("r_ascend_pt/ASCEND_PROFILER_OUTPUT: no analyse.done beside its files and raw data")
    (out / PARSE_DONE).write_text("")
    assert said(load_profile(rank)) == []


def _rank_copy(real, dest):
    shutil.copytree(real / "msinsight-pt-2rank-levels/text/level1/rank0_ascend_pt", dest)
    return dest


def test_a_rank_whose_parse_has_not_finished_is_left_out_and_said(real, tmp_path):
    """The other rank has its analyse.done (this torch_npu writes one), this one not yet: it is
    left out, not half-loaded as if complete, and the run is incomplete."""
    from npu_tui.profile.discover import PARSE_DONE

    done = _rank_copy(real, tmp_path / "a_ascend_pt")
    (done / "ASCEND_PROFILER_OUTPUT" / PARSE_DONE).write_text("")
    _rank_copy(real, tmp_path / "b_ascend_pt")
    (tmp_path / "b_ascend_pt" / "profiler_info_0.json").rename(tmp_path / "b_ascend_pt" / "profiler_info_1.json")
    p = load_profile(tmp_path)
    assert p.ranks == [0]
    (item,) = [h for h in health(p) if h.severity == "error"]
    assert item.file.endswith("b_ascend_pt") and "parse in progress" in item.what


def test_raw_data_without_its_parse_is_in_progress(real, tmp_path):
    rank = _rank_copy(real, tmp_path / "r_ascend_pt")
    shutil.rmtree(rank / "ASCEND_PROFILER_OUTPUT")
    (rank / "PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP" / "device_0").mkdir(parents=True)
    with pytest.raises(ProfileError, match="parse in progress or never run"):
        load_profile(rank)


def test_files_still_growing_are_in_progress(real, tmp_path):
    rank = _rank_copy(real, tmp_path / "r_ascend_pt")
    with _written(rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"):
        with pytest.raises(ProfileError, match="still growing"):
            load_profile(rank)
        with pytest.raises(ProfileError, match="still growing"):  # its output folder is the rank too
            load_profile(rank / "ASCEND_PROFILER_OUTPUT")
    # A copy made just now does not grow: it loads.
    fresh = _rank_copy(real, tmp_path / "copy" / "r_ascend_pt")
    assert load_profile(fresh).ranks == [0]


@pytest.mark.parametrize("damage", ["written in part", "permission denied", "not an object", "empty"])
def test_a_profiler_info_that_cannot_be_read_is_said(real, tmp_path, monkeypatch, damage):
    """The rank still loads, numbered by the file's name, but its settings (level, versions) are
    unknown: a warning, not a quiet NULL. Its fix is chmod only where the read was refused; a file
    read whole but empty or damaged was not written to its end (the profiler writes it as it stops)."""
    rank = _rank_copy(real, tmp_path / "r_ascend_pt")
    (rank / "profiler_info_0.json").rename(rank / "profiler_info_3.json")
    info = rank / "profiler_info_3.json"
    if damage == "written in part":
        info.write_bytes(info.read_bytes()[:40])
    elif damage == "not an object":
        info.write_text("[1, 2]")
    elif damage == "empty":
        info.write_text(" \n")
    else:  # tests run as root, where chmod 000 does not stop reads: the read is refused here
        read_text = Path.read_text

        def refusing(self, *args, **kwargs):
            if self == info:
                raise PermissionError(13, "Permission denied", str(self))
            return read_text(self, *args, **kwargs)
        monkeypatch.setattr(Path, "read_text", refusing)
    p = load_profile(rank)
    assert p.ranks == [3]
    (item,) = [h for h in health(p) if h.file == str(info)]
    assert item.severity == "warning" and item.what.startswith("profiler_info_3.json cannot be read: ")
    assert {"written in part": "not valid JSON", "permission denied": "Permission denied",
            "not an object": "not a JSON object", "empty": "empty"}[damage] in item.what
    assert ("chmod" in item.fix) == (damage == "permission denied")
    assert ("stopped cleanly" in item.fix) == (damage != "permission denied")


def test_what_could_not_be_loaded_is_counted_as_files_and_folders(tmp_path):
    """A rank folder whose parse is running, or that cannot be read, is no file."""
    from npu_tui.text import lost_phrase

    (tmp_path / "rank0_ascend_pt").mkdir()
    (tmp_path / "trace_view.json").write_text("{")
    folder, file, gone = (str(tmp_path / n) for n in ("rank0_ascend_pt", "trace_view.json", "x.csv"))
    assert lost_phrase([file]) == "1 file"
    assert lost_phrase([folder]) == "1 folder"
    assert lost_phrase([file, gone, folder]) == "2 files and 1 folder"


def test_a_file_other_ranks_have_and_one_rank_lacks_is_said(tmp_path):
    """The demo with one rank's trace_view.json gone: that rank's stages fall to one "All" and it
    drops out of every finding, in a report that said nothing (complete, health empty)."""
    from npu_tui.demo import PATH as DEMO

    demo = shutil.copytree(DEMO, tmp_path / "demo")
    (trace,) = demo.glob("*3096504*/ASCEND_PROFILER_OUTPUT/trace_view.json")
    trace.unlink()
    (item,) = health(load_profile(demo))
    assert (item.severity, item.rank) == ("warning", 0)
    assert item.what.startswith("no trace_view.json, which 1 other rank has") and "trace_view.json" in item.fix
    assert health(load_profile(DEMO)) == []
    # In its place, something that is not a file: discovery leaves it out and says so, once.
    os.mkfifo(trace)
    (item,) = health(load_profile(demo))
    assert (item.severity, item.rank) == ("error", 0)
    assert "trace_view.json is a named pipe, not a file: left out" in item.what


def test_files_dated_ahead_of_this_clock_are_not_waited_on(real, tmp_path, monkeypatch):
    """Files whose times are hours ahead (copied with cp -p or rsync -a from a machine whose clock
    runs ahead) had read as written just now: each rank folder waited for them to grow, 0.3 s a
    rank on every open, cached or not."""
    import os
    import time

    from npu_tui.profile import discover as discovery

    rank = _rank_copy(real, tmp_path / "r_ascend_pt")
    ahead = time.time() + 2 * 3600
    for f in (rank / "ASCEND_PROFILER_OUTPUT").iterdir():
        os.utime(f, (ahead, ahead))
    waits = []
    monkeypatch.setattr(discovery.time, "sleep", waits.append)
    assert load_profile(rank).ranks == [0] and waits == []


def test_one_file_dated_ahead_does_not_hide_one_still_growing(real, tmp_path):
    """The check looks at each file: one copied from a machine whose clock runs ahead beside one the
    parse is still writing is a parse in progress all the same."""
    import os
    import time

    from npu_tui.profile.discover import _growing

    growing, ahead = tmp_path / "kernel_details.csv", tmp_path / "op_statistic.csv"
    growing.write_text("x")
    ahead.write_text("y")
    os.utime(ahead, (time.time() + 86400, time.time() + 86400))
    with _written(growing):
        assert _growing([growing, ahead])


@contextmanager
def _written(path: Path):
    """``path`` written to as the profiler's parse writes, while the block runs."""
    import threading
    import time

    stop, started = threading.Event(), threading.Event()

    def write():
        with open(path, "a") as f:
            while not stop.is_set():
                f.write(" ")
                f.flush()
                started.set()
                time.sleep(0.02)

    t = threading.Thread(target=write)
    t.start()
    started.wait(10)  # under load the thread may not have written before the folder is looked at
    try:
        yield
    finally:
        stop.set()
        t.join()


def _without_step_ids(demo: Path) -> Path:
    """The demo's rank 0 kernel file without its Step Id column (re-exported by a tool)."""
    (path,) = demo.glob("*3096504*/ASCEND_PROFILER_OUTPUT/kernel_details.csv")
    rows = list(csv.reader(path.open(newline="", encoding="utf-8")))
    step = rows[0].index("Step Id")
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([r[:step] + r[step + 1:] for r in rows])
    return path


def test_kernels_without_steps_beside_a_step_trace_of_several_are_said(tmp_path):
    """A kernel file without its Step Id column beside a step trace of several steps, and no trace
    to number them by: the step account was the whole profile's, as one step, 'per step', with
    nothing said and nothing checked."""
    from npu_tui.demo import PATH as DEMO

    demo = shutil.copytree(DEMO, tmp_path / "demo")
    path = _without_step_ids(demo)
    path.with_name("trace_view.json").unlink()
    (trace,) = demo.glob("*3096504*/ASCEND_PROFILER_OUTPUT/step_trace_time.csv")
    steps = len(list(csv.reader(trace.open(newline="", encoding="utf-8")))) - 1
    (item,) = [i for i in health(load_profile(demo)) if "no step" in i.what]
    assert (item.severity, item.rank, item.file) == ("warning", 0, str(path))
    assert item.what == (f"kernel_details.csv gives its kernels no step, where its step trace gives {steps}: the "
                         "figures of its kernels (the step account, the findings per step) are the whole profile's, "
                         "as one step")
    assert not [i for i in health(load_profile(DEMO)) if "no step" in i.what]


@pytest.mark.parametrize("background", [False, True])
def test_kernels_without_steps_take_them_from_the_trace(tmp_path, background):
    """Beside a trace, a kernel file without Step Id gets each kernel's step as torch_npu numbers
    it: the ProfilerStep range that holds its launch (the trace's flow to it). Checked against the
    file's own Step Id column, before it was taken out; said, as by design."""
    from npu_tui.demo import PATH as DEMO

    demo = shutil.copytree(DEMO, tmp_path / "demo")
    original = load_profile(DEMO)
    path = _without_step_ids(demo)
    profile = load_profile(demo, background=background)
    profile.load_pending()
    query = "SELECT rank, start_ns, name, step FROM kernels ORDER BY ALL"
    assert profile.con.execute(query).fetchall() == original.con.execute(query).fetchall()
    (item,) = [i for i in health(profile) if i.file == str(path)]
    assert item.severity == "info"
    assert item.what == ("kernel_details.csv: no Step Id column; each kernel's step is the trace's ProfilerStep "
                         "range holding its launch (930 kernels of 930)")
    assert not [i for i in health(profile) if "no step" in i.what]
