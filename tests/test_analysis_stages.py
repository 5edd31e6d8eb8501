"""Stage detection: markers (through flows, or launch order), kernel signatures and their traps,
checked against the generator's truth (computed from its own timeline, not by this code)."""

import json
from pathlib import Path

import pytest

from npu_tui.analysis import install_views, load_rules
from npu_tui.profile import load_profile
from npu_tui.synth import Spec, generate

from analysis_support import make_profile, rows

STAGES = ("DiT", "VAE", "Other")
CATS = ("FA", "MatMul", "Conv", "Vector", "Comm", "Other")


def _check_against_truth(profile, truth, method, categories=True):
    con = profile.con
    for tr in truth["ranks"]:
        r = tr["rank"]
        got_windows = {s: sorted([a, b] for a, b in rows(
            profile, "SELECT start_ns, end_ns FROM stage_windows WHERE rank = ? AND stage = ?", [r, s]))
            for s in STAGES}
        for s in STAGES:
            t = tr["stages"][s]
            assert got_windows[s] == sorted(t["windows"]), (r, s)
            (wall, count, ktime, m), = rows(profile, "SELECT wall_us, kernel_count, kernel_time_us, method "
                                                     "FROM stage_summary WHERE rank = ? AND stage = ?", [r, s])
            assert m == method
            assert (wall, count) == (pytest.approx(t["wall_ns"] / 1e3), t["kernel_count"])
            assert ktime == pytest.approx(t["kernel_time_ns"] / 1e3)
            shares = dict(rows(profile, "SELECT category, share FROM stage_categories WHERE rank = ? AND stage = ?",
                               [r, s]))
            for c in CATS if categories else ():
                assert shares[c] == pytest.approx(t["categories"][c]["time_ns"] / t["kernel_time_ns"]), (r, s, c)
            (comm, exposed, share), = rows(profile, "SELECT comm_us, exposed_us, exposed_share FROM comm_exposure "
                                                    "WHERE rank = ? AND stage = ?", [r, s])
            assert comm == pytest.approx(t["comm_ns"] / 1e3, abs=1e-3)
            assert exposed == pytest.approx(t["exposed_comm_ns"] / 1e3, abs=1e-3)
            # of the stage's time per step (no generated step is a warm-up outlier)
            assert rows(profile, "SELECT count(*) FROM step_flags WHERE rank = ? AND outlier", [r]) == [(0,)]
            assert share == pytest.approx(t["exposed_step_ns"] / t["step_time_ns"], abs=1e-6)
    del con


def _generated(tmp_path, **spec):
    out = tmp_path / "prof"
    truth = generate(out, Spec(**spec))
    profile = load_profile(out)
    install_views(profile.con, load_rules())
    return profile, truth


@pytest.mark.parametrize("spec", [
    # text encoder before the loop, attention inside the VAE, patch-embedding Conv per forward
    dict(markers=False, text_encoder=True, vae_attention=True, profiler_steps=2, denoise_steps=3, seed=11),
    # Wan-style VAE: Conv3D + RmsNorm + SiLU, no GroupNorm; two ranks with collectives
    dict(markers=False, vae="wan", ranks=2, denoise_steps=3, seed=12),
    # no text encoder, no VAE attention
    dict(markers=False, text_encoder=False, vae_attention=False, denoise_steps=4, seed=13),
], ids=["text-encoder+vae-attention", "wan-vae-2rank", "plain"])
def test_signature_segmentation_matches_truth(tmp_path, spec):
    profile, truth = _generated(tmp_path, **spec)
    _check_against_truth(profile, truth, "signature")
    # The generator repeats each forward exactly: every kernel of the loop is the one a cycle later.
    confidence = {c for (c,) in rows(profile, "SELECT DISTINCT confidence FROM stage_summary")}
    assert confidence == {1.0}


def test_markers_match_truth(tmp_path):
    profile, truth = _generated(tmp_path, markers=True, vae="wan", text_encoder=True, profiler_steps=2, seed=14)
    _check_against_truth(profile, truth, "markers")
    assert {m for (m,) in rows(profile, "SELECT DISTINCT mapped_by FROM stage_markers")} == {"flows"}


# Hand-made markers. Host ranges (ns) and the kernels they launch (device = host + 1000):
#   CLIPTextModel [0,100] holding CLIPTextTransformer [10,90]   launches at 20, 60     (text encoder)
#   stack frame ".../transformer_flux.py(400): forward" [190,710]                          (ignored)
#   FluxTransformer2DModel [200,400] holding FluxTransformerBlock [250,350]  launches 210, 260, 300
#   scheduler op [450,460] (no marker)                                         launch 455
#   FluxTransformer2DModel [500,700]                                           launches 510, 560
#   Decoder [800,1000] holding Attention                                       launches 810, 900
HOST = [
    (0, "nn.Module: CLIPTextModel_0", 0, 100), (0, "nn.Module: CLIPTextTransformer_0", 10, 80),
    (0, "diffusers/models/transformers/transformer_flux.py(400): forward", 190, 520),
    (0, "nn.Module: FluxTransformer2DModel_0", 200, 200), (0, "nn.Module: FluxTransformerBlock_0", 250, 100),
    (0, "aten::sub", 450, 10),
    (0, "nn.Module: FluxTransformer2DModel_0", 500, 200),
    (0, "nn.Module: Decoder_0", 800, 200), (0, "nn.Module: Attention_0", 850, 50),
]
LAUNCHES = [20, 60, 210, 260, 300, 455, 510, 560, 810, 900]
LAG = 1000


DECODER_LAUNCHES = (810, 900)


def _marker_kernels(decoder_type="Conv2D"):
    return [(0, None, f"k{h}", decoder_type if h in DECODER_LAUNCHES else "MatMulV2", "AI_CORE", h + LAG, 30, None)
            for h in LAUNCHES]


def test_markers_through_flows_outermost_ranges_only():
    p = make_profile(_marker_kernels(), host=HOST, flows=[(0, h, h + LAG) for h in LAUNCHES])
    got = rows(p, "SELECT stage, start_ns, end_ns, kernel_count, method FROM stage_windows ORDER BY start_ns")
    assert got == [
        ("Other", 1020, 1090, 2, "markers"),   # text encoder: its Transformer range is ignored
        ("DiT", 1210, 1330, 3, "markers"),     # first forward; the block range inside adds nothing
        ("Other", 1455, 1485, 1, "markers"),   # scheduler between forwards
        ("DiT", 1510, 1590, 2, "markers"),
        ("VAE", 1810, 1930, 2, "markers"),     # decoder, attention inside it included
    ]


def test_markers_without_flows_use_launch_order():
    # No flows: a marker holds the kernels that start from its host start until the next marker's.
    p = make_profile(_marker_kernels(), host=HOST)
    assert {m for (m,) in rows(p, "SELECT mapped_by FROM stage_markers")} == {"launch_order"}
    got = rows(p, "SELECT stage, kernel_count FROM stage_windows ORDER BY start_ns")
    # With device = host + 1000 every kernel starts after the last marker's host start (800): all VAE.
    assert got == [("VAE", 10)]


def test_a_decoder_range_without_conv_is_no_vae():
    # An LLM's decoder layer holds MatMul and attention, no Conv: not a VAE. The DiT ranges remain.
    p = make_profile(_marker_kernels(decoder_type="MatMulV2"), host=HOST,
                     flows=[(0, h, h + LAG) for h in LAUNCHES])
    got = rows(p, "SELECT stage, start_ns, end_ns, kernel_count FROM stage_windows ORDER BY start_ns")
    assert got == [("Other", 1020, 1090, 2), ("DiT", 1210, 1330, 3), ("Other", 1455, 1485, 1),
                   ("DiT", 1510, 1590, 2), ("Other", 1810, 1930, 2)]


def test_a_rank_without_diffusion_stages_is_one_stage_named_all():
    # Only text-encoder and decoder-layer ranges, and no loop in the kernels: no evidence of a pipeline.
    host = [(0, "nn.Module: LlamaModel_0", 0, 1000), (0, "nn.Module: LlamaDecoderLayer_0", 10, 400)]
    p = make_profile(_marker_kernels(decoder_type="MatMulV2"), host=host,
                     flows=[(0, h, h + LAG) for h in LAUNCHES])
    assert rows(p, "SELECT stage, kernel_count, method FROM stage_summary") == [("All", 10, "single")]
    assert rows(p, "SELECT count(*) FROM stage_markers") == [(0,)]


def test_own_stage_markers_win():
    host = HOST + [(0, "npu_tui:stage:VAE", 250, 500)]
    p = make_profile(_marker_kernels(), host=host, flows=[(0, h, h + LAG) for h in LAUNCHES])
    got = rows(p, "SELECT stage, start_ns, end_ns, kernel_count FROM stage_windows ORDER BY start_ns")
    assert got == [("Other", 1020, 1240, 3), ("VAE", 1260, 1590, 5), ("Other", 1810, 1930, 2)]


@pytest.mark.parametrize("path", ["fixtures/bare_trace", "fixtures/diffusion_1rank", "fixtures/diffusion_2rank",
                                  "fixtures/level0", "npu_tui/demo/diffusion_demo"])
def test_the_shipped_profiles_keep_their_stages(path):
    root = Path(__file__).resolve().parents[1]
    truth = json.loads((root / f"{path}.truth.json").read_text())
    profile = load_profile(root / path)
    install_views(profile.con, load_rules())
    # Level0 writes N/A for every core, so its AI_CPU kernels cannot be told from vector ones: the
    # stages hold, the category shares of the generator's own model do not.
    _check_against_truth(profile, truth, "markers" if truth["spec"]["markers"] else "signature",
                         categories=truth["level"] != "Level0")


def test_a_text_encoder_before_the_loop_of_a_bare_trace_is_other(tmp_path):
    # The guide's own recipe writes only trace_view.json: no kernel_details.csv, no module ranges.
    profile, truth = _generated(tmp_path, layout="bare", markers=False, text_encoder=True, denoise_steps=3,
                                seed=21)
    _check_against_truth(profile, truth, "signature")
    assert truth["ranks"][0]["stages"]["Other"]["categories"]["FA"]["count"] > 0  # the encoder's attention


def test_markers_of_a_cut_trace_are_said_lost(tmp_path):
    """A trace cut part way loses the markers of the kernels after the cut, which then count as
    Other: the detection says so rather than 'from markers' alone."""
    from npu_tui.analysis.report import build_report

    out = tmp_path / "prof"
    generate(out, Spec(markers=True, vae="wan", profiler_steps=2, seed=14))
    whole = build_report(load_profile(out), load_rules())
    trace = next(out.rglob("trace_view.json"))
    data = trace.read_bytes()
    trace.write_bytes(data[: len(data) * 3 // 5])
    cut = build_report(load_profile(out), load_rules())
    (before,), (after,) = whole["stage_detection"], cut["stage_detection"]
    assert before["method"] == after["method"] == "markers"
    assert "did not load whole" not in before["summary"]
    assert after["summary"].endswith("; its trace did not load whole: kernels whose markers it lost count as Other")
    assert not cut["complete"]
