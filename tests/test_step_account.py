"""The step account adds up: on every fixture and real sample, each step's parts sum to the step's
time, and where the profiler wrote its own figures (step_trace_time.csv, msprof's step_trace
timeline, the fixtures' truth) to those, read here from the files themselves, not through npu-tui."""

import csv
import gzip
import json
import re
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

from npu_tui.demo import PATH as DEMO
from npu_tui.session import open_session

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
REAL = ROOT.parent / "shared" / "real"
LEVELS = REAL / "msinsight-pt-2rank-levels"
TOLERANCE = 0.005  # of the step


def _rank_of(folder: Path) -> int:
    """The rank a torch_npu output folder holds, as the profiler names its info file."""
    (info,) = folder.glob("profiler_info_*.json")
    return int(re.fullmatch(r"profiler_info_(\d+)\.json", info.name).group(1))


def _step_trace_csv(root: Path) -> dict:
    """{(rank, step): {column: µs}} from every step_trace_time.csv under root."""
    out = {}
    for path in root.rglob("step_trace_time.csv"):
        rank = _rank_of(path.parent.parent)
        with open(path, newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                out[rank, int(row["Step"])] = {k: float(v) for k, v in row.items() if k in (
                    "Computing", "Communication(Not Overlapped)", "Free", "Stage")}
    return out


def _step_trace_db(root: Path) -> dict:
    """The same from a db export: analysis.db's StepTraceTime, per rank folder."""
    out = {}
    for path in root.rglob("analysis.db"):
        rank = _rank_of(path.parent.parent)
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            for step, computing, exposed, free, stage in db.execute(
                    "SELECT step, computing, communication_not_overlapped, free, stage FROM StepTraceTime"):
                out[rank, int(step)] = {"Computing": computing, "Communication(Not Overlapped)": exposed,
                                        "Free": free, "Stage": stage}
    return out


def _msprof_iterations(root: Path) -> dict:
    """{(device, iteration): µs} from the Iteration events of msprof's step_trace timelines."""
    out = {}
    for path in root.glob("*/device_*/timeline/step_trace_*.json"):
        device = int(path.parent.parent.name.split("_")[1])
        for e in json.loads(path.read_text()):
            if e.get("cat") == "Iteration Time":
                out[device, e["args"]["Iteration ID"]] = e["dur"]
    return out


def _kineto_steps(root: Path) -> dict:
    """{(rank, step): µs}: from the first to the last GPU activity launched inside each ProfilerStep#N
    range (the activities found through the launches' correlation ids)."""
    out = {}
    for rank, path in enumerate(sorted(root.glob("*.json*"))):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as fh:
            events = json.load(fh)["traceEvents"]
        steps = [(int(e["name"].split("#")[1]), e["ts"], e["ts"] + e["dur"]) for e in events
                 if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")]
        # no ProfilerStep range: one step, no id, all the GPU's activity
        steps = steps or [(None, float("-inf"), float("inf"))]
        launched = {}
        for e in events:
            if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {}):
                launched[e["args"]["correlation"]] = e["ts"]
        spans = defaultdict(list)
        for e in events:
            corr = e.get("args", {}).get("correlation")
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and corr in launched:
                for step, lo, hi in steps:
                    if lo <= launched[corr] < hi:
                        spans[step].append((e["ts"], e["ts"] + e["dur"]))
        for step, activity in spans.items():
            out[rank, step] = max(b for _, b in activity) - min(a for a, _ in activity)
    return out


def _truth_steps(name: str) -> dict:
    truth = json.loads((FIXTURES / f"{name}.truth.json").read_text())
    return {(r["rank"], s["step"]): s["stage_ns"] / 1e3 for r in truth["ranks"] for s in r.get("steps", [])}


def _kernel_spans(csv_path: Path) -> dict:
    """{(0, step): µs} from the first kernel's start to the last one's end, per Step Id."""
    spans = defaultdict(list)
    with open(csv_path, newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            start = float(r["Start Time(us)"].strip())
            spans[0, int(r["Step Id"])].append((start, start + float(r["Duration(us)"])))
    return {k: max(b for _, b in v) - min(a for a, _ in v) for k, v in spans.items()}


# (profile, where its step times come from, read directly)
CASES = [
    (FIXTURES / "level0", lambda: {k: v["Stage"] for k, v in _step_trace_csv(FIXTURES / "level0").items()}),
    (FIXTURES / "diffusion_1rank", lambda: _truth_steps("diffusion_1rank")),
    (FIXTURES / "diffusion_2rank", lambda: _truth_steps("diffusion_2rank")),
    (FIXTURES / "bare_trace", lambda: _truth_steps("bare_trace")),
    (DEMO, lambda: {k: v["Stage"] for k, v in _step_trace_csv(DEMO).items()}),
    *[(LEVELS / "text" / lv, (lambda lv=lv: {k: v["Stage"] for k, v in _step_trace_csv(LEVELS / "text" / lv).items()}))
      for lv in ("level0", "level1", "level2")],
    (LEVELS / "db" / "level1", lambda: {k: v["Stage"] for k, v in _step_trace_db(LEVELS / "db" / "level1").items()}),
    (REAL / "mindinsight-msprof-2dev-hccl", lambda: _msprof_iterations(REAL / "mindinsight-msprof-2dev-hccl")),
    (REAL / "kineto" / "hta-sampled-2rank", lambda: _kineto_steps(REAL / "kineto" / "hta-sampled-2rank")),
    (REAL / "kineto" / "hta-alexnet-1gpu", lambda: _kineto_steps(REAL / "kineto" / "hta-alexnet-1gpu")),
    (REAL / "mstt-advisor-fixtures/ut/advisor/compute_advice/data",
     lambda: _kernel_spans(REAL / "mstt-advisor-fixtures/ut/advisor/compute_advice/data/kernel_details.csv")),
]


def _account(s) -> dict:
    """{(rank, step): µs} of the account's parts within the step (the idle time after it aside)."""
    return {(r, st): us for r, st, us in s.con.execute(
        "SELECT rank, step, sum(us) FROM step_account WHERE part <> 'between' GROUP BY rank, step").fetchall()}


@pytest.mark.parametrize("path,expected", CASES, ids=lambda c: str(c).split("shared/")[-1] if isinstance(c, Path) else "")
def test_the_parts_add_up_to_the_step(path, expected):
    s = open_session(path, cache=False)
    got = _account(s)
    steps = {(r, st): us for r, st, us in s.con.execute(
        "SELECT rank, step, (end_ns - start_ns) / 1e3 FROM step_windows").fetchall()}
    assert got and set(got) == set(steps)
    for key, us in got.items():
        assert us == pytest.approx(steps[key], rel=1e-9), key
    truth = expected()
    assert set(got) == set(truth)
    for key, us in got.items():
        assert us == pytest.approx(truth[key], rel=TOLERANCE), key


PROFILER_PARTS = [(FIXTURES / "level0", _step_trace_csv), (FIXTURES / "diffusion_2rank", _step_trace_csv),
                  (DEMO, _step_trace_csv), *[(LEVELS / "text" / lv, _step_trace_csv) for lv in ("level0", "level1", "level2")],
                  (LEVELS / "db" / "level1", _step_trace_db)]


@pytest.mark.parametrize("path,read", PROFILER_PARTS, ids=lambda c: str(c).split("shared/")[-1] if isinstance(c, Path) else "")
def test_the_parts_are_the_profilers(path, read):
    """Compute is the profiler's Computing, exposed comm its Communication(Not Overlapped), free time
    and copies its Free, each within 0.5 % of the step."""
    s = open_session(path, cache=False)
    parts = defaultdict(float)
    for rank, step, part, us in s.con.execute(
            "SELECT rank, step, part, sum(us) FROM step_account WHERE part <> 'between' GROUP BY ALL").fetchall():
        parts[rank, step, {"copy": "free"}.get(part, part)] += us
    truth = read(path)
    assert truth
    for (rank, step), t in truth.items():
        for part, column in (("compute", "Computing"), ("comm_exposed", "Communication(Not Overlapped)"),
                             ("free", "Free")):
            assert parts[rank, step, part] == pytest.approx(t[column], abs=TOLERANCE * t["Stage"]), (rank, step, part)


def test_an_account_the_profiler_disagrees_with_is_shown_as_such():
    """Kernels that say 60 µs of compute in a 100 µs step, against a step_trace_time.csv that says
    90: the check names the rank and by how much (30 % of the step), and the Overview and the text
    and Markdown reports say so (the text reports said nothing)."""
    from analysis_support import make_profile
    from npu_tui.analysis import build_report, load_rules, render
    from npu_tui.text import markdown
    from npu_tui.tui.panes.overview import account_text

    kernels = [(0, 1, "aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE", 0, 60_000, None),
               (0, 1, "aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE", 90_000, 10_000, None)]
    agree = make_profile(kernels, step_trace=[(0, 1, 70.0, 0.0, 0.0, 30.0, 100.0)])
    differ = make_profile(kernels, step_trace=[(0, 1, 90.0, 0.0, 0.0, 10.0, 100.0)])
    (dev,), = agree.con.execute("SELECT deviation FROM step_account_check").fetchall()
    assert dev == pytest.approx(0.0, abs=1e-12)
    (rank, source, steps, dev, differs, _), = differ.con.execute("SELECT * FROM step_account_check").fetchall()
    assert (rank, source, steps, differs) == (0, "step_trace_time.csv", 1, True) and dev == pytest.approx(0.2)
    report = build_report(differ, load_rules())
    said = "differs from step_trace_time.csv: rank 0 by 20.0%"
    assert said in account_text(report).plain
    assert f"The account {said}" in render(report, "text")
    assert f"**{markdown('The account ' + said)}**" in render(report, "md")
    report = build_report(agree, load_rules())
    assert "agrees with step_trace_time.csv" in account_text(report).plain
    assert "The account agrees with step_trace_time.csv" in render(report, "text")


def test_a_rank_whose_profiler_steps_are_not_its_kernels_is_said_not_compared():
    """step_trace_time.csv's step 2 where the kernels ran in step 1: no step to compare, and the
    rank had no check row at all, while the report said the account "agrees" (with the others)."""
    from analysis_support import make_profile
    from npu_tui.analysis import build_report, load_rules, render
    from npu_tui.tui.panes.overview import account_text

    kernels = [(0, 1, "aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE", 0, 60_000, None),
               (0, 1, "aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE", 90_000, 10_000, None)]
    p = make_profile(kernels, step_trace=[(0, 2, 70.0, 0.0, 0.0, 30.0, 100.0)])
    assert p.con.execute("SELECT rank, steps, deviation, differs FROM step_account_check").fetchall() == [
        (0, 0, None, False)]
    report = build_report(p, load_rules())
    said = "is not compared with step_trace_time.csv: rank 0 has none of its kernels' steps there"
    assert said in account_text(report).plain and f"The account {said}" in render(report, "text")
    assert "agrees" not in render(report, "text")
    # A rank with no kernel loaded (its kernel file or db export lost) has nothing to account for:
    # said so, not as steps that are not its kernels'.
    p = make_profile(kernels, step_trace=[(0, 1, 70.0, 0.0, 0.0, 30.0, 100.0), (1, 1, 70.0, 0.0, 0.0, 30.0, 100.0)])
    assert p.con.execute("SELECT rank, steps, kernels FROM step_account_check").fetchall() == [(0, 1, 2), (1, 0, 0)]
    said = account_text(build_report(p, load_rules())).plain
    assert "(within 0.1%) for rank 0; not compared: rank 1 has no kernels loaded" in said


def test_a_cpu_only_trace_accounts_for_its_profiler_steps(tmp_path):
    """On the CPU a step is its ProfilerStep range, wider than its ops (the Python around them):
    the parts add up to it, and device idle is no finding (there is no device)."""
    torch = pytest.importorskip("torch", reason="the trace is written by torch")
    import time

    from torch.profiler import ProfilerActivity, profile, schedule

    a = torch.randn(32, 32)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=3, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(tmp_path / "cpu.pt.trace.json"))) as prof:
        for _ in range(4):  # a warm-up step, then the three recorded
            a @ a
            time.sleep(0.002)  # host time inside the step, no op running
            prof.step()
    events = json.loads((tmp_path / "cpu.pt.trace.json").read_text())["traceEvents"]
    steps = {int(e["name"].split("#")[1]): e["dur"] for e in events if e.get("name", "").startswith("ProfilerStep#")}
    s = open_session(tmp_path, cache=False)
    got = _account(s)
    assert {st for _, st in got} == set(steps)
    for (_, st), us in got.items():
        assert us == pytest.approx(steps[st], abs=1.0)  # the file's µs, rounded to 3 decimals
    assert "device_idle_high" not in {f["rule"] for f in s.findings}


def test_time_between_steps_reaches_only_the_next_step(tmp_path):
    """A schedule that cycles records steps 1-2 and 4-5 (3 is its warm-up, not recorded) into the
    traces of one worker: the gap after step 2 holds a whole step, not time between steps."""
    torch = pytest.importorskip("torch", reason="the traces are written by torch")
    from torch.profiler import ProfilerActivity, profile, schedule

    a = torch.randn(32, 32)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=2, repeat=2),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(tmp_path / f"trace_{p.step_num}.json"))) as prof:
        for _ in range(7):
            a @ a
            prof.step()
    spans = {}  # step: (start, end) in µs, from the files
    for f in tmp_path.glob("trace_*.json"):
        for e in json.loads(f.read_text())["traceEvents"]:
            if e.get("name", "").startswith("ProfilerStep#"):
                spans[int(e["name"].split("#")[1])] = (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
    assert sorted(spans) == [1, 2, 4, 5]
    s = open_session(tmp_path, cache=False)
    between = dict(s.con.execute("SELECT step, us FROM step_account WHERE part = 'between'").fetchall())
    assert between == pytest.approx({1: spans[2][0] - spans[1][1], 4: spans[5][0] - spans[4][1]}, abs=0.01)


def test_kernels_outside_every_step_make_no_step(real, tmp_path):
    """Two kernels before the first ProfilerStep of a rank with numbered steps: outside every
    step, not a step of their own spanning the trace."""
    src = REAL / "kineto" / "hta-sampled-2rank" / "sampled_rank-0.json.gz"
    with gzip.open(src, "rt") as fh:
        doc = json.load(fh)
    first = min(e["ts"] for e in doc["traceEvents"] if e.get("name", "").startswith("ProfilerStep#"))
    kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
    for i in range(2):
        doc["traceEvents"].append(dict(kernel, ts=first - 1000 * (i + 1), args={"device": 0, "stream": 7}))
    with gzip.open(tmp_path / "sampled_rank-0.json.gz", "wt") as fh:
        json.dump(doc, fh)
    intact, mixed = open_session(src.parent, cache=False), open_session(tmp_path, cache=False)
    assert mixed.con.execute("SELECT count(*) FROM kernels WHERE step IS NULL").fetchone()[0] >= 2
    assert _account(mixed) == pytest.approx({k: v for k, v in _account(intact).items() if k[0] == 0})


def test_a_step_whose_step_trace_row_did_not_read_is_still_among_the_ranks_steps(tmp_path):
    """One row of step_trace_time.csv that does not read ("395264.958us") is skipped, a warning:
    the rank is whole, its step account takes 5 steps and its Ranks figures (rank_summary) took
    the 4 left, and the imbalance between the ranks moved with it. The step the file lost is
    measured as a rank's without a step trace is."""
    import shutil

    shutil.copytree(FIXTURES / "diffusion_2rank", tmp_path / "job")
    whole = open_session(FIXTURES / "diffusion_2rank", cache=False)
    st = sorted((tmp_path / "job").glob("*/ASCEND_PROFILER_OUTPUT/step_trace_time.csv"))[0]
    rows = list(csv.reader(st.read_text(encoding="utf-8").splitlines()))
    rows[2][rows[0].index("Computing")] += "us"
    st.write_text("\n".join(",".join(r) for r in rows) + "\n", encoding="utf-8")
    s = open_session(tmp_path / "job", cache=False)
    assert s.con.execute("SELECT sum(skipped_rows) FROM load_log WHERE file LIKE '%step_trace_time.csv'"
                         ).fetchone() == (1,) and s.report["complete"]
    q = "SELECT rank, steps, step_source FROM rank_summary ORDER BY rank"
    assert s.con.execute(q).fetchall() == whole.con.execute(q).fetchall()
    account = dict(s.con.execute("SELECT rank, any_value(steps) FROM step_account_mean GROUP BY rank").fetchall())
    assert {r: n for r, n, _ in s.con.execute(q).fetchall()} == account
    lost = s.con.execute("SELECT step, source FROM step_breakdown WHERE rank = 0 AND source <> 'step_trace_time.csv'"
                         ).fetchall()
    assert lost == [(int(rows[2][1]), "overlap_lanes")]
    # the account is checked against the profiler's own steps, not the one measured for it
    checked = dict(s.con.execute("SELECT rank, steps FROM step_account_check").fetchall())
    assert checked == {0: account[0] - 1, 1: account[1]}


def test_overlap_lanes_cut_short_do_not_measure_the_exposed_comm(tmp_path):
    """A rank's trace_view.json cut halfway beside its whole kernel_details.csv: its overlap lanes
    stop at the cut, and the exposed comm by stage read nothing exposed after it (the Comm pane
    0 where the step account had its comm). Such a rank is measured by its kernels, as the step
    account is, and the two agree."""
    import shutil

    shutil.copytree(LEVELS / "text" / "level1", tmp_path / "job")
    trace = tmp_path / "job" / "rank1_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    data = trace.read_bytes()
    # (its lanes are written one after another: cut inside the last, the others whole)
    trace.write_bytes(data[:data.rindex(b'"Communication(Not Overlapped)"') - 200])
    s = open_session(tmp_path / "job", cache=False)
    q = s.con.execute
    assert q("SELECT rank, any_value(source) FROM comm_exposure GROUP BY rank ORDER BY rank").fetchall() == [
        (0, "overlap_lanes"), (1, "kernels")]
    exposed = dict(q("SELECT rank, sum(exposed_us_per_step) FROM comm_exposure GROUP BY rank").fetchall())
    account = dict(q("SELECT rank, sum(us_per_step) FROM step_account_mean WHERE part = 'comm_exposed' "
                     "GROUP BY rank").fetchall())
    assert exposed[1] == pytest.approx(account[1], rel=1e-6) and exposed[1] > 0


@pytest.mark.parametrize("path", [DEMO, LEVELS / "text" / "level1"], ids=["demo", "level1"])
def test_each_comm_op_says_how_much_of_it_no_compute_covers(path):
    """comm_op_times.exposed_ms per rank and op: each comm kernel's duration less its overlap with
    the union of the compute kernels, worked out here interval by interval."""
    s = open_session(path)
    rows = s.con.execute("SELECT rank, op, start_ns, end_ns, is_comm, is_compute FROM kernel_stages "
                         "WHERE dur_ns > 0").fetchall()
    compute, comm = defaultdict(list), []
    for rank, op, a, b, is_comm, is_compute in rows:
        if is_compute:
            compute[rank].append((a, b))
        if is_comm:
            comm.append((rank, op, a, b))
    union = {}
    for rank, spans in compute.items():
        merged = []
        for a, b in sorted(spans):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        union[rank] = merged
    want = defaultdict(float)
    for rank, op, a, b in comm:
        covered = sum(max(0, min(b, y) - max(a, x)) for x, y in union.get(rank, []))
        want[(rank, op)] += (b - a - covered) / 1e6
    got = {(r, op): ms for r, op, ms in s.con.execute("SELECT rank, op_type, exposed_ms FROM comm_op_times").fetchall()}
    assert want and got.keys() == want.keys()
    for key, ms in want.items():
        assert got[key] == pytest.approx(ms, rel=1e-9, abs=1e-9), key


def _union_ns(spans) -> int:
    total, end = 0, None
    for lo, hi in sorted(spans):
        if end is None or lo > end:
            total, end = total + hi - lo, hi
        elif hi > end:
            total, end = total + hi - end, hi
    return total


@pytest.mark.parametrize("path", [FIXTURES / "diffusion_2rank", LEVELS / "text" / "level1"],
                         ids=lambda p: p.name)
def test_every_ranks_running_totals_start_from_zero(path):
    """The sweeps run over all ranks in one order: each rank's totals through its last segment are
    its own time alone (the union of its compute kernels, of its Computing lanes), none of the ranks'
    before it."""
    s = open_session(path, cache=False)
    ranks = [r for (r,) in s.con.execute("SELECT DISTINCT rank FROM kernel_stages ORDER BY rank").fetchall()]
    assert len(ranks) >= 2
    for rank in ranks:
        kernels = s.con.execute("SELECT start_ns, end_ns FROM kernel_stages WHERE rank = ? AND is_compute "
                                "AND dur_ns > 0", [rank]).fetchall()
        lanes = s.con.execute("SELECT start_ns, start_ns + dur_ns FROM overlap_lanes WHERE rank = ? "
                              "AND lane = 'Computing' AND dur_ns > 0", [rank]).fetchall()
        busy, lane = s.con.execute(
            "SELECT (SELECT arg_max(compute_through_ns, start_ns) FROM busy_segments WHERE rank = $r), "
            "(SELECT arg_max(computing_through_ns, start_ns) FROM lane_segments WHERE rank = $r)",
            {"r": rank}).fetchone()
        assert busy == _union_ns(kernels) > 0, rank
        assert lane == _union_ns(lanes) > 0, rank


def test_comm_ops_of_zero_times_leave_their_exposed_comm_unsplit(tmp_path):
    """communication.json ops whose times are all 0 (the profiler matched no HCCL task to them):
    the split's weights summed to nothing, so the rank's exposed comm left the account (74 % of the
    step said free, the rank taken for host-bound). It stays, unsplit, as the profiler's own
    Communication(Not Overlapped). Their waits of 0 are unknown, not the least: the rank had been
    the one its peer waits for at every collective, with nothing said of its times."""
    import shutil

    path = shutil.copytree(LEVELS / "text" / "level1", tmp_path / "level1")
    (comm,) = (path / "rank0_ascend_pt").rglob("communication.json")
    doc = json.loads(comm.read_text(encoding="utf-8"))
    for ops in (ops for step in doc.values() for ops in step.values()):
        for op in ops.values():
            times = op["Communication Time Info"]
            for k in [k for k in times if k.endswith("(ms)")]:
                times[k] = 0
    comm.write_text(json.dumps(doc), encoding="utf-8")
    s = open_session(path, cache=False)
    assert s.con.execute("SELECT count(*) FROM rank_waits WHERE waited_for OR waits_for IS NOT NULL").fetchone() == (0,)
    (said,) = [h for h in s.health if h.rank == 0 and h.file.endswith("communication.json")]
    assert said.severity == "warning" and "4 of its 4 ops took no time" in said.what
    parts = defaultdict(float)
    for rank, step, part, detail, us in s.con.execute(
            "SELECT rank, step, part, detail, sum(us) FROM step_account WHERE part <> 'between' GROUP BY ALL").fetchall():
        parts[rank, step, {"copy": "free"}.get(part, part)] += us
        if rank == 0 and part == "comm_exposed":
            assert detail == "unsplit"
    for (rank, step), t in _step_trace_csv(path).items():
        for part, column in (("compute", "Computing"), ("comm_exposed", "Communication(Not Overlapped)"),
                             ("free", "Free")):
            assert parts[rank, step, part] == pytest.approx(t[column], abs=TOLERANCE * t["Stage"]), (rank, step, part)


def test_the_step_the_profiler_closed_at_its_exit_with_nothing_in_it_is_no_step(tmp_path):
    """A loop that ends inside the schedule's active steps: its last prof.step() opens a
    ProfilerStep that runs, empty, until the profiler exits. On the CPU a step is its ProfilerStep
    range, so that 40 µs step was averaged in with the real ones (the mean step halved)."""
    torch = pytest.importorskip("torch", reason="the trace is written by torch")
    from torch.profiler import ProfilerActivity, profile, schedule

    a = torch.randn(64, 64)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=5),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(tmp_path / "cpu.pt.trace.json"))) as prof:
        for _ in range(3):
            a @ a
            prof.step()
    events = json.loads((tmp_path / "cpu.pt.trace.json").read_text())["traceEvents"]
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    ran = {int(e["name"].split("#")[1]) for e in events if e.get("name", "").startswith("ProfilerStep#")
           and any(e["ts"] <= o["ts"] < e["ts"] + e["dur"] for o in ops)}
    every = {int(e["name"].split("#")[1]) for e in events if e.get("name", "").startswith("ProfilerStep#")}
    assert ran < every  # the last, empty
    s = open_session(tmp_path, cache=False)
    assert {st for _, st in _account(s)} == ran
    assert {r["step"] for r in s.report["steps"]} == ran
