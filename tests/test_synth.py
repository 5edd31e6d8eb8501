"""The synthetic profile generator: determinism, committed outputs, file quirks, and truth checked
against the written files with independent code (csv/json parsing and a few lines of interval
arithmetic here, not the generator's own helpers)."""

import csv
import json
from decimal import Decimal
from pathlib import Path

import pytest

from npu_tui.demo import PATH as DEMO_PATH
from npu_tui.synth import Spec, generate, preset, truth_path
from npu_tui.synth.__main__ import COMMITTED, SOURCE_ROOT

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
# Profiles with kernel_details.csv, by name; bare_trace has only trace_view.json.
WITH_CSV = {
    "demo": DEMO_PATH,
    "diffusion_1rank": FIXTURES / "diffusion_1rank",
    "diffusion_2rank": FIXTURES / "diffusion_2rank",
    "level0": FIXTURES / "level0",
}


# ---- independent helpers -------------------------------------------------------------------

def ns(cell: str) -> int:
    return int(Decimal(cell.strip()) * 1000)


def union(ivs):
    out = []
    for s, e in sorted(ivs):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def length(ivs) -> int:
    return sum(e - s for s, e in ivs)


def intersect(a, b):
    """Intersection of two unions (lists of disjoint sorted intervals)."""
    return [[max(s, t), min(e, u)] for s, e in a for t, u in b if max(s, t) < min(e, u)]


def minus(a, b):
    return union(iv for s, e in a for iv in _cut(s, e, b))


def _cut(s, e, b):
    cur = s
    for t, u in b:
        if u <= cur or t >= e:
            continue
        if t > cur:
            yield [cur, t]
        cur = max(cur, u)
    if cur < e:
        yield [cur, e]


def rank_dirs(profile: Path):
    if (profile / "ASCEND_PROFILER_OUTPUT").is_dir():
        return [profile]
    return sorted(p for p in profile.iterdir() if p.name.endswith("_ascend_pt"))


def kernel_rows(rank_dir: Path):
    with open(rank_dir / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def is_comm(row) -> bool:
    return row["Name"].startswith("hcom_")


def category(row) -> str:
    """design.md §5 on the Level1 Type/core, written out here for the check."""
    t, core = row["Type"].lower(), row["Accelerator Core"]
    if core == "HCCL" or t.startswith("hcom_"):
        return "Comm"
    if "attention" in t:
        return "FA"
    if "matmul" in t:
        return "MatMul"
    if t.startswith("conv"):
        return "Conv"
    if core == "AI_CPU":
        return "Other"
    return "Vector"


def trace(path: Path):
    events = json.loads(path.read_text(encoding="utf-8"))
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    return events, names


def truth_of(profile: Path):
    return json.loads(truth_path(profile).read_text(encoding="utf-8"))


def tree(root: Path):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ---- determinism and committed outputs -----------------------------------------------------

SMALL = Spec(ranks=2, denoise_steps=2, blocks=1, profiler_steps=2, seed=11)


def test_same_spec_gives_byte_identical_files(tmp_path):
    a, b = tmp_path / "a" / "p", tmp_path / "b" / "p"
    generate(a, SMALL)
    generate(b, SMALL)
    assert tree(a) == tree(b)
    assert truth_path(a).read_bytes() == truth_path(b).read_bytes()
    generate(a, SMALL)  # regenerating over an earlier output replaces it
    assert tree(a) == tree(b)


def test_other_seed_changes_durations(tmp_path):
    generate(tmp_path / "a", SMALL)
    generate(tmp_path / "b", Spec(**{**SMALL.__dict__, "seed": 12}))
    assert tree(tmp_path / "a") != tree(tmp_path / "b")


def test_refuses_to_overwrite_a_foreign_folder(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(FileExistsError):
        generate(tmp_path / "mine", SMALL)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"


@pytest.mark.parametrize("rel, name", COMMITTED)
def test_committed_outputs_equal_a_fresh_generation(tmp_path, rel, name):
    committed = SOURCE_ROOT / rel
    fresh = tmp_path / name
    generate(fresh, preset(name), preset=name)
    assert tree(committed) == tree(fresh), "run: python -m npu_tui.synth --committed"
    assert truth_path(committed).read_bytes() == truth_path(fresh).read_bytes()


def test_committed_sizes_stay_small():
    assert sum(len(b) for b in tree(FIXTURES).values()) < 5_000_000
    demo = DEMO_PATH.parent
    assert sum(len(b) for b in tree(demo).values()) < 3_500_000  # 2 ranks, the recipe's 5 profiled steps


# ---- file formats ----------------------------------------------------------------------------

def test_kernel_details_quirks():
    rank = rank_dirs(WITH_CSV["diffusion_2rank"])[0]
    raw = (rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").read_bytes()
    lines = raw.split(b"\n")[:-1]
    assert all(line.endswith(b"\r") for line in lines)
    assert b',"""9216;2048,3072;3072,9216""",DT_BF16;DT_BF16;DT_BF16,ND;ND;ND,"""2048,9216""",' in raw
    rows = kernel_rows(rank)
    header = raw.split(b"\r\n")[0].decode().split(",")
    assert header[:2] == ["Step Id", "Device_id"] and "Block Num" in header
    assert all(r["Start Time(us)"].endswith("\t") for r in rows)
    assert {r["Device_id"] for r in rows} == {"4"}
    comm = [r for r in rows if is_comm(r)]
    assert comm and all(r["Accelerator Core"] == "HCCL" and r["Task ID"] == "N/A" for r in comm)
    assert {r["Type"] for r in comm} == {"hcom_allGather_", "hcom_allReduce_"}
    compute = [r for r in rows if not is_comm(r)]
    assert all(r["Input Shapes"].startswith('"') and r["Input Shapes"].endswith('"') for r in compute)
    assert {r["Input Data Types"].split(";")[0] for r in compute} >= {"DT_BF16"}
    out = rank / "ASCEND_PROFILER_OUTPUT"
    assert (out / "step_trace_time.csv").read_bytes().count(b"\r\n") == 3  # header + 2 steps
    assert b"\r" not in (out / "op_statistic.csv").read_bytes()


def test_level0_has_na_type_and_core():
    rows = kernel_rows(WITH_CSV["level0"])
    assert rows and all(r["Type"] == "N/A" and r["Accelerator Core"] == "N/A" for r in rows)
    info = json.loads((WITH_CSV["level0"] / "profiler_info_0.json").read_text())
    assert info["config"]["experimental_config"]["_profiler_level"] == "Level0"
    assert not (WITH_CSV["level0"] / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv").exists()


def test_profiler_info_gives_rank_and_level():
    for r, rank in enumerate(rank_dirs(WITH_CSV["diffusion_2rank"])):
        info = json.loads((rank / f"profiler_info_{r}.json").read_text())
        assert info["rank_id"] == r
        assert info["config"]["experimental_config"]["_profiler_level"] == "Level1"


@pytest.mark.parametrize("name", ["demo", "diffusion_2rank"])
def test_trace_view_matches_kernel_details(name):
    for rank in rank_dirs(WITH_CSV[name]):
        path = rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
        assert b"\r" not in path.read_bytes()
        events, names = trace(path)
        assert set(names.values()) == {"Python", "CANN", "Ascend Hardware", "HCCL", "Overlap Analysis"}
        pid = {v: k for k, v in names.items()}
        rows = kernel_rows(rank)
        device = rows[0]["Device_id"]
        labels = {e["pid"]: e["args"]["labels"] for e in events if e.get("name") == "process_labels"}
        assert labels[pid["Ascend Hardware"]] == f"NPU {device}"
        xs = [e for e in events if e["ph"] == "X"]
        assert all(isinstance(e["ts"], str) and len(e["ts"].split(".")[1]) == 3 for e in xs)

        def key(e):
            return (e["name"], ns(e["ts"]), ns(str(e["dur"])))

        hw = sorted(key(e) for e in xs if e["pid"] == pid["Ascend Hardware"])
        hcom = sorted(key(e) for e in xs if e["pid"] == pid["HCCL"] and e["tid"] == 0)
        csv_rows = sorted((r["Name"], ns(r["Start Time(us)"]), ns(r["Duration(us)"])) for r in rows)
        assert sorted(hw + hcom) == csv_rows
        subtasks = [e for e in xs if e["pid"] == pid["HCCL"] and e["tid"] != 0]
        assert {e["name"] for e in subtasks} == {"Notify_Wait", "Memcpy", "Notify_Record"}
        assert not {e["name"] for e in subtasks} & {r["Name"] for r in rows}

        starts = {(e["ts"], e["id"]) for e in events if e["ph"] == "f" and e.get("cat") == "async_npu"}
        flows_s = {e["id"] for e in events if e["ph"] == "s" and e.get("cat") == "async_npu"}
        assert len(starts) == len(flows_s) == len(rows)   # one flow per kernel, ids unique
        assert {fid for _, fid in starts} == flows_s
        assert {ns(ts) for ts, _ in starts} == {s for _, s, _ in csv_rows}
        steps = [e for e in xs if e["name"].startswith("ProfilerStep#")]
        assert [e["name"] for e in steps] == [f"ProfilerStep#{i}" for i in range(1, preset(name).profiler_steps + 1)]


def test_markers_are_module_ranges_in_python_process():
    rank = rank_dirs(WITH_CSV["demo"])[0]
    events, names = trace(rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json")
    modules = [e["name"] for e in events
               if e["ph"] == "X" and names[e["pid"]] == "Python" and e.get("cat") == "python_function"]
    spec = preset("demo")
    assert modules.count("nn.Module: WanTransformer3DModel_0") == spec.profiler_steps * spec.denoise_steps
    assert modules.count("nn.Module: AutoencoderKLWan_0") == spec.profiler_steps
    assert modules.count("nn.Module: WanDecoder3d_0") == spec.profiler_steps
    rank = rank_dirs(WITH_CSV["diffusion_2rank"])[0]
    events, _ = trace(rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json")
    assert not [e for e in events if str(e.get("name", "")).startswith("nn.Module")]


# ---- timeline consistency, computed here from the kernel rows ------------------------------

def step_intervals(rows):
    steps = {}
    for r in rows:
        s = ns(r["Start Time(us)"])
        steps.setdefault(int(r["Step Id"]), []).append((s, s + ns(r["Duration(us)"]), is_comm(r)))
    return steps


@pytest.mark.parametrize("name", sorted(WITH_CSV))
def test_step_trace_and_overlap_lanes_follow_from_kernels(name):
    for rank in rank_dirs(WITH_CSV[name]):
        out = rank / "ASCEND_PROFILER_OUTPUT"
        with open(out / "step_trace_time.csv", newline="") as f:
            reported = {int(r["Step"]): r for r in csv.DictReader(f)}
        events, names = trace(out / "trace_view.json")
        lanes = {}
        for e in events:
            if e["ph"] == "X" and names[e["pid"]] == "Overlap Analysis":
                s = ns(e["ts"])
                lanes.setdefault(e["name"], []).append([s, s + ns(str(e["dur"]))])
        all_lanes = {k: [] for k in ("Computing", "Communication", "Communication(Not Overlapped)", "Free")}
        for step, ivs in sorted(step_intervals(kernel_rows(rank)).items()):
            compute = union([s, e] for s, e, c in ivs if not c)
            comm = union([s, e] for s, e, c in ivs if c)
            exposed = minus(comm, compute)
            span = [min(s for s, _, _ in ivs), max(e for _, e, _ in ivs)]
            free = minus([span], union(compute + comm))
            got = reported[step]
            assert ns(got["Computing"]) == length(compute)
            assert ns(got["Communication"]) == length(comm)
            assert ns(got["Communication(Not Overlapped)"]) == length(exposed)
            assert ns(got["Overlapped"]) == length(comm) - length(exposed)
            assert ns(got["Stage"]) == span[1] - span[0]
            assert ns(got["Free"]) == length(free)
            assert ns(got["Bubble"]) == 0
            for lane, ivs_ in (("Computing", compute), ("Communication", comm),
                               ("Communication(Not Overlapped)", exposed), ("Free", free)):
                all_lanes[lane] += ivs_
        for lane, ivs_ in all_lanes.items():
            assert union(lanes.get(lane, [])) == union(ivs_), lane


def test_op_statistic_sums_kernel_rows():
    rank = rank_dirs(WITH_CSV["diffusion_1rank"])[0]
    rows = [r for r in kernel_rows(rank) if not is_comm(r)]
    with open(rank / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv", newline="") as f:
        stats = {(r["OP Type"], r["Core Type"]): r for r in csv.DictReader(f)}
    for (typ, core), st in stats.items():
        durs = [ns(r["Duration(us)"]) for r in rows if (r["Type"], r["Accelerator Core"]) == (typ, core)]
        assert int(st["Count"]) == len(durs)
        assert ns(st["Total Time(us)"]) == sum(durs)
        assert ns(st["Min Time(us)"]) == min(durs) and ns(st["Max Time(us)"]) == max(durs)
    assert sum(int(s["Count"]) for s in stats.values()) == len(rows)


def test_communication_json_lists_every_collective():
    for rank in rank_dirs(WITH_CSV["demo"]):
        out = rank / "ASCEND_PROFILER_OUTPUT"
        comm = json.loads((out / "communication.json").read_text())
        rows = [r for r in kernel_rows(rank) if is_comm(r)]
        for step in (1, 2):
            ops = comm[f"step{step}"]["collective"]
            names = {k.split("@")[0] for k in ops if k != "Total Op Info"}
            assert names == {r["Name"] for r in rows if r["Step Id"] == str(step)}
            for k, v in ops.items():
                if k == "Total Op Info":
                    continue
                row = next(r for r in rows if r["Name"] == k.split("@")[0])
                info = v["Communication Time Info"]
                assert info["Elapse Time(ms)"] == pytest.approx(ns(row["Duration(us)"]) / 1e6)
                # elapse = transit + wait + idle, as the profiler's own files have it
                assert info["Transit Time(ms)"] + info["Wait Time(ms)"] + info["Idle Time(ms)"] == pytest.approx(
                    info["Elapse Time(ms)"])
                assert info["Idle Time(ms)"] >= -1e-9
        matrix = json.loads((out / "communication_matrix.json").read_text())
        assert set(matrix["step1"]["collective"]) == {
            "allgather-total@17522688603477080586", "allreduce-total@17522688603477080586"}


# ---- truth ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(WITH_CSV))
def test_truth_agrees_with_the_files(name):
    profile = WITH_CSV[name]
    truth = truth_of(profile)
    level1 = truth["level"] == "Level1"
    for t, rank in zip(truth["ranks"], rank_dirs(profile)):
        rows = kernel_rows(rank)
        assert t["kernel_count"] == len(rows)
        assert t["kernel_time_ns"] == sum(ns(r["Duration(us)"]) for r in rows)
        stage_of = {}
        for stage, st in t["stages"].items():
            wins = st["windows"]
            assert st["wall_ns"] == sum(e - s for s, e in wins)
            inside = [r for r in rows if any(s <= ns(r["Start Time(us)"]) < e for s, e in wins)]
            for r in inside:
                assert r["Name"] + r["Start Time(us)"] not in stage_of, "windows of two stages overlap"
                stage_of[r["Name"] + r["Start Time(us)"]] = stage
            assert st["kernel_count"] == len(inside)
            assert st["kernel_time_ns"] == sum(ns(r["Duration(us)"]) for r in inside)
            if level1:
                for cat, v in st["categories"].items():
                    mine = [ns(r["Duration(us)"]) for r in inside if category(r) == cat]
                    assert (v["count"], v["time_ns"]) == (len(mine), sum(mine)), (stage, cat)
            compute = union([ns(r["Start Time(us)"]), ns(r["Start Time(us)"]) + ns(r["Duration(us)"])]
                            for r in rows if not is_comm(r))
            comm = union([ns(r["Start Time(us)"]), ns(r["Start Time(us)"]) + ns(r["Duration(us)"])]
                         for r in rows if is_comm(r))
            assert st["comm_ns"] == length(intersect(comm, union(wins)))
            assert st["exposed_comm_ns"] == length(intersect(minus(comm, compute), union(wins)))
        assert len(stage_of) == len(rows), "every kernel lies in one stage window"
        steps = step_intervals(rows)
        assert [s["step"] for s in t["steps"]] == sorted(steps)
        for s in t["steps"]:
            assert s["kernel_count"] == len(steps[s["step"]])


def test_demo_is_built_to_fire_findings():
    """design.md §6 thresholds on the DiT: FA > 0.3 and exposed comm > 0.3 on both demo ranks, and a
    MatMul-bound DiT in the 1-rank fixture."""
    for t in truth_of(DEMO_PATH)["ranks"]:
        dit = t["stages"]["DiT"]
        assert dit["categories"]["FA"]["time_ns"] / dit["kernel_time_ns"] > 0.3
        assert dit["exposed_comm_ns"] / dit["wall_ns"] > 0.3
        assert t["stages"]["VAE"]["categories"]["Conv"]["time_ns"] > t["stages"]["VAE"]["kernel_time_ns"] / 2
    dit = truth_of(WITH_CSV["diffusion_1rank"])["ranks"][0]["stages"]["DiT"]
    assert dit["categories"]["MatMul"]["time_ns"] / dit["kernel_time_ns"] > 0.5


def test_options_change_what_is_generated(tmp_path):
    plain = generate(tmp_path / "plain", Spec(denoise_steps=1, blocks=1))
    wan = generate(tmp_path / "wan", Spec(denoise_steps=1, blocks=1, vae="wan", text_encoder=False,
                                          vae_attention=False))
    types = {r["Type"] for r in kernel_rows(rank_dirs(tmp_path / "wan")[0])}
    assert "Conv3DV2" in types and "GroupNormV2" not in types and "RmsNorm" in types
    assert wan["ranks"][0]["stages"]["VAE"]["categories"]["FA"]["count"] == 0
    assert plain["ranks"][0]["stages"]["VAE"]["categories"]["FA"]["count"] == 1
    # text encoder off: Other holds only the latent initialisation (one AI_CPU kernel)
    assert wan["ranks"][0]["stages"]["Other"]["kernel_count"] == 1
    bare = generate(tmp_path / "bare", Spec(layout="bare", denoise_steps=1, blocks=1))
    assert [p.name for p in (tmp_path / "bare").iterdir()] == ["trace_view.json"]
    assert bare["ranks"][0]["kernel_count"] == plain["ranks"][0]["kernel_count"]
    with pytest.raises(ValueError):
        Spec(ranks=2, layout="rank")


def test_kernels_option_scales_the_denoising_loop():
    from npu_tui.synth.timeline import Timeline

    tl = Timeline(preset("diffusion_1rank", kernels=20_000))
    count = sum(len(rs.kernels) for step in tl.steps() for rs in step)
    assert abs(count - 20_000) < 100   # whole DiT forwards (39 kernels) per profiler step


# ---- loading ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(WITH_CSV))
def test_loads_with_the_truth_kernel_count(name):
    from npu_tui.profile import load_profile

    truth = truth_of(WITH_CSV[name])
    prof = load_profile(WITH_CSV[name])
    got = dict(prof.con.execute(
        "SELECT rank, count(*) FROM kernels WHERE source = 'kernel_details' GROUP BY rank").fetchall())
    assert got == {t["rank"]: t["kernel_count"] for t in truth["ranks"]}
    devices = dict(prof.con.execute(
        "SELECT rank, any_value(device_id) FROM kernels GROUP BY rank").fetchall())
    assert devices == {t["rank"]: t["device_id"] for t in truth["ranks"]}
