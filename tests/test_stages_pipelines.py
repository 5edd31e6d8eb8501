"""Stage separation on real diffusers pipelines (tests/diffusion_pipelines.py), without and with
module ranges, and profiled a step per denoising step, against the truth forward hooks recorded.
The traces are built once per test run, shared by the test workers."""

import fcntl
import re

import pytest

import diffusion_pipelines as dp
from npu_tui.analysis import install_views, load_rules
from npu_tui.profile import load_profile
from npu_tui.session import open_session

# (share of kernel time in its true stage, largest error of a DiT category share). "denoising-steps":
# without module ranges, prof.step() at each denoising step's end (a step callback) instead of each
# call's. Each step held one forward, and a transformer block's repeats within it were taken for
# the loop: the rest of each forward was Other (Flux 0.82 of the time right, SD3 0.73, CogVideoX 0.84).
TARGETS = {"plain": (0.95, 0.02), "modules": (0.99, 0.005), "denoising-steps": (0.95, 0.02)}
VARIANTS = [(name, variant) for name in dp.PIPELINES for variant in TARGETS]
STEPS = {"flux": 6, "sd3": 5, "wan": 4, "cogvideox": 5}  # denoising steps a call
# transformer forwards a call: Wan runs guidance unbatched, two a step (the others batch it, or
# have none)
FORWARDS = {name: steps * (2 if name == "wan" else 1) for name, steps in STEPS.items()}


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    """Every pipeline profiled each way, built by whichever worker comes first."""
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
                out[name, variant] = dp.profile_pipeline(name, folder, modules=variant == "modules",
                                                         per_denoising_step=variant == "denoising-steps")
    return out


@pytest.fixture(scope="session")
def sessions(runs):
    return {key: open_session(run.path, cache=False) for key, run in runs.items()}


def _forwards_a_call(con) -> list:
    """What stage_metrics counts: the DiT forwards of a pipeline call (step_cache's figure)."""
    return con.execute("SELECT value FROM stage_metrics WHERE metric = 'forwards'").fetchall()


def _assert_staged_as_plain(score: dp.Score) -> None:
    right, error = TARGETS["plain"]
    assert score.right >= right and score.dit_share_error <= error, (score.found, score.truth)


@pytest.mark.parametrize("name,variant", VARIANTS, ids=[f"{n}-{v}" for n, v in VARIANTS])
def test_kernel_time_lands_in_its_true_stage(name, variant, runs, sessions):
    s = dp.score(sessions[name, variant].con, runs[name, variant])
    right, error = TARGETS[variant]
    assert s.method == ("markers" if variant == "modules" else "signature")
    assert s.right >= right, (s.found, s.truth)
    assert s.dit_share_error <= error
    # Every stage is there: the text encoders, the loop and the decoder.
    assert {"DiT", "VAE", "Other"} <= set(s.found)


def test_a_profile_without_steps_finds_each_calls_loop_and_counts_forwards_per_call(runs, sessions, tmp_path):
    """The same five calls profiled with no schedule (no ProfilerStep): the loop of each call was
    not found (its forwards' repeats broken by the calls between them: the whole profile "All"),
    and step_cache's count was every forward of the profile as one "step"'s (30 for Flux's 6 a
    call)."""
    import json
    import shutil

    folder = shutil.copytree(runs["flux", "plain"].path, tmp_path / "flux")
    (trace,) = folder.glob("*.pt.trace.json")
    doc = json.loads(trace.read_text())
    doc["traceEvents"] = [e for e in doc["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")]
    trace.write_text(json.dumps(doc))
    assert _forwards_a_call(sessions["flux", "plain"].con) == [(6,)]
    s = open_session(folder, cache=False)
    assert s.con.execute("SELECT count(*) FROM step_windows WHERE step IS NOT NULL").fetchone() == (0,)
    assert _forwards_a_call(s.con) == [(6,)]
    score = dp.score(s.con, dp.Run(folder, runs["flux", "plain"].truth))
    _assert_staged_as_plain(score)
    assert s.con.execute("SELECT stage, count(*) FROM stage_windows WHERE stage <> 'Other' GROUP BY 1 "
                         "ORDER BY 1").fetchall() == [("DiT", 30), ("VAE", 5)]


@pytest.mark.parametrize("name", dp.PIPELINES)
def test_the_loop_is_found_as_repeated_forwards(name, sessions):
    """Without markers: one window per denoising step, the same kernels in each (confidence 1 or
    nearly), the text encoder before them not in any."""
    s = sessions[name, "plain"]
    steps = STEPS[name]
    windows = s.con.execute("SELECT step, count(*) FROM stage_signature WHERE stage = 'DiT' GROUP BY step").fetchall()
    assert {n for _, n in windows} == {steps} and len(windows) == 5  # five profiled pipeline calls
    (det,) = s.stage_detection
    assert det["method"] == "signature" and det["confidence"] >= 0.95


@pytest.mark.parametrize("name", dp.PIPELINES)
def test_a_step_per_denoising_step_counts_the_forwards_of_a_call(name, sessions):
    """prof.step() at each denoising step: the forwards of a pipeline call run on across its steps,
    and were counted a step's (1), so step_cache could never fire on such a profile."""
    assert _forwards_a_call(sessions[name, "denoising-steps"].con) == [(FORWARDS[name],)]


def test_a_call_cut_short_by_the_profiler_leaves_the_forwards_of_a_whole_one(runs, tmp_path):
    """A schedule that stops between denoising steps cuts the last call short: its forwards are not
    the pipeline's (an average over calls read 4 for 6)."""
    profile = load_profile(runs["flux", "denoising-steps"].path, cache=False)
    last = profile.con.execute("SELECT max(step) FROM kernels").fetchone()[0]
    profile.con.execute("DELETE FROM kernels WHERE step > ?", [last - 4])
    install_views(profile.con, load_rules())
    assert _forwards_a_call(profile.con) == [(6,)]


def test_a_profile_that_opens_on_a_call_s_decode_counts_the_whole_call_after_it(runs):
    """The first step recorded holds the call before's decode and text encoders (a schedule that
    starts between calls): slow, so a warm-up outlier, and the one whole call after it, which
    starts in it, was left out of the count (4, the call the profile then cut short)."""
    profile = load_profile(runs["flux", "denoising-steps"].path, cache=False)
    # steps 6.. (the second call on, its first step with the first call's decode), to 15: one whole
    # call of six, then four of the next
    profile.con.execute("DELETE FROM kernels WHERE step < 6 OR step > 15")
    install_views(profile.con, load_rules())
    assert profile.con.execute("SELECT outlier FROM step_flags ORDER BY step LIMIT 1").fetchone() == (True,)
    assert _forwards_a_call(profile.con) == [(6,)]


def test_calls_told_apart_by_their_text_encoders_alone(runs):
    """No decode between calls (latents returned) and text encoders faster than a forward: a step
    per denoising step, the calls ran into one (30 forwards, a false step_cache). The encoders'
    kernels between two forwards, many more than the scheduler's, end a call."""
    run = runs["flux", "denoising-steps"]
    profile = load_profile(run.path, cache=False)
    con = profile.con
    # the decodes taken out and the encoders squeezed to a nanosecond a kernel, every kernel after
    # each moved back by the time it no longer takes: the same kernels in the same order
    for stage, lo, hi in sorted(run.truth, key=lambda t: -t[1]):
        if stage == "VAE":
            con.execute("DELETE FROM kernels WHERE start_ns >= ? AND start_ns < ?", [lo, hi])
            kept = 0
        elif stage == "Other":
            con.execute("UPDATE kernels SET start_ns = ? + n, dur_ns = 1 FROM (SELECT start_ns AS s, "
                        "row_number() OVER (ORDER BY start_ns) AS n FROM kernels WHERE start_ns >= ? AND start_ns < ?) "
                        "WHERE kernels.start_ns = s", [lo, lo, hi])
            kept = con.execute("SELECT count(*) + 1 FROM kernels WHERE start_ns >= ? AND start_ns < ?",
                               [lo, hi]).fetchone()[0]
        else:
            continue
        con.execute("UPDATE kernels SET start_ns = start_ns - ? WHERE start_ns >= ?", [hi - lo - kept, hi])
    install_views(con, load_rules())
    assert _forwards_a_call(con) == [(6,)]


@pytest.mark.parametrize("name,layers", [("flux", 4), ("sd3", 8)])
def test_a_deeper_transformer_a_step_per_denoising_step(name, layers, tmp_path):
    """Flux of 4 + 4 blocks: its calls' text encoders and decode hold fewer kernels than half a
    forward, and the rank was not scanned whole (0.67 of the time right). SD3 of 8 blocks: a call's
    first cycle was taken to start in the call before, its decode and text encoders in a forward
    (the VAE lost, 25 forwards a call)."""
    run = dp.profile_pipeline(name, tmp_path / name, steps=3, per_denoising_step=True, layers=layers)
    s = open_session(run.path, cache=False)
    score = dp.score(s.con, run)
    _assert_staged_as_plain(score)
    assert score.found["VAE"] == pytest.approx(score.truth["VAE"], rel=0.05)
    assert _forwards_a_call(s.con) == [(FORWARDS[name],)]


@pytest.mark.parametrize("name,layers", [("flux", None), ("sd3", 8)])
def test_forwards_alone_a_step_per_denoising_step(name, layers, tmp_path):
    """A schedule inside one call, a step per denoising step: the steps are alike, each a forward
    and nothing else. Taken for calls and staged one by one, each step's loop was its transformer
    blocks, and the rest of each forward Other (Flux 0.58–0.70 of the time right, SD3 of 8 blocks 0.71–0.77)."""
    run = dp.profile_pipeline(name, tmp_path / name, steps=3, layers=layers, inside_call=True)
    s = open_session(run.path, cache=False)
    score = dp.score(s.con, run)
    _assert_staged_as_plain(score)
    assert "VAE" not in score.truth and "VAE" not in score.found
    assert _forwards_a_call(s.con) == [(3,)]


def test_a_step_cache_of_alternate_forwards_is_staged(tmp_path):
    """Pyramid attention broadcast (attention reused every other step): a cycle of two forwards,
    and five a call end in half a cycle; the last forward was cut to its first kernels and the
    decode's first ones taken for the DiT (0.84 of the kernels right, DiT shares 0.02 off)."""
    from diffusers import PyramidAttentionBroadcastConfig

    cache = PyramidAttentionBroadcastConfig(spatial_attention_block_skip_range=2,
                                            spatial_attention_timestep_skip_range=(-1, 1001),
                                            current_timestep_callback=lambda: 500)
    run = dp.profile_pipeline("cogvideox", tmp_path / "pab", cache=cache)
    score = dp.score(open_session(run.path, cache=False).con, run, by_count=True)
    _assert_staged_as_plain(score)


def _forwards(run: dp.Run, which) -> list:
    """Of each call, the truth range of one forward: ``which`` picks it from the call's, in order."""
    dit = sorted((lo, hi) for stage, lo, hi in run.truth if stage == "DiT")
    decodes = sorted(lo for stage, lo, _ in run.truth if stage == "VAE")
    calls = [[r for r in dit if (i == 0 or r[0] > decodes[i - 1]) and r[0] < d] for i, d in enumerate(decodes)]
    return [which(forwards) for forwards in calls]


def _staged_dit(con, lo: int, hi: int) -> float:
    """The share of the kernels starting in [lo, hi) that are staged DiT."""
    return con.execute("SELECT count(*) FILTER (WHERE stage = 'DiT') / count(*) FROM kernel_stages "
                       "WHERE start_ns >= ? AND start_ns < ?", [lo, hi]).fetchone()[0]


def test_a_step_cache_that_decides_by_threshold_keeps_the_vae(tmp_path):
    """First-block cache: after the first forward only cached ones (the first block, the cache's
    check), in cycles of two, each call's last in half a cycle. The loop ran on over the decode
    (no VAE stage) and a few kernels of the decode recurring at the period made a second loop.
    The full forward before the cached ones opens no cycle, and was Other (0.75 of the kernels
    right): it is found by its attention, the loop's, before the loop."""
    from diffusers import FirstBlockCacheConfig

    run = dp.profile_pipeline("flux", tmp_path / "fbc", cache=FirstBlockCacheConfig(threshold=100))
    con = open_session(run.path, cache=False).con
    score = dp.score(con, run, by_count=True)
    assert score.found.get("VAE") == pytest.approx(score.truth["VAE"], rel=0.02)
    assert score.dit_share_error <= TARGETS["plain"][1], (score.found, score.truth)
    assert all(_staged_dit(con, *r) >= 0.95 for r in _forwards(run, lambda f: f[0]))
    assert score.right >= 0.85


@pytest.mark.parametrize("interval,before,after", [(3, 3, None), (2, 2, 4)], ids=["full-first", "full-last"])
def test_a_step_cache_s_forwards_outside_its_cycles_are_the_dit_s(interval, before, after, tmp_path):
    """TaylorSeer. A full forward every third step from the fourth: forwards full, full, full,
    predicted, full, predicted; the loop is its cycles of a full and a predicted forward, and the
    second full one a first cycle that differs in length, found before the run. The last cycle
    was cut where that one ends (each call's last forward, predicted, was Other), and the first
    forward, before both, was Other too (0.72 of the kernels right). Every other step from the
    third, none from the fifth: full, full, predicted, full, full, full; the last two, after the
    cycles, were Other (0.72)."""
    import torch
    from diffusers import TaylorSeerCacheConfig

    cache = TaylorSeerCacheConfig(cache_interval=interval, disable_cache_before_step=before,
                                  disable_cache_after_step=after, taylor_factors_dtype=torch.float32)
    run = dp.profile_pipeline("flux", tmp_path / "taylor", layers=4, cache=cache)
    con = open_session(run.path, cache=False).con
    for which in (lambda f: f[0], lambda f: f[-1]):
        assert all(_staged_dit(con, *r) >= 0.95 for r in _forwards(run, which))
    score = dp.score(con, run, by_count=True)
    _assert_staged_as_plain(score)
    assert score.found["VAE"] == pytest.approx(score.truth["VAE"], rel=0.02)


def test_forwards_after_a_cache_s_cycles_end_at_the_next_call_s_text_encoders(tmp_path):
    """Latents-only calls under the full-last TaylorSeer cache above, each step opening on a call's
    first forward: the next call's text encoders end each step (encoded ahead, before
    prof.step()). The window of the full forwards after the cycles ran on as far as the run's
    attention kernels can be apart, past a cached forward (without attention): into those text
    encoders, half the first one's kernels staged DiT."""
    import json

    import torch
    from diffusers import TaylorSeerCacheConfig

    cache = TaylorSeerCacheConfig(cache_interval=2, disable_cache_before_step=2, disable_cache_after_step=4,
                                  taylor_factors_dtype=torch.float32)
    run = dp.profile_pipeline("flux", tmp_path / "taylor", decode=False, layers=4, cache=cache)
    (trace,) = run.path.glob("*.pt.trace.json")
    doc = json.loads(trace.read_text())
    base = int(doc.get("baseTimeNanoseconds") or 0)
    firsts = sorted(lo for stage, lo, _ in run.truth if stage == "DiT")
    steps = sorted((e for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")),
                   key=lambda e: e["ts"])
    starts = [min(f for f in firsts if f >= (e["ts"] - 1) * 1000 + base) / 1000 - base / 1000 - 1 for e in steps]
    for e, start, end in zip(steps, starts, starts[1:] + [steps[-1]["ts"] + steps[-1]["dur"]]):
        e["ts"], e["dur"] = start, end - start - 0.5
    trace.write_text(json.dumps(doc))
    con = open_session(run.path, cache=False).con
    # (the first call's, before the first step opens, are not what this is about)
    encoders = sorted((lo, hi) for stage, lo, hi in run.truth if stage == "Other" and lo > firsts[0])
    assert len(encoders) == 8 and all(_staged_dit(con, *r) == 0 for r in encoders)
    score = dp.score(con, run)
    _assert_staged_as_plain(score)


def test_calls_that_decode_nothing_a_step_each_are_staged_step_by_step(tmp_path):
    """Flux returning its latents undecoded, a step a call: scanned as a whole rank, each call is a
    cycle (its text encoders in it, and no VAE to tell it from a forward), a cycle a step like a
    step per denoising step's. Its steps all alike, they are calls, staged one by one: the whole
    rank's windows put the text encoders in the DiT (0.92 of the time right)."""
    run = dp.profile_pipeline("flux", tmp_path / "flux", decode=False)
    s = open_session(run.path, cache=False)
    score = dp.score(s.con, run)
    _assert_staged_as_plain(score)
    assert _forwards_a_call(s.con) == [(6,)]


def test_calls_of_two_denoising_steps_that_decode_nothing_are_calls(tmp_path):
    """The same with two denoising steps a call: the loop of each step (its two forwards) was taken
    for a transformer's blocks alone, its kernels recurring at its period being fewer than half a
    cycle's, and the rank's steps for forwards: each call one DiT window, text encoders in it (0.82
    of the time right, 1 forward a call)."""
    run = dp.profile_pipeline("flux", tmp_path / "flux", decode=False, denoising_steps=2)
    s = open_session(run.path, cache=False)
    score = dp.score(s.con, run)
    _assert_staged_as_plain(score)
    assert _forwards_a_call(s.con) == [(2,)]


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
    kernels = con.execute("SELECT start_ns FROM kernels").fetchall()
    for i, (a, b) in enumerate(windows):
        cond, uncond = forwards[2 * i], forwards[2 * i + 1]
        # Both forwards' kernels inside the window but for a trace at its edges (the view ops that
        # unpatchify the output come after the last compute kernel: 5 of 994), counted, not timed:
        # on a CPU trace the kernels are host ops, and a loaded machine can stretch those few ops
        # at the edge to a few percent of the forwards' time.
        both = [t for (t,) in kernels if cond[1] <= t < uncond[2]]
        outside = sum(not a <= t < b for t in both)
        assert outside <= 0.01 * len(both)
        assert b <= (forwards + [(0, hi, hi)])[2 * i + 2][1]


@pytest.mark.parametrize("variant", ["plain", "modules"])
def test_unbatched_guidance_counts_both_forwards_of_a_window(variant, sessions):
    """Each window of Wan's loop holds two forwards (above): they were counted one, 4 forwards a
    call by signatures where module ranges count 8, and step_cache tests that count. The report
    and the Overview show it, beside the DiT stage."""
    from npu_tui.tui.panes.overview import stages_text

    con = sessions["wan", variant].con
    assert _forwards_a_call(con) == [(8,)]
    report = sessions["wan", variant].report
    assert {s["stage"]: s["forwards"] for s in report["stages"]} == {"DiT": 8, "VAE": None, "Other": None}
    assert re.search(r"\n +DiT +wall .* kernels +[0-9,]+  8 forwards/call\n", stages_text(report).plain)
    per_call = con.execute("SELECT sum(w.forwards) FROM stage_windows w ASOF JOIN step_windows s "
                           "ON s.rank = w.rank AND w.start_ns >= s.start_ns WHERE w.stage = 'DiT' "
                           "GROUP BY s.step").fetchall()
    assert per_call == [(8,)] * 5


def test_a_controlnet_before_each_forward_is_no_second_forward(tmp_path):
    """Flux with a ControlNet (a double-stream block) before the transformer at each denoising
    step: a cycle's first kernels, the ControlNet's, are alike the transformer's first ones (0.93
    of them), but the two are not unbatched guidance's forwards alike, filling the cycle: 6
    forwards a call, not 11."""
    run = dp.profile_pipeline("flux", tmp_path / "flux", controlnet=True)
    s = open_session(run.path, cache=False)
    assert _forwards_a_call(s.con) == [(6,)]
    score = dp.score(s.con, run)
    _assert_staged_as_plain(score)


def test_marked_forwards_of_unbatched_guidance_a_step_per_denoising_step_are_one_call_s(tmp_path):
    """Wan with module ranges, prof.step() at each denoising step: each step holds its two marked
    forwards, so the steps were taken for calls of two (2 forwards a call for 8)."""
    run = dp.profile_pipeline("wan", tmp_path / "wan", modules=True, per_denoising_step=True)
    s = open_session(run.path, cache=False)
    assert _forwards_a_call(s.con) == [(8,)]
    assert dp.score(s.con, run).method == "markers"


def test_unbatched_guidance_with_a_shorter_negative_prompt_counts_both_forwards(tmp_path):
    """QwenImage embeds each prompt at its own length: the negative prompt's forward runs the same
    kernels as the prompt's with other shapes wherever the text goes (every block of an MMDiT).
    The pair was taken for one forward, and a block's length for the distance between the two
    (5 forwards a call for 10)."""
    run = dp.profile_pipeline("qwenimage", tmp_path / "qwen")
    s = open_session(run.path, cache=False)
    assert _forwards_a_call(s.con) == [(10,)]
    score = dp.score(s.con, run)
    _assert_staged_as_plain(score)


def test_a_groupnorm_free_video_vae_is_found(runs, sessions):
    """Wan's VAE: causal Conv3d and RMS norms, decoded a frame at a time, no GroupNorm."""
    s = dp.score(sessions["wan", "plain"].con, runs["wan", "plain"])
    assert s.found["VAE"] == pytest.approx(s.truth["VAE"], rel=0.02)


@pytest.mark.parametrize("name", ["sd3", "flux"])
def test_a_slow_text_encoder_does_not_pass_for_the_loop(name, runs):
    """The loop is where the most kernels repeat, not the most time: text encoders whose layers
    ran slow (a busy host under a CPU trace) still come before the loop, in Other."""
    run = runs[name, "plain"]
    profile = load_profile(run.path, cache=False)
    first_forward = min(t[1] for t in run.truth if t[0] == "DiT")
    encoders = [(a, b) for stage, a, b in run.truth if stage == "Other"]

    def split():
        return profile.con.execute(
            "SELECT sum(dur_ns) FILTER (WHERE start_ns < $t), sum(dur_ns) FILTER (WHERE start_ns >= $t) FROM kernels "
            "WHERE step = (SELECT min(step) FROM kernels)", {"t": first_forward}).fetchone()

    # The encoders' kernels stretched, starts kept, until they hold twice the time of what follows
    # them (the loop and the decoder): the order is the same, the time is not. The factor is of
    # their own time: kernels before the loop outside them (a busy host's share) are not stretched.
    _, after = split()
    held = sum(profile.con.execute(
        "SELECT coalesce(sum(dur_ns), 0) FROM kernels WHERE step = (SELECT min(step) FROM kernels) "
        "AND start_ns >= ? AND start_ns < ?", [a, b]).fetchone()[0] for a, b in encoders)
    factor = int(2 * after / held) + 1
    for a, b in encoders:
        profile.con.execute("UPDATE kernels SET dur_ns = dur_ns * ? WHERE start_ns >= ? AND start_ns < ?",
                            [factor, a, b])
    before, after = split()
    assert before > after
    install_views(profile.con, load_rules())
    steps = {"flux": 6, "sd3": 5}[name]
    windows = profile.con.execute("SELECT step, count(*) FROM stage_signature WHERE stage = 'DiT' GROUP BY step").fetchall()
    assert {n for _, n in windows} == {steps} and len(windows) == 5


def test_the_last_forward_of_a_call_ends_where_the_others_do(tmp_path):
    """Two denoising steps a call: the last forward's cycle ran on past its forward into the
    scheduler's step and the VAE's first convolutions, a large part of the DiT's kernel time with so
    few forwards (its category shares 0.027 off)."""
    run = dp.profile_pipeline("pixart", tmp_path / "pixart")
    s = dp.score(open_session(run.path, cache=False).con, run, by_count=True)
    right, error = TARGETS["plain"]
    assert s.method == "signature" and s.right >= right and s.dit_share_error <= error, (s.found, s.truth)


def test_a_vae_decoded_after_the_step_is_found_at_the_next_ones_start(tmp_path):
    """The latents decoded after prof.step(): the decode opens the next step, before its text
    encoder, or is the step alone (as after the last call), and was counted as Other, the VAE
    stage missing."""
    run = dp.profile_pipeline("pixart-vae-after", tmp_path / "pixart")
    s = dp.score(open_session(run.path, cache=False).con, run, by_count=True)
    right, error = TARGETS["plain"]
    assert s.method == "signature" and s.right >= right and s.dit_share_error <= error, (s.found, s.truth)
    assert s.found["VAE"] >= 0.95 * s.truth["VAE"]


def test_a_unet_pipeline_s_denoiser_is_the_dit_stage_by_its_module_ranges(tmp_path):
    """Stable Diffusion's loop is a UNet: its class's `nn.Module:` range marks the stage. Before,
    only its own Transformer2DModel blocks did, and its convolutions (two fifths of the loop's
    time here) fell into Other. (Its kernel signature is not the repeated transformer forward the
    markerless method looks for: without markers it is one stage, All.)"""
    run = dp.profile_pipeline("sd", tmp_path / "sd", modules=True)
    s = dp.score(open_session(run.path, cache=False).con, run)
    assert s.method == "markers" and s.right >= 0.99 and s.dit_share_error <= 0.005, (s.found, s.truth)
    assert {"DiT", "VAE", "Other"} <= set(s.found)
