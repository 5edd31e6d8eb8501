"""msprof output: the older device_N/timeline layout (real MindSpore sample, 2 devices with HCCL)
and the mindstudio_profiler_output layout with op_summary_*.csv, checked against the files read
with Python's json and csv."""

import csv
import json
import os
import re
import shutil
import sqlite3
from decimal import Decimal
from pathlib import Path, PurePath

import pytest

from npu_tui.profile import ProfileError, load_profile
from npu_tui.profile.discover import discover

SAMPLE = "mindinsight-msprof-2dev-hccl"


def events(path: Path):
    evs = json.loads(path.read_text(encoding="utf-8"), parse_float=Decimal)
    procs = {e["pid"]: e["args"]["name"] for e in evs
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    return [dict(e, pname=procs.get(e["pid"]), tname=threads.get((e["pid"], e["tid"])))
            for e in evs if e.get("ph") == "X"]


def device_dirs(real: Path):
    return sorted((real / SAMPLE).glob("PROF_*/device_*"), key=lambda d: d.name)


def expected_kernels(dev: Path):
    """Operator tasks of Ascend Hardware (the others are named by their task type) and the
    collective ops of the HCCL communication thread, over every iteration's msprof_*.json."""
    out = []
    for f in sorted((dev / "timeline").glob("msprof_*.json")):
        for e in events(f):
            if e.get("cat"):
                continue
            if e["pname"] == "Ascend Hardware":
                if e["name"] != e["args"].get("Task Type") and not re.fullmatch(r"[A-Z][A-Z0-9_]*", e["name"]):
                    out.append((e["name"], int(round(e["ts"] * 1000)), e["args"]["Task Type"]))
            elif e["pname"] == "HCCL" and not e["tname"].startswith("Plane"):
                out.append((e["name"], int(round(e["ts"] * 1000)), "HCCL"))
    return out


@pytest.fixture(scope="module")
def sample(real):
    return load_profile(real / SAMPLE)


def test_two_prof_folders_load_as_two_ranks(real, sample):
    assert sample.layout == "msprof" and sample.ranks == [0, 1] and sample.formats == ["msprof"]
    for dev in device_dirs(real):
        info = json.loads(next(dev.glob("info.json.*")).read_text())
        rank, device = info["rank_id"], int(dev.name.split("_")[1])
        assert sample.con.execute("SELECT device_id FROM ranks WHERE rank = ?", [rank]).fetchone() == (device,)


def test_the_splits_of_a_merged_timeline_are_said_not_loaded(sample):
    """task_time_*, hccl_*, step_trace_* repeat the msprof_*.json of their iteration beside them:
    each logged with why it gave nothing (they were rows 0 and no word), and no problem of the run.
    msprof writes every iteration the same step_trace_*: those are copies of the first."""
    from npu_tui.profile.health import health

    split = sample.con.execute("SELECT rows, parse_filename(file), note FROM load_log WHERE regexp_matches("
                               "parse_filename(file), '^(task_time|hccl|step_trace)_')").fetchall()
    assert len(split) == 2 * 3 * 10
    for rows, name, note in split:
        merged = "msprof_" + name.split("_", 2 if name.startswith(("task_time", "step_trace")) else 1)[-1]
        assert rows == 0
        assert note == f"a split of {merged} beside it, which is loaded: not loaded too" or (
            name.startswith("step_trace_") and re.match(r"a copy of step_trace_\d+_\d+_1\.json beside it", note)), (name, note)
    assert {i.severity for i in health(sample) if "a split of" in i.what or "a copy of" in i.what} == {"info"}


def test_splits_named_otherwise_are_covered_by_any_merged_file(real, tmp_path):
    """Splits not named per iteration (their iteration cannot be told) beside a merged timeline:
    left for it, as before, not loaded twice."""
    from npu_tui.profile.health import health

    copy = tmp_path / SAMPLE
    shutil.copytree(real / SAMPLE, copy)
    whole = load_profile(copy, cache=False)
    (dev,) = [d for d in device_dirs(tmp_path) if d.name == "device_0"]
    timeline = dev / "timeline"
    for f in timeline.glob("*.json"):
        if not f.name.startswith("msprof_"):
            f.rename(timeline / re.sub(r"_0_2_(\d+)\.json$", r"_slice_\1.json", f.name))
    p = load_profile(copy, cache=False)
    q = "SELECT rank, name, start_ns, dur_ns, step FROM kernels ORDER BY ALL"
    assert p.con.execute(q).fetchall() == whole.con.execute(q).fetchall()
    said = {i.what for i in health(p) if "task_time_slice" in i.what}
    assert said and all(w.endswith("a split of the merged msprof_*.json beside it, which is loaded: not loaded too")
                        for w in said)


@pytest.mark.parametrize("damage", ["gone", "empty", "cut", "cut part-way"])
def test_an_iteration_without_its_merged_timeline_loads_from_its_splits(real, tmp_path, damage):
    """The splits of an iteration whose msprof_*.json is gone, or gave nothing (empty, or cut in
    its first event), are its only record: loaded, with the kernels and steps the merged file
    gave. A merged file that failed is said as an error all the same."""
    from npu_tui.profile.health import health

    copy = tmp_path / SAMPLE
    shutil.copytree(real / SAMPLE, copy)
    whole = load_profile(copy, cache=False)
    (dev,) = [d for d in device_dirs(tmp_path) if d.name == "device_0"]
    merged = dev / "timeline" / "msprof_0_2_5.json"
    if damage == "gone":
        merged.unlink()
    else:
        data = merged.read_bytes()
        merged.write_bytes({"empty": b"", "cut": data[:200], "cut part-way": data[:len(data) // 2]}[damage])
    p = load_profile(copy, cache=False)
    q = "SELECT rank, name, start_ns, dur_ns FROM kernels ORDER BY ALL"
    assert p.con.execute(q).fetchall() == whole.con.execute(q).fetchall()
    q = "SELECT step, count(*) FROM (SELECT DISTINCT rank, step FROM kernels) GROUP BY step ORDER BY step"
    assert p.con.execute(q).fetchall() == whole.con.execute(q).fetchall()
    # What only the merged file held, the iteration's Overlap Analysis and host events, is said to
    # be missing: by the split that gives the kernels, or by the merged file's error, which names
    # the splits.
    for table in ("overlap_lanes", "host_events"):
        q = f"SELECT count(*) FROM {table}"
        assert p.con.execute(q).fetchone()[0] < whole.con.execute(q).fetchone()[0], table
    items = health(p)
    if damage == "gone":
        (item,) = [i for i in items if "in place of" in i.what]
        assert item.severity == "warning" and item.what == (
            "task_time_0_2_5.json: in place of msprof_0_2_5.json, which is missing: that iteration's overlap "
            "lanes and host events (only in it) are missing")
        assert not [i for i in items if i.severity == "error"]
    else:
        (error,) = [i for i in items if i.severity == "error"]
        assert PurePath(error.file).name == "msprof_0_2_5.json"
        assert error.what.endswith("; its kernels come from hccl_0_2_5.json, task_time_0_2_5.json instead; "
                                   "its host events and overlap lanes are missing")
        assert {PurePath(i.file).name: i.severity for i in items if "in place of" in i.what} == {
            "hccl_0_2_5.json": "info", "task_time_0_2_5.json": "info"}
    # The splits of the other iterations are left for their merged files, as before.
    notes = dict(p.con.execute("SELECT parse_filename(file), note FROM load_log").fetchall())
    assert notes["task_time_0_2_4.json"] == "a split of msprof_0_2_4.json beside it, which is loaded: not loaded too"


@pytest.mark.parametrize("gone", [[5], [4, 5, 6]], ids=["one", "three"])
def test_an_iteration_whose_files_are_gone_is_said(real, tmp_path, gone):
    """Every file of an iteration between two others missing (a copy that skipped them): the rank
    has fewer steps than its peers and was compared with them, with nothing said."""
    from npu_tui.profile.health import health

    job = tmp_path / "job"
    shutil.copytree(real / SAMPLE, job)
    timeline = sorted(job.glob("PROF_*/device_0/timeline"))[0]
    for n in gone:
        for f in timeline.glob(f"*_0_*_{n}.json"):
            f.unlink()
    p = load_profile(job)
    said = [(i.severity, i.rank, i.file, i.what) for i in health(p) if "iteration" in i.what]
    which = "iteration 5" if gone == [5] else "iterations 4–6"
    assert said == [("warning", 0, str(timeline), f"no timeline files of {which}, between iterations 1 and 10: "
                     f"{'its' if len(gone) == 1 else 'their'} steps are missing")]
    assert p.con.execute("SELECT count(DISTINCT step) FROM kernels WHERE rank = 0").fetchone() == (10 - len(gone),)
    assert not [i for i in health(load_profile(real / SAMPLE)) if "iteration" in i.what]


def test_kernels_and_hccl_ops_match_the_timeline(real, sample):
    for rank, dev in enumerate(device_dirs(real)):
        want = expected_kernels(dev)
        got = sample.con.execute("SELECT name, start_ns, core FROM kernels WHERE rank = ?", [rank]).fetchall()
        assert sorted(got) == sorted(want)
        # The split hccl_*.json files hold the same collective ops (and are not loaded twice).
        hccl = [e for f in (dev / "timeline").glob("hccl_*.json") for e in events(f)
                if e["tname"] == "Communication Kernel"]
        comm = [g for g in got if g[2] == "HCCL"]
        assert len(comm) == len(hccl) == 10
        assert sorted(s for _, s, _ in comm) == sorted(int(round(e["ts"] * 1000)) for e in hccl)


def test_a_comm_process_named_communication_as_newer_cann_names_it(real, tmp_path, sample):
    """Newer CANN names the collective ops' process Communication, not HCCL: its ops are the same
    kernels (every one had been dropped without a word, and the rank's comm read as none). The
    hccl_* splits, which hold no other process, load in place of a merged file that is gone."""
    copy = tmp_path / SAMPLE
    shutil.copytree(real / SAMPLE, copy)
    for f in copy.glob("PROF_*/device_*/timeline/*.json"):
        data = f.read_bytes()
        f.write_bytes(data.replace(b'"args": {"name": "HCCL"}', b'"args": {"name": "Communication"}'))
        assert (data != f.read_bytes()) == (f.name.startswith(("msprof_", "hccl_")))
    (dev,) = [d for d in device_dirs(tmp_path) if d.name == "device_0"]
    (dev / "timeline" / "msprof_0_2_5.json").unlink()
    p = load_profile(copy, cache=False)
    q = "SELECT rank, name, start_ns, dur_ns, core FROM kernels ORDER BY ALL"
    got = p.con.execute(q).fetchall()
    assert got == sample.con.execute(q).fetchall()
    assert len([k for k in got if k[4] == "HCCL"]) == 20


def test_a_device_collected_twice_keeps_its_later_run(real, tmp_path):
    """Two PROF_ folders of one device (msprof run again into the same folder): the rank is
    claimed twice, and the run that ended later stays, by its end_info.N (µs, a string), as a
    torch_npu rank folder's by its profiler_info; the earlier one by name was kept."""
    src = device_dirs(real)[0].parent
    first, again = tmp_path / "job" / src.name, tmp_path / "job" / (src.name[:-3] + "ZZZ")
    shutil.copytree(src, first)
    shutil.copytree(src, again)
    end = json.loads((again / "device_0" / "end_info.0").read_text())
    end["collectionTimeEnd"] = str(int(end["collectionTimeEnd"]) + 3_600_000_000)  # an hour later
    (again / "device_0" / "end_info.0").write_text(json.dumps(end))
    assert sorted(p.name for p in (tmp_path / "job").iterdir())[0] == first.name  # (first by name)
    p = load_profile(tmp_path / "job")
    assert p.con.execute("SELECT path FROM ranks").fetchall() == [(str(again / "device_0"),)]
    (note,) = p.con.execute("SELECT note FROM load_log WHERE note LIKE '%claimed twice%'").fetchone()
    assert note.endswith(f"by {again.name}/device_0 too, whose run ended later: not loaded")


def test_steps_come_from_the_iteration_ranges(real, sample):
    dev = device_dirs(real)[0]
    iters = [e for e in events(next((dev / "timeline").glob("step_trace_*.json")))
             if e.get("cat") == "Iteration Time"]
    per_step = dict(sample.con.execute(
        "SELECT step, min(start_ns) FROM kernels WHERE rank = 0 GROUP BY step").fetchall())
    assert set(per_step) == {e["args"]["Iteration ID"] for e in iters}
    for e in iters:
        lo = int(round(e["ts"] * 1000))
        hi = lo + int(round(e["dur"] * 1000))
        assert lo <= per_step[e["args"]["Iteration ID"]] < hi


@pytest.mark.parametrize("iterations,comm", [(None, None), (5, None), (None, "COMMUNICATION")],
                         ids=["every-iteration", "five-of-ten", "comm-ops-too"])
def test_op_summarys_tasks_take_their_steps_from_the_timelines_iterations(real, tmp_path, sample, iterations, comm):
    """op_summary_{device}_{model}_{iter}.csv beside the timelines (the summary folder copied too)
    gives the kernels in their place, without a step: every kernel lost its step and the report
    went over "the whole profile (no steps marked)", the timeline's Iteration ranges loaded.
    Written without comm ops (as older CANN writes it), the timeline's are the rank's: they were
    lost, and the comm time read as idle. Of some iterations only, the timeline gives the others'
    kernels (they were lost, the run complete), said."""
    shutil.copytree(real / SAMPLE, tmp_path / "job")
    for dev in sorted((tmp_path / "job").glob("PROF_*/device_*")):
        for f in sorted((dev / "timeline").glob("msprof_*.json")):
            _, device, model, it = f.stem.split("_")
            if iterations is not None and int(it) > iterations:
                continue
            rows = [["Model ID", "Task ID", "Stream ID", "Op Name", "OP Type", "Task Type", "Task Start Time",
                     "Task Duration(us)", "Task Wait Time(us)", "Block Dim"]]
            for e in events(f):
                if not e.get("cat") and e["pname"] == "Ascend Hardware" and e["name"] != e["args"].get("Task Type") \
                        and not re.fullmatch(r"[A-Z][A-Z0-9_]*", e["name"]):
                    rows.append([model, "1", "2", e["name"], "x", e["args"]["Task Type"],
                                 str(int(round(e["ts"] * 1000))), str(e["dur"]), "0", "1"])
                elif comm and not e.get("cat") and e["pname"] in ("HCCL", "Communication") \
                        and not (e["tname"] or "").startswith("Plane"):
                    rows.append([model, "1", "2", e["name"], "x", comm, str(int(round(e["ts"] * 1000))),
                                 str(e["dur"]), "0", "1"])
            (dev / "summary").mkdir(exist_ok=True)
            with open(dev / "summary" / f"op_summary_{device}_{model}_{it}.csv", "w", newline="") as out:
                csv.writer(out).writerows(rows)
    p = load_profile(tmp_path / "job")
    q = "SELECT rank, step, name, start_ns, dur_ns FROM kernels ORDER BY ALL"
    assert p.con.execute(q).fetchall() == sample.con.execute(q).fetchall()
    sources = "SELECT DISTINCT source FROM kernels WHERE {} ORDER BY 1"
    if comm:  # op_summary's own comm ops, typed otherwise: not the timeline's again
        q = "SELECT rank, step, start_ns, dur_ns FROM kernels ORDER BY ALL"
        assert p.con.execute(q).fetchall() == sample.con.execute(q).fetchall()
        assert p.con.execute("SELECT DISTINCT source FROM kernels").fetchall() == [("op_summary",)]
        return
    assert p.con.execute(sources.format("core = 'HCCL'")).fetchall() == [("msprof_timeline",)]
    if iterations is None:
        assert p.con.execute(sources.format("core <> 'HCCL'")).fetchall() == [("op_summary",)]
        assert not p.con.execute("SELECT note FROM load_log WHERE note LIKE 'op_summary holds%'").fetchall()
    else:
        assert p.con.execute(sources.format(f"core <> 'HCCL' AND step <= {iterations}")).fetchall() == [("op_summary",)]
        assert p.con.execute(sources.format(f"core <> 'HCCL' AND step > {iterations}")).fetchall() == [
            ("msprof_timeline",)]
        notes = p.con.execute("SELECT DISTINCT note FROM load_log WHERE note LIKE 'op_summary holds%' ORDER BY 1"
                              ).fetchall()
        assert notes == sorted((f"op_summary holds no task of iteration {i}: its kernels loaded from here",)
                               for i in range(iterations + 1, 11))


def test_mindspore_scope_names_give_the_operator_type(sample):
    got = dict(sample.con.execute(
        "SELECT name, type FROM kernels WHERE rank = 0 AND name IN "
        "('Default/network-WithLossCell/_backbone-AlexNet/Cast-op239', 'Default/AllReduce-op534_0')"
    ).fetchall())
    assert got == {"Default/network-WithLossCell/_backbone-AlexNet/Cast-op239": "Cast",
                   "Default/AllReduce-op534_0": "AllReduce"}


def test_an_operators_identity_drops_mindspores_op_index_and_the_call_after_it(real):
    """`Default/AllReduce-op534_0` grouped as `Default/AllReduce-op534`: the -opN index went only
    where nothing followed it, so the README's rule (`…/Conv2D-op31` is `…/Conv2D`) did not hold."""
    from npu_tui.session import open_session

    s = open_session(real / SAMPLE)
    got = s.con.execute("SELECT DISTINCT name, op FROM kernel_categories WHERE name LIKE '%-op%' ORDER BY name"
                        ).fetchall()
    assert ("Default/AllReduce-op534_0", "Default/AllReduce") in got
    assert all(re.search(r"-op\d", op) is None for _, op in got)


def test_overlap_lanes_and_host_events(real, sample):
    dev = device_dirs(real)[1]
    evs = [e for f in (dev / "timeline").glob("msprof_*.json") for e in events(f)]
    lanes = {}
    for e in evs:
        if e["pname"] == "Overlap Analysis":
            lanes[e["tname"]] = lanes.get(e["tname"], 0) + 1
    assert dict(sample.con.execute(
        "SELECT lane, count(*) FROM overlap_lanes WHERE rank = 1 GROUP BY lane").fetchall()) == lanes
    cann = sum(e["pname"] == "CANN" for e in evs)
    assert sample.con.execute("SELECT count(*) FROM host_events WHERE rank = 1").fetchone() == (cann,)


def test_rank_from_info_json_else_the_folder_number(real, tmp_path):
    src = device_dirs(real)[1]
    prof = tmp_path / "PROF_1"
    shutil.copytree(src, prof / "device_1")
    info = prof / "device_1" / "info.json.1"
    info.write_text(json.dumps(dict(json.loads(info.read_text()), rank_id=6)))
    shutil.copytree(src / "timeline", tmp_path / "PROF_2" / "device_3" / "timeline")  # no info.json
    disc = discover(tmp_path)
    assert sorted((s.root.name, s.rank) for s in disc.ranks) == [("device_1", 6), ("device_3", 3)]
    p = load_profile(tmp_path)
    assert p.con.execute("SELECT rank, device_id FROM ranks ORDER BY rank").fetchall() == [(3, 3), (6, 1)]


def test_a_changed_info_json_is_a_changed_profile(real, tmp_path, monkeypatch):
    """info.json.N says the device's rank: corrected after a first open, the next open reads the
    new number, not the cached one."""
    monkeypatch.setenv("NPU_TUI_CACHE_DIR", str(tmp_path / "cache"))
    job = tmp_path / "job"
    shutil.copytree(real / SAMPLE, job)
    first = load_profile(job, cache=True)
    first.save_cache()
    assert first.ranks == [0, 1]
    first.con.close()
    (info,) = job.glob("PROF_*/device_1/info.json.1")
    info.write_text(json.dumps(dict(json.loads(info.read_text()), rank_id=3)))
    again = load_profile(job, cache=True)
    assert again.ranks == [0, 3] and not again.from_cache


OP_SUMMARY = [
    ["Device_id", "Model ID", "Task ID", "Stream ID", "Op Name", "OP Type", "Task Type",
     "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Block Dim", "Input Shapes",
     "Input Data Types", "Input Formats", "Output Shapes", "Output Data Types"],
    ["3", "4294967295", "11", "2", "aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE",
     "1736408883704643.212\t", "53.741", "0", "20", '"512,16;16,64"', "FLOAT16;FLOAT16",
     "ND;ND", '"512,64"', "FLOAT16"],
    ["3", "4294967295", "12", "2", "aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE",
     "1736408883704700.001\t", "2.5", "3.247", "40", '"512,64;512,64"', "FLOAT16;FLOAT16",
     "ND;ND", '"512,64"', "FLOAT16"],
]


def msprof_merged(real: Path, root: Path, op_summary=OP_SUMMARY) -> Path:
    """A PROF_* folder in the newer layout: device_3/info.json.3 and mindstudio_profiler_output/
    with one real timeline and the given op_summary rows (msprof writes the shape quotes into
    the value, which the csv module then quotes again)."""
    prof = root / "PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP"
    out = prof / "mindstudio_profiler_output"
    out.mkdir(parents=True)
    (prof / "device_3").mkdir()
    (prof / "device_3" / "info.json.3").write_text(json.dumps({"rank_id": -1, "devices": "3"}))
    shutil.copy(device_dirs(real)[0] / "timeline" / "msprof_0_2_1.json", out / "msprof_20250101.json")
    with open(out / "op_summary_20250101.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(op_summary)
    return prof


def test_op_summary_gives_the_kernels_and_the_timeline_the_rest(real, tmp_path):
    prof = msprof_merged(real, tmp_path)
    raw = (prof / "mindstudio_profiler_output" / "op_summary_20250101.csv").read_text()
    assert '"""512,16;16,64"""' in raw
    p = load_profile(prof)
    assert p.layout == "msprof" and p.ranks == [3]  # rank_id -1: the device folder's number
    got = p.con.execute("SELECT device_id, name, type, core, start_ns, dur_ns, wait_ns, block_dim, "
                        "task_id, input_shapes, output_shapes, source FROM kernels ORDER BY start_ns"
                        ).fetchall()
    assert got == [
        (3, "aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE", 1736408883704643212,
         53741, 0, 20, 11, "512,16;16,64", "512,64", "op_summary"),
        (3, "aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE", 1736408883704700001, 2500, 3247, 40,
         12, "512,64;512,64", "512,64", "op_summary"),
    ]
    lanes = sum(e["pname"] == "Overlap Analysis"
                for e in events(prof / "mindstudio_profiler_output" / "msprof_20250101.json"))
    assert p.con.execute("SELECT count(*) FROM overlap_lanes").fetchone() == (lanes,)


def test_an_older_op_summarys_start_in_ns(real, tmp_path):
    """CANN 5.x's op_summary writes "Task Start Time" in ns, without a unit (torch_npu 5.0.rc2's
    op_summary_bean divides it by 1000): read as such. It had been refused as "not a op_summary
    table", and nothing loaded."""
    older = [[("Task Start Time" if c == "Task Start Time(us)" else c) for c in OP_SUMMARY[0]]]
    start = OP_SUMMARY[0].index("Task Start Time(us)")
    for row in OP_SUMMARY[1:]:
        us = row[start].strip()
        older.append(row[:start] + [us.replace(".", "")] + row[start + 1:])
    assert older[1][start] == "1736408883704643212"
    q = "SELECT name, start_ns, dur_ns, wait_ns, input_shapes FROM kernels ORDER BY ALL"
    want = load_profile(msprof_merged(real, tmp_path / "us")).con.execute(q).fetchall()
    assert load_profile(msprof_merged(real, tmp_path / "ns", older)).con.execute(q).fetchall() == want
    assert sorted(s for _, s, *_ in want) == [1736408883704643212, 1736408883704700001]


@pytest.mark.parametrize("content", ["", ",".join(OP_SUMMARY[0]) + "\r\n"])
def test_empty_op_summary_is_a_note(real, tmp_path, content):
    prof = msprof_merged(real, tmp_path)
    bad = prof / "mindstudio_profiler_output" / "op_summary_20250101.csv"
    bad.write_text(content)
    p = load_profile(prof)
    (note,), = p.con.execute("SELECT note FROM load_log WHERE kind = 'op_summary'").fetchall()
    assert note and "\n" not in note and "Traceback" not in note
    # The timeline stands in for the missing kernels.
    assert p.con.execute("SELECT DISTINCT source FROM kernels").fetchall() == [("msprof_timeline",)]


@pytest.mark.parametrize("opened", ["root", "group"])
def test_a_collection_per_metric_set_is_found_deeper(real, tmp_path, opened):
    """msprof collecting per metric set nests its PROF_* one or two levels down:
    PROF_GROUP_*/PROF_<metric>/PROF_000001_*/; opened at the top or at the group, both load."""
    group = tmp_path / "PROF_GROUP_0001"
    msprof_merged(real, group / "PROF_PipeUtilization")
    p = load_profile(tmp_path if opened == "root" else group)
    assert p.layout == "msprof" and p.ranks == [3] and p.formats == ["msprof"]
    assert p.con.execute("SELECT count(*) FROM kernels WHERE source = 'op_summary'").fetchone() == (2,)


def test_lone_files_are_named_for_what_wrote_them(real, tmp_path):
    prof = msprof_merged(real, tmp_path)
    op_summary = prof / "mindstudio_profiler_output" / "op_summary_20250101.csv"
    assert discover(op_summary).ranks[0].source_format == "msprof"
    kd = real / "mstt-advisor-fixtures/ut/advisor/compute_advice/data/kernel_details.csv"
    assert discover(kd).ranks[0].source_format == "torch_npu"


def test_an_earlier_sliced_export_of_more_slices_is_not_loaded_again(real, tmp_path):
    """An export in three slices, then one in two: the first export's third slice stayed beside
    the second's two (the latest file of each slice number), its tasks loaded twice."""
    prof = msprof_merged(real, tmp_path)
    out = prof / "mindstudio_profiler_output"
    (out / "op_summary_20250101.csv").unlink()
    for name, rows in (("op_summary_slice_0_20250101.csv", OP_SUMMARY[:2]),
                       ("op_summary_slice_1_20250101.csv", OP_SUMMARY[::2]),
                       ("op_summary_slice_2_20250101.csv", [OP_SUMMARY[0], ["3", *OP_SUMMARY[2][1:4], "aclnnMul",
                                                                            *OP_SUMMARY[2][5:]]]),
                       ("op_summary_slice_0_20250102.csv", OP_SUMMARY[:2]),
                       ("op_summary_slice_1_20250102.csv", OP_SUMMARY[::2])):
        with open(out / name, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows(rows)
    p = load_profile(prof)
    assert p.con.execute("SELECT count(*) FROM kernels").fetchone() == (2,)
    assert sorted(PurePath(f).name for (f,) in p.con.execute(
        "SELECT file FROM load_log WHERE kind = 'discovery' AND note LIKE 'an earlier export%'").fetchall()) == [
        "op_summary_slice_0_20250101.csv", "op_summary_slice_1_20250101.csv", "op_summary_slice_2_20250101.csv"]


@pytest.mark.parametrize("sliced", [False, True])
def test_an_earlier_export_of_the_same_collection_is_not_loaded_again(real, tmp_path, sliced):
    """msprof --export run twice over one collection writes its files again under a later time,
    other columns maybe: both loaded, every task counted twice, the run said whole. A sliced
    export's slices carry times a second apart, and are one export."""
    from npu_tui.profile.health import failed, health

    prof = msprof_merged(real, tmp_path)
    out = prof / "mindstudio_profiler_output"
    first = out / "op_summary_20250101.csv"
    again = ["op_summary_slice_0_20250102.csv", "op_summary_slice_1_20250103.csv"] if sliced else \
        ["op_summary_20250102.csv"]
    with open(out / again[0], "w", newline="", encoding="utf-8") as f:
        # a column fewer: not a copy
        csv.writer(f).writerows([r[:-1] for r in (OP_SUMMARY[:2] if sliced else OP_SUMMARY)])
    if sliced:
        with open(out / again[1], "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([r[:-1] for r in OP_SUMMARY[::2]])
    shutil.copy(out / "msprof_20250101.json", out / "msprof_20250102.json")
    (out / "msprof_20250101.json").write_text("[]")  # (a copy would be told by its content)
    p = load_profile(prof)
    assert p.con.execute("SELECT count(*) FROM kernels").fetchone() == (2,)
    loaded = p.con.execute("SELECT file, kind, note FROM load_log ORDER BY file").fetchall()
    assert [(PurePath(f).name, k) for f, k, _ in loaded] == sorted(
        [("msprof_20250101.json", "discovery"), ("msprof_20250102.json", "msprof_timeline"),
         ("op_summary_20250101.csv", "discovery")] + [(name, "op_summary") for name in again])
    assert dict((PurePath(f).name, n) for f, _, n in loaded)[first.name] == (
        f"an earlier export of the same collection ({again[-1]} beside it, exported later): not loaded, or its "
        "rows would count twice")
    assert failed(health(p)) == [] and {i.severity for i in health(p)} == {"info"}


def test_an_older_layouts_export_run_again_loads_once(real, tmp_path):
    """msprof 6.3 and later name each device file for its export too ({kind}_{device}_{model}_{iter}
    _{YYYYmmddHHMMSS}): an export run again, its JSON written otherwise, loaded twice, every task
    counted twice. Per iteration, the latest export loads; the earlier is said."""
    import json

    shutil.copytree(real / SAMPLE, tmp_path / "job")
    for f in sorted((tmp_path / "job").glob("PROF_*/device_*/timeline/*.json")):
        doc = json.loads(f.read_text(encoding="utf-8"))
        # (an export's files are written a second or two apart: its splits after its merged files)
        later = "20250102120000" if f.name.startswith("msprof_") else "20250102120001"
        f.with_name(f"{f.stem}_20250101120000.json").write_text(json.dumps(doc), encoding="utf-8")
        f.with_name(f"{f.stem}_{later}.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
        f.unlink()
    q = "SELECT rank, step, name, start_ns, dur_ns FROM kernels ORDER BY ALL"
    p = load_profile(tmp_path / "job")
    assert p.con.execute(q).fetchall() == load_profile(real / SAMPLE).con.execute(q).fetchall()
    said = p.con.execute("SELECT DISTINCT parse_filename(file) FROM load_log WHERE starts_with(note, "
                         "'an earlier export') ORDER BY 1").fetchall()
    assert said and all(name.endswith("_20250101120000.json") for (name,) in said)


def test_a_sliced_timelines_kernels_take_their_steps_from_every_slice(real, tmp_path):
    """A long timeline msprof writes in slices (msprof_slice_N_{time}.json), its events in time
    order: a kernel's step was looked up in its own slice's Iteration ranges only, and most of a
    later slice's kernels had none (step 6: 21 kernels of 140)."""
    from decimal import Decimal

    (dev,) = [d for d in device_dirs(real) if d.name == "device_0"]
    files = sorted((dev / "timeline").glob("msprof_*.json"))
    docs = [json.loads(f.read_text(encoding="utf-8"), parse_float=Decimal) for f in files]
    meta = [e for e in docs[0] if e.get("ph") == "M"]
    timed = sorted((e for d in docs for e in d if e.get("ph") != "M"), key=lambda e: e.get("ts", 0))

    def job(name: str, parts) -> Path:
        prof = tmp_path / name / "PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP"
        out = prof / "mindstudio_profiler_output"
        out.mkdir(parents=True)
        (prof / "device_0").mkdir()
        (prof / "device_0" / "info.json.0").write_text(json.dumps({"rank_id": 0, "devices": "0"}))
        for i, part in enumerate(parts):
            named = f"msprof_slice_{i}_20250101120000.json" if len(parts) > 1 else "msprof_20250101120000.json"
            (out / named).write_text(json.dumps(meta + part, default=str), encoding="utf-8")
        return prof

    half = len(timed) // 2
    q = "SELECT step, count(*), sum(dur_ns) FROM kernels GROUP BY step ORDER BY step"
    whole = load_profile(job("whole", [timed])).con.execute(q).fetchall()
    assert len(whole) == len(files) and None not in {st for st, *_ in whole}
    assert load_profile(job("sliced", [timed[:half], timed[half:]])).con.execute(q).fetchall() == whole


def test_the_mstx_markers_summary_is_no_timeline(real, tmp_path):
    """msprof_tx_{time}.csv, the mstx markers' summary msprof writes beside its timeline, was taken
    for an msprof_*.json timeline by its name, and said damaged: the run incomplete, exit 2."""
    from npu_tui.profile.health import health

    prof = msprof_merged(real, tmp_path)
    (prof / "mindstudio_profiler_output" / "msprof_tx_20250101.csv").write_text(
        "Device_id,pid,tid,category,event_type,payload_type,payload_value,Start_time(us),End_time(us),"
        "message_type,message\nhost,1,2,0,marker,0,0,1700000000000001.000,1700000000000002.000,0,hello\n")
    p = load_profile(prof)
    assert [PurePath(f).name for (f,) in p.con.execute("SELECT file FROM load_log ORDER BY file").fetchall()] == [
        "msprof_20250101.json", "op_summary_20250101.csv"]
    assert health(p) == []


def test_a_timeline_merged_over_two_devices_without_op_summary_is_said_not_merged(real, tmp_path):
    """No op_summary to split by its Device_id: the one timeline of two devices is left out and
    said (loaded as one rank, each device's kernels would sum past the wall): nothing else loads."""
    prof = msprof_merged(real, tmp_path)
    (prof / "mindstudio_profiler_output" / "op_summary_20250101.csv").unlink()
    (prof / "device_5").mkdir()
    (prof / "device_5" / "info.json.5").write_text(json.dumps({"rank_id": 1, "devices": "5"}))
    with pytest.raises(ProfileError, match="msprof_20250101.json: not split by device: merged over device_3, "
                                           "device_5"):
        load_profile(prof)


@pytest.mark.parametrize("with_device_column", [True, False])
def test_one_output_merged_over_two_devices_is_two_ranks(real, tmp_path, with_device_column):
    from npu_tui.profile.health import failed, health

    """msprof exports a run of two devices into one mindstudio_profiler_output: each op_summary row
    says its device. Loaded as one rank, both devices' kernels summed past the wall time."""
    # Device 3: two rows, 5: one, 7: none; and one row that names no device.
    rows = OP_SUMMARY[1:] + [["5", *r[1:]] for r in OP_SUMMARY[1:2]] + [["", *OP_SUMMARY[2][1:]]]
    table = OP_SUMMARY[:1] + rows
    if not with_device_column:
        table = [r[1:] for r in table]
    prof = msprof_merged(real, tmp_path, table)
    (prof / "device_5").mkdir()
    (prof / "device_5" / "info.json.5").write_text(json.dumps({"rank_id": 1, "devices": "5"}))
    (prof / "device_3" / "info.json.3").write_text(json.dumps({"rank_id": 0, "devices": "3"}))
    (prof / "device_7").mkdir()
    (prof / "device_7" / "info.json.7").write_text(json.dumps({"rank_id": 2, "devices": "7"}))
    p = load_profile(prof)
    if not with_device_column:  # nothing tells the devices' rows apart: one rank, and said
        assert p.ranks == [0] and p.con.execute("SELECT count(*) FROM kernels").fetchone() == (4,)
        (item,) = [h for h in health(p) if "loaded as one rank" in h.what]
        assert item.severity == "warning" and "no Device_id column" in item.what
        return
    assert p.ranks == [0, 1, 2]
    assert p.con.execute("SELECT rank, device_id FROM ranks ORDER BY rank").fetchall() == [(0, 3), (1, 5), (2, 7)]
    timeline = p.con.execute("SELECT note FROM load_log WHERE file LIKE '%msprof_20250101.json'").fetchall()
    # The timeline is one for both devices and does not say whose its rows are: left out, said,
    # and the run incomplete without it.
    assert timeline == [("not split by device: merged over device_3, device_5, device_7, and its rows "
                         "do not say their device; left out",)]
    (item,) = failed(health(p))
    assert item.what.startswith("msprof_20250101.json: not split by device")
    # Opened at one device, the same: its rows, and the timeline said.
    one = load_profile(prof / "device_5")
    assert one.ranks == [1] and one.con.execute("SELECT count(*) FROM kernels").fetchone() == (1,)
    assert [i.what.split(":")[0] for i in failed(health(one))] == ["msprof_20250101.json"]
    assert p.con.execute("SELECT rank, device_id, count(*) FROM kernels GROUP BY ALL ORDER BY 1"
                         ).fetchall() == [(0, 3, 2), (1, 5, 1)]
    # The row that names no device is skipped once, not once a device; device 7 has no kernels.
    assert p.con.execute("SELECT rank, rows, skipped_rows, note FROM load_log WHERE kind = 'op_summary' "
                         "ORDER BY rank").fetchall() == [(0, 2, 1, ""), (1, 1, 0, ""), (2, 0, 0, "")]


def test_a_single_devices_output_that_names_its_device_otherwise_loads_whole(real, tmp_path):
    """device_3/ beside an output whose every row says Device_id 0 (a visible device renumbered):
    one device, the folder's; its rows are not another device's to skip."""
    prof = msprof_merged(real, tmp_path, [OP_SUMMARY[0]] + [["0", *r[1:]] for r in OP_SUMMARY[1:]])
    p = load_profile(prof)
    assert p.con.execute("SELECT rank, device_id, count(*) FROM kernels GROUP BY ALL").fetchall() == [(3, 0, 2)]
    assert p.con.execute("SELECT sum(skipped_rows) FROM load_log").fetchone() == (0,)
    assert p.con.execute("SELECT count(*) FROM overlap_lanes").fetchone()[0] > 0  # (its timeline, not said merged)


@pytest.mark.parametrize("folders", [(), (3,), (3, 7)])
def test_rows_of_a_device_without_its_folder_are_said(real, tmp_path, folders):
    """The merged output of devices 3 and 5 (its Device_id column), with device_5/ not copied (the
    device folders are the raw data, big): with no folder, both devices' tasks loaded as one rank
    unsaid; with device_3/ alone, as device 3's rank; with device_3/ and device_7/, device 5's rows
    were dropped uncounted."""
    from npu_tui.profile.health import health

    table = OP_SUMMARY + [["5", *r[1:]] for r in OP_SUMMARY[1:2]]
    prof = msprof_merged(real, tmp_path, table)
    shutil.rmtree(prof / "device_3")
    for d in folders:
        (prof / f"device_{d}").mkdir()
        (prof / f"device_{d}" / f"info.json.{d}").write_text(json.dumps({"rank_id": -1, "devices": str(d)}))
    for opened in (prof, prof / "mindstudio_profiler_output"):
        p = load_profile(opened)
        got = p.con.execute("SELECT rank, device_id, count(*) FROM kernels GROUP BY ALL ORDER BY ALL").fetchall()
        notes = [i.what for i in health(p) if i.what.startswith("op_summary_20250101.csv")]
        if not folders or opened != prof:  # (the output opened alone knows no device folder)
            assert got == [(0, 3, 2), (0, 5, 1)]
            assert notes == ["op_summary_20250101.csv: holds the tasks of devices 3, 5 (its Device_id column), and "
                             "nothing here makes each its own rank (msprof's device_N folders): loaded as one rank, "
                             "its figures the devices' together"]
        elif folders == (3,):
            assert got == [(3, 3, 2)]
            assert notes == ["op_summary_20250101.csv: the rows of device 5, whose device_N folder is not here to "
                             "make a rank of; 1 row skipped"]
            # the timeline beside it is both devices' (its lanes were loaded as device 3's): left out, said
            assert p.con.execute("SELECT rows, note FROM load_log WHERE file LIKE '%msprof_20250101.json'").fetchall() \
                == [(0, "not split by device: merged over devices 3, 5 (op_summary's Device_id), and its rows do "
                        "not say their device; left out")]
            assert p.con.execute("SELECT count(*) FROM overlap_lanes").fetchone() == (0,)
        else:
            assert got == [(3, 3, 2)]
            assert p.con.execute("SELECT rank, skipped_rows FROM load_log WHERE kind = 'op_summary' ORDER BY rank"
                                 ).fetchall() == [(3, 1), (7, 0)]
            assert notes == ["op_summary_20250101.csv: the rows of device 5, whose device_N folder is not here to "
                             "make a rank of; 1 row skipped"]


def test_a_device_collected_but_never_exported_is_said_with_the_command(real, tmp_path):
    """msprof writes raw data into device_N/data; its timeline and summary come only with an
    export. Such a folder said "no profiler files found"; beside an exported device, nothing."""
    from npu_tui.profile.health import failed, health

    prof = tmp_path / "PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP"
    (prof / "device_0" / "data").mkdir(parents=True)
    with pytest.raises(ProfileError, match=r"device_0: not exported: raw data only \(device_N/data\); "
                                           r"export it first: msprof --export=on --output=.*PROF_000001_"):
        load_profile(prof)
    timeline = prof / "device_1" / "timeline"
    timeline.mkdir(parents=True)
    shutil.copy(device_dirs(real)[0] / "timeline" / "msprof_0_2_1.json", timeline)
    p = load_profile(tmp_path)
    assert p.ranks == [1]
    (item,) = failed(health(p))
    assert item.what.startswith(f"{prof.name}/device_0: not exported: raw data only")
    # Opened at the exported device alone, its unexported sibling is none of its business.
    assert failed(health(load_profile(prof / "device_1"))) == []


def test_a_device_copied_without_its_files_is_said_to_be_a_rank_not_loaded(real, tmp_path):
    """A 2-device collection whose device_1 came without its timeline (and without raw data): the
    job loaded as one rank, complete, nothing said, the cross-rank checks skipped quietly."""
    from npu_tui.profile.health import health

    shutil.copytree(real / SAMPLE, tmp_path / "job")
    (timeline,) = (tmp_path / "job").glob("PROF_*/device_1/timeline")
    shutil.rmtree(timeline)
    timeline.mkdir()
    p = load_profile(tmp_path / "job")
    assert p.ranks == [0]
    (item,) = [i for i in health(p) if "device_1" in i.what]
    assert item.severity == "warning"
    assert item.what.endswith("/device_1: no exported files (timeline/, summary/) nor raw data (data/) of rank 1: "
                              "not loaded")


DB = "msinsight-pt-2rank-levels/db/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db"


def test_msprofs_db_export_beside_its_raw_data(real, tmp_path):
    """msprof --export=on --type=db writes PROF_*/msprof_{time}.db beside device_N/ and host/: it
    had been passed over, and the folder said to be "not exported" (exit 2). Its device folder
    opens it too. Of two devices, it is one rank, said so. Beside a text export of the same
    collection (merged, or the older device_N/timeline), the text loads and the db is said and
    left unread; so is an analyze/ folder over several devices."""
    from npu_tui.profile.health import failed, health

    prof = tmp_path / "PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP"
    (prof / "device_0" / "data").mkdir(parents=True)
    (prof / "host" / "data").mkdir(parents=True)
    shutil.copy(real / DB, prof / "msprof_20250101120500.db")
    q = "SELECT name, start_ns, dur_ns, core FROM kernels ORDER BY ALL"
    want = load_profile(real / DB).con.execute(q).fetchall()
    assert len(want) == 191
    for opened in (tmp_path, prof, prof / "device_0"):
        p = load_profile(opened)
        assert p.ranks == [0] and p.formats == ["db"] and failed(health(p)) == []
        assert p.con.execute(q).fetchall() == want

    # Its tasks of two devices (with the device folders or without: a copy of the db alone) are one
    # rank, said so: it was said only where both device folders were there.
    os.chmod(prof / "msprof_20250101120500.db", 0o644)
    with sqlite3.connect(prof / "msprof_20250101120500.db") as w:
        w.execute("UPDATE TASK SET deviceId = 1 WHERE rowid % 2 = 0")
    for folder in (False, True):
        if folder:
            (prof / "device_1" / "data").mkdir(parents=True)
        p = load_profile(tmp_path)
        assert p.con.execute(q).fetchall() == want
        (item,) = [i for i in health(p) if "loaded as one rank" in i.what]
        assert item.what.endswith("a db export whose tasks are of devices 0, 1 (TASK's deviceId), not told apart "
                                  "here; its figures are the devices' together")
        assert item.fix.startswith("export the run as text too (msprof --export=on --type=text)")

    older = tmp_path / "older"
    shutil.copytree(next((real / SAMPLE).glob("PROF_*")), older / prof.name)
    merged = msprof_merged(real, tmp_path / "text")
    for folder in (older / prof.name, merged):
        shutil.copy(real / DB, folder / "msprof_20250101120500.db")
        (folder / "analyze").mkdir()
        shutil.copy(output_dir_communication(real), folder / "analyze" / "communication.json")
        p = load_profile(folder)
        assert p.formats == ["msprof"] and "sqlite_export" not in {k for (k,) in p.con.execute(
            "SELECT DISTINCT source FROM kernels").fetchall()}
        (db,) = [i for i in health(p) if i.file.endswith(".db")]
        assert (db.severity, db.what) == ("info", "msprof_20250101120500.db not loaded: the text export beside "
                                                  "it is used")
        # one device: its analysis loads
        assert [i for i in health(p) if i.file.endswith("communication.json")] == []
        assert p.con.execute("SELECT count(*) FROM comm_ops").fetchone() == (4,)
    (merged / "device_5").mkdir()
    p = load_profile(merged)
    assert [(i.severity, i.what) for i in health(p) if i.file.endswith("communication.json")] == [
        ("warning", "communication.json: msprof's analysis over device_3, device_5, whose ops it does not tell apart "
                    "by device: not loaded")]
    assert p.con.execute("SELECT count(*) FROM comm_ops").fetchone() == (0,)


def test_msprofs_own_memory_files_in_kb(real, tmp_path):
    """msprof writes memory_record_*, npu_module_mem_* and operator_memory_*.csv with its totals
    in KB, and operator_memory without a release time (its Duration is how long the block was
    held); MindSpore copies npu_module_mem as is. The first two had been refused as damaged (the
    run incomplete, exit 2), and every allocation read as never released. Here the real level1
    rank's files, written msprof's way, give the same memory as torch_npu's own."""
    src = real / "msinsight-pt-2rank-levels/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"
    prof = msprof_merged(real, tmp_path / "msprof")
    out = prof / "mindstudio_profiler_output"

    def kb(mb: str) -> str:
        return repr(float(mb) * 1024) if mb.strip() else ""

    def write(name: str, header: list, rows: list) -> None:
        with open(out / name, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([["Device_id", *header, "Device"], *[["3", *r, "NPU:3"] for r in rows]])

    records = [r for r in _csv_rows(src / "memory_record.csv") if r["Component"] != "APP"]
    write("memory_record_20250101.csv", ["Component", "Timestamp(us)", "Total Allocated(KB)", "Total Reserved(KB)"],
          [[r["Component"], r["Timestamp(us)"], kb(r["Total Allocated(MB)"]), kb(r["Total Reserved(MB)"])]
           for r in records])
    modules = _csv_rows(src / "npu_module_mem.csv")
    write("npu_module_mem_20250101.csv", ["Component", "Timestamp(us)", "Total Reserved(KB)"],
          [[r["Component"], r["Timestamp(us)"], kb(r["Total Reserved(MB)"])] for r in modules])
    # (torch_npu's rows never released have no Duration: nor have msprof's, and both read so)
    ops = _csv_rows(src / "operator_memory.csv")
    write("operator_memory_20250101.csv", ["Name", "Size(KB)", "Allocation Time(us)", "Duration(us)",
                                           "Allocation Total Allocated(KB)", "Allocation Total Reserved(KB)",
                                           "Release Total Allocated(KB)", "Release Total Reserved(KB)"],
          [[r["Name"], r["Size(KB)"], r["Allocation Time(us)"], r["Duration(us)"],
            kb(r["Allocation Total Allocated(MB)"]), kb(r["Allocation Total Reserved(MB)"]),
            kb(r["Release Total Allocated(MB)"]), kb(r["Release Total Reserved(MB)"])] for r in ops])
    p, want = load_profile(prof), load_profile(src.parent)
    from npu_tui.profile.health import failed, health

    assert failed(health(p)) == []
    q = "SELECT component, ts_ns, allocated_bytes, reserved_bytes FROM memory_record WHERE component <> 'APP' ORDER BY ALL"
    assert p.con.execute(q).fetchall() == want.con.execute(q).fetchall() and len(records) > 100
    q = "SELECT component, ts_ns, reserved_bytes FROM npu_module_mem ORDER BY ALL"
    assert p.con.execute(q).fetchall() == want.con.execute(q).fetchall()
    q = ("SELECT name, size_bytes, alloc_ns, release_ns, round(alloc_allocated_mb, 6), round(release_reserved_mb, 6) "
         "FROM operator_memory ORDER BY ALL")
    mine, theirs = p.con.execute(q).fetchall(), want.con.execute(q).fetchall()
    assert len(mine) == len(theirs) == len(ops) > 10
    assert 0 < sum(a[3] is None for a in mine) == sum(b[3] is None for b in theirs) < len(mine)
    # release = allocation + Duration, each in µs to 3 places: 1 ns apart at most
    assert all(a[:3] == b[:3] and (a[3] == b[3] or abs(a[3] - b[3]) <= 1) and a[4:] == b[4:]
               for a, b in zip(mine, theirs))


def _csv_rows(path: Path) -> list:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def output_dir_communication(real: Path) -> Path:
    return real / "msinsight-pt-2rank-levels/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/communication.json"


def test_a_device_folder_opened_from_its_prof_folder_by_its_bare_name(real, monkeypatch):
    """`npu-tui device_0` inside a PROF_* folder: its parent is then named "", and the device was
    not told from any other folder ("profiles were found under device_0/timeline")."""
    prof = next((real / SAMPLE).glob("PROF_*"))
    whole = load_profile(prof / "device_0")
    q = "SELECT * FROM kernels ORDER BY ALL"
    for cwd, path in [(prof, "device_0"), (prof / "device_0" / "timeline", "../../device_0")]:
        monkeypatch.chdir(cwd)
        bare = load_profile(Path(path))
        assert (bare.layout, bare.ranks) == (whole.layout, whole.ranks) == ("msprof", [0])
        assert bare.con.execute(q).fetchall() == whole.con.execute(q).fetchall() != []
