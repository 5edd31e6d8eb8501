"""Stage separation on real diffusers pipelines (tests/diffusion_pipelines.py), without and with
module ranges, against the truth forward hooks recorded. The traces are built once per test run,
shared by the test workers."""

import fcntl
from pathlib import Path

import pytest

import diffusion_pipelines as dp
from npu_tui.session import open_session

# (share of kernel time in its true stage, largest error of a DiT category share)
TARGETS = {"plain": (0.95, 0.02), "modules": (0.99, 0.005)}
VARIANTS = [(name, variant) for name in dp.PIPELINES for variant in TARGETS]


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    """Every pipeline profiled both ways, built by whichever worker comes first."""
    root = tmp_path_factory.getbasetemp().parent / "diffusion-pipelines"
    root.mkdir(exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        out = {}
        for name, variant in VARIANTS:
            folder = root / f"{name}-{variant}"
            if (folder / "truth.json").is_file():
                out[name, variant] = dp.load_run(folder)
            else:
                out[name, variant] = dp.profile_pipeline(name, folder, modules=variant == "modules")
    return out


@pytest.fixture(scope="session")
def sessions(runs):
    return {key: open_session(run.path, cache=False) for key, run in runs.items()}


@pytest.mark.parametrize("name,variant", VARIANTS, ids=[f"{n}-{v}" for n, v in VARIANTS])
def test_kernel_time_lands_in_its_true_stage(name, variant, runs, sessions):
    s = dp.score(sessions[name, variant].con, runs[name, variant])
    right, error = TARGETS[variant]
    assert s.method == ("markers" if variant == "modules" else "signature")
    assert s.right >= right, (s.found, s.truth)
    assert s.dit_share_error <= error
    # Every stage is there: the text encoders, the loop and the decoder.
    assert {"DiT", "VAE", "Other"} <= set(s.found)


@pytest.mark.parametrize("name", dp.PIPELINES)
def test_the_loop_is_found_as_repeated_forwards(name, sessions):
    """Without markers: one window per denoising step, the same kernels in each (confidence 1 or
    nearly), the text encoder before them not in any."""
    s = sessions[name, "plain"]
    steps = {"flux": 6, "sd3": 5, "wan": 4, "cogvideox": 5}[name]
    windows = s.con.execute("SELECT step, count(*) FROM stage_signature WHERE stage = 'DiT' GROUP BY step").fetchall()
    assert {n for _, n in windows} == {steps} and len(windows) == 5  # five profiled pipeline calls
    (det,) = s.stage_detection
    assert det["method"] == "signature" and det["confidence"] >= 0.95


def test_unbatched_guidance_puts_both_forwards_of_a_step_in_one_window(runs, sessions):
    # Wan runs the transformer twice a step (with and without the prompt): eight forwards in four windows.
    run = runs["wan", "plain"]
    con = sessions["wan", "plain"].con
    (lo, hi), = con.execute("SELECT min(start_ns), max(start_ns) FROM kernels WHERE step = "
                            "(SELECT min(step) FROM kernels)").fetchall()
    forwards = sorted(t for t in run.truth if t[0] == "DiT" and lo <= t[1] <= hi)
    assert len(forwards) == 8
    windows = con.execute("SELECT start_ns, end_ns FROM stage_signature WHERE stage = 'DiT' AND step = "
                          "(SELECT min(step) FROM kernels) ORDER BY start_ns").fetchall()
    assert len(windows) == 4
    for i, (a, b) in enumerate(windows):
        cond, uncond = forwards[2 * i], forwards[2 * i + 1]
        # Both forwards of the step inside the window, give or take the few kernels around them.
        assert a <= cond[1] + 100_000 and uncond[2] <= b + 100_000 and b < (forwards + [(0, hi, hi)])[2 * i + 2][1]


def test_a_groupnorm_free_video_vae_is_found(runs, sessions):
    """Wan's VAE: causal Conv3d and RMS norms, decoded a frame at a time, no GroupNorm."""
    s = dp.score(sessions["wan", "plain"].con, runs["wan", "plain"])
    assert s.found["VAE"] == pytest.approx(s.truth["VAE"], rel=0.02)
