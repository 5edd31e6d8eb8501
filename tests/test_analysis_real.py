"""The analysis on real profiler output, against the profiler's own numbers."""

import csv

import pytest

from npu_tui.analysis import install_views, load_rules
from npu_tui.profile import load_profile

# step_trace_time.csv, Step 50, µs (see ../shared/real/PROVENANCE.md)
PROFILER_STEPS = {
    ("level1", 0): (8873.756, 101963.203, 25744.050, 136581.0),
    ("level1", 1): (8878.295, 96359.047, 26675.274, 131912.5),
    ("level0", 0): (8827.473, 81515.607, 25908.102, 116251.25),
}
COLS = "computing_us, comm_not_overlapped_us, free_us, stage_us"


@pytest.fixture(scope="module")
def profiles(real):
    out = {}
    for level in ("level1", "level0"):
        p = load_profile(real / "msinsight-pt-2rank-levels" / "text" / level)
        install_views(p.con, load_rules())
        out[level] = p
    return out


@pytest.mark.parametrize("view", ["step_breakdown_lanes", "step_breakdown_kernels"])
@pytest.mark.parametrize("level,rank", list(PROFILER_STEPS))
def test_step_breakdown_matches_step_trace_time(profiles, view, level, rank):
    (step, *got), = profiles[level].con.execute(
        f"SELECT step, {COLS} FROM {view} WHERE rank = ?", [rank]).fetchall()
    assert step == 50
    for value, expected in zip(got, PROFILER_STEPS[(level, rank)]):
        assert value == pytest.approx(expected, rel=0.005)


def test_exposed_comm_from_lanes_and_kernels_agree(profiles):
    for level, p in profiles.items():
        for lanes, kernels in p.con.execute("SELECT exposed_lanes_us, exposed_kernels_us FROM comm_exposure").fetchall():
            assert lanes == pytest.approx(kernels, rel=0.005, abs=0.05)


def _category_of_op_type(op_type, core):
    # Independent of the rules file: how the profiler names these types (MemSet runs on the vector cores).
    if core in ("DSA_SQE", "AI_CPU"):
        return "Other"
    if op_type.startswith("Conv"):
        return "Conv"
    if "MatMul" in op_type:
        return "MatMul"
    return "Vector"


@pytest.mark.parametrize("rank", [0, 1])
def test_category_totals_match_op_statistic(real, profiles, rank):
    path = (real / "msinsight-pt-2rank-levels" / "text" / "level1" / f"rank{rank}_ascend_pt"
            / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv")
    expected = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            cat = _category_of_op_type(row["OP Type"], row["Core Type"])
            expected[cat] = expected.get(cat, 0.0) + float(row["Total Time(us)"])
    got = dict(profiles["level1"].con.execute(
        "SELECT category, sum(time_us) FROM stage_categories WHERE rank = ? AND category <> 'Comm' "
        "GROUP BY category HAVING sum(time_us) > 0", [rank]).fetchall())
    assert set(got) == set(expected)
    for cat, total in expected.items():
        assert got[cat] == pytest.approx(total, abs=0.05)  # op_statistic rounds each type to 3 decimals


def test_flash_attention_is_fa(real):
    path = real / "mstt-advisor-fixtures" / "ut" / "advisor" / "compute_advice" / "data" / "kernel_details.csv"
    with open(path, newline="") as f:
        fa = [r for r in csv.DictReader(f) if "FlashAttention" in r["Type"]]
    p = load_profile(path)
    install_views(p.con, load_rules())
    (count, time_us), = p.con.execute(
        "SELECT sum(count), sum(time_us) FROM stage_categories WHERE category = 'FA'").fetchall()
    assert fa and count == len(fa)
    assert time_us == pytest.approx(sum(float(r["Duration(us)"]) for r in fa), abs=1e-3)


def test_resnet_training_is_one_stage(profiles):
    # No denoising loop: signatures must not invent a DiT / VAE split; the rank is one stage, All.
    got = profiles["level1"].con.execute("SELECT DISTINCT stage, method FROM stage_summary").fetchall()
    assert got == [("All", "single")]


NOT_DIFFUSION = ["msinsight-pt-2rank-levels/text/level0", "msinsight-pt-2rank-levels/text/level1",
                 "msinsight-pt-2rank-levels/db/level2", "mindinsight-msprof-2dev-hccl", "kineto/hta-sampled-2rank",
                 "kineto/hta-alexnet-1gpu", "mstt-advisor-fixtures/ut/advisor/compute_advice/data",
                 "mstt-advisor-fixtures/ut/advisor/timeline_advice/trace_view.json"]


@pytest.mark.parametrize("sample", NOT_DIFFUSION)
def test_no_real_sample_is_called_a_diffusion_pipeline(real, sample):
    """ResNet and AlexNet training, an LLM's layers (forward and backward), msprof: one stage, All,
    and the report says so."""
    from npu_tui.session import open_session

    s = open_session(real / sample, cache=False)
    assert {st["stage"] for st in s.report["stages"]} == {"All"}
    assert all(d["method"] == "single" and d["summary"].startswith("no diffusion stages found")
               for d in s.stage_detection)
    assert {f["stage"] for f in s.findings} <= {"All", None}
    assert "no diffusion stages found" in s.render("text")


def test_an_llm_decoder_range_is_no_vae(real):
    """hta-sampled-2rank marks a `## decoder fp8 None ##` range holding MatMul kernels and no Conv."""
    from npu_tui.session import open_session

    s = open_session(real / "kineto" / "hta-sampled-2rank", cache=False)
    ranges = s.con.execute("SELECT count(*) FROM host_events WHERE name LIKE '%decoder%'").fetchone()[0]
    assert ranges > 0
    assert s.con.execute("SELECT count(*) FROM stage_markers").fetchone()[0] == 0
