"""Real diffusion pipelines, profiled with the recipe on the CPU, with the truth of their stages.

Each pipeline is diffusers' own pipeline class over diffusers' own model classes (and transformers'
text encoders), built from small configs with random weights: nothing is downloaded. A step is one
pipeline call as a user makes it: the text encoders, then the pipeline (denoising loop, VAE decode,
post-processing). Tokenizers would need vocabulary files, so the encoders run on random token ids
and the pipeline is handed their embeddings.

The truth comes from forward hooks on the transformer (DiT), the VAE decoder (VAE) and the text
encoders (Other): each hook opens a record_function range ``truth:<stage>`` for the module's
forward, in the profiler's own clock. The ranges are taken out of the trace after it is written (so
the analysis never sees them) and kept in ``truth.json`` beside it; a kernel's true stage is the
range holding its start, Other outside them all.

    run = profile_pipeline("wan", out_dir, modules=False)  # -> Run(trace folder, truth ranges)

``modules=True`` profiles with ``with_stack=True``, which records ``nn.Module: <Class>_N`` ranges:
the markers a real user's trace carries. Imports torch and diffusers: used by tests and scripts only.
"""

from __future__ import annotations

import glob
import json
from decimal import Decimal
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

TRUTH_PREFIX = "truth:"
PIPELINES = ("flux", "sd3", "wan", "cogvideox")
# What each pipeline stands for in the tests.
ABOUT = {
    "flux": "Flux: MMDiT, guidance-distilled (one forward a step), AutoencoderKL with GroupNorm",
    "sd3": "SD3: MMDiT with batched CFG, three text encoders, AutoencoderKL",
    "wan": "Wan 2.1: video DiT with unbatched CFG (two forwards a step), causal Conv3d VAE, no GroupNorm",
    "cogvideox": "CogVideoX: video DiT with batched CFG, a 3D VAE that takes much of the call",
    "sd": "Stable Diffusion 1.x: a UNet denoiser with batched CFG, AutoencoderKL (markers only)",
    "qwenimage": "QwenImage: MMDiT with unbatched (true) CFG, the negative prompt shorter than the prompt "
                 "(each embedded at its own length: the two forwards' text shapes differ)",
    "pixart": "PixArt-α: a DiT with batched CFG, two denoising steps (few: a forward's tail shows), AutoencoderKL",
    "pixart-vae-after": "PixArt-α whose VAE decodes each call's latents after prof.step(): at the next step's start, "
                        "every third step that decode alone",
}


@dataclass
class Run:
    path: Path  # the profiler's output folder (a Kineto trace)
    truth: List[Tuple[str, int, int]]  # (stage, start ns, end ns), as the loader reads the trace's times


def _clip(torch_seed: int = 0):
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection

    return CLIPTextModelWithProjection(CLIPTextConfig(
        hidden_size=32, intermediate_size=37, num_attention_heads=4, num_hidden_layers=2, vocab_size=1000,
        projection_dim=32, max_position_embeddings=77, bos_token_id=0, eos_token_id=2))


def _t5(cls=None):
    from transformers import T5Config, T5EncoderModel

    return (cls or T5EncoderModel)(T5Config(d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4,
                                            vocab_size=1000))


def _kl_vae():
    from diffusers import AutoencoderKL

    return AutoencoderKL(in_channels=3, out_channels=3, down_block_types=["DownEncoderBlock2D"] * 2,
                         up_block_types=["UpDecoderBlock2D"] * 2, block_out_channels=[32, 64], layers_per_block=1,
                         latent_channels=16, norm_num_groups=32, sample_size=32, shift_factor=0.0609,
                         scaling_factor=1.5035)


def _ids(n: int):
    import torch

    return torch.randint(0, 1000, (1, n))


def build(name: str, decode: bool = True, layers: Optional[int] = None,
          denoising_steps: Optional[int] = None, controlnet: bool = False) -> Tuple[Callable[[], object], Dict[str, list]]:
    """(one pipeline call, {stage: the modules whose forward is that stage}); ``decode=False``: a
    call that returns its latents undecoded (Flux only), as a benchmark of the transformer does;
    ``layers``: a deeper transformer (Flux: as many double- and single-stream blocks; SD3: blocks);
    ``denoising_steps``: a call's (Flux only; 6 otherwise), a few as a distilled model runs;
    ``controlnet``: a ControlNet of one double-stream block run before the transformer at every
    denoising step (Flux only; its forwards are the DiT stage's too, and the VAE's encoding of
    its control image the VAE's)."""
    import torch
    import diffusers as d

    torch.manual_seed(0)
    if name == "flux":
        tr = d.FluxTransformer2DModel(patch_size=1, in_channels=64, num_layers=layers or 2, num_single_layers=layers or 2,
                                      attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
                                      pooled_projection_dim=32, axes_dims_rope=[4, 4, 8])
        clip, t5, vae = _clip(), _t5(), _kl_vae()
        parts = dict(scheduler=d.FlowMatchEulerDiscreteScheduler(), vae=vae, text_encoder=clip, tokenizer=None,
                     text_encoder_2=t5, tokenizer_2=None, transformer=tr)
        extra, dit, vae_calls = {}, [tr], [vae.decode]
        if controlnet:
            cn = d.FluxControlNetModel(patch_size=1, in_channels=64, num_layers=1, num_single_layers=0,
                                       attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
                                       pooled_projection_dim=32, axes_dims_rope=[4, 4, 8])
            pipe = d.FluxControlNetPipeline(**parts, controlnet=cn)
            # (the control image is encoded by the VAE, before the loop)
            extra, dit, vae_calls = {"control_image": torch.rand(1, 3, 64, 64)}, [tr, cn], [vae.decode, vae.encode]
        else:
            pipe = d.FluxPipeline(**parts)
        ids, ids2 = _ids(77), _ids(32)

        def step():
            pooled = clip(ids).text_embeds
            return pipe(prompt_embeds=t5(ids2)[0], pooled_prompt_embeds=pooled, height=64, width=64,
                        num_inference_steps=denoising_steps or 6, guidance_scale=3.5,
                        output_type="np" if decode else "latent",
                        max_sequence_length=32, callback_on_step_end=_step_end, **extra)

        return step, {"DiT": dit, "VAE": vae_calls, "Other": [clip, t5]}
    if name == "sd3":
        tr = d.SD3Transformer2DModel(sample_size=32, patch_size=2, in_channels=16, num_layers=layers or 4,
                                     attention_head_dim=16, num_attention_heads=4, caption_projection_dim=64,
                                     joint_attention_dim=32, pooled_projection_dim=64, out_channels=16)
        c1, c2, t5, vae = _clip(), _clip(), _t5(), _kl_vae()
        pipe = d.StableDiffusion3Pipeline(scheduler=d.FlowMatchEulerDiscreteScheduler(), vae=vae, text_encoder=c1,
                                          tokenizer=None, text_encoder_2=c2, tokenizer_2=None, text_encoder_3=t5,
                                          tokenizer_3=None, transformer=tr)
        ids, ids3 = _ids(77), _ids(32)

        def encode():
            o1, o2 = c1(ids, output_hidden_states=True), c2(ids, output_hidden_states=True)
            clip_states = torch.cat([o1.hidden_states[-2], o2.hidden_states[-2]], -1)[..., :32]
            return torch.cat([clip_states, t5(ids3)[0]], -2), torch.cat([o1.text_embeds, o2.text_embeds], -1)

        def step():
            (emb, pooled), (neg, neg_pooled) = encode(), encode()  # the prompt and the negative prompt
            return pipe(prompt_embeds=emb, negative_prompt_embeds=neg, pooled_prompt_embeds=pooled,
                        negative_pooled_prompt_embeds=neg_pooled, height=64, width=64, num_inference_steps=5,
                        guidance_scale=5.0, output_type="np", callback_on_step_end=_step_end)

        return step, {"DiT": [tr], "VAE": [vae.decode], "Other": [c1, c2, t5]}
    if name == "wan":
        from transformers import UMT5EncoderModel

        tr = d.WanTransformer3DModel(patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=16,
                                     in_channels=16, out_channels=16, text_dim=32, freq_dim=256, ffn_dim=64,
                                     num_layers=4, cross_attn_norm=True, qk_norm="rms_norm_across_heads",
                                     rope_max_seq_len=32)
        vae = d.AutoencoderKLWan(base_dim=3, z_dim=16, dim_mult=[1, 1, 1, 1], num_res_blocks=1,
                                 temperal_downsample=[False, True, True])
        t5 = _t5(UMT5EncoderModel)
        pipe = d.WanPipeline(tokenizer=None, text_encoder=t5, transformer=tr, vae=vae,
                             scheduler=d.FlowMatchEulerDiscreteScheduler(shift=7.0))
        ids = _ids(32)

        def step():
            return pipe(prompt_embeds=t5(ids)[0], negative_prompt_embeds=t5(ids)[0], height=32, width=32,
                        num_frames=9, num_inference_steps=4, guidance_scale=6.0, output_type="np",
                        callback_on_step_end=_step_end)

        return step, {"DiT": [tr], "VAE": [vae.decode], "Other": [t5]}
    if name == "cogvideox":
        tr = d.CogVideoXTransformer3DModel(num_attention_heads=4, attention_head_dim=16, in_channels=4, out_channels=4,
                                           time_embed_dim=2, text_embed_dim=32, num_layers=4, sample_width=4,
                                           sample_height=4, sample_frames=9, patch_size=2, temporal_compression_ratio=4,
                                           max_text_seq_length=16)
        vae = d.AutoencoderKLCogVideoX(in_channels=3, out_channels=3,
                                       down_block_types=("CogVideoXDownBlock3D",) * 4,
                                       up_block_types=("CogVideoXUpBlock3D",) * 4, block_out_channels=(8, 8, 8, 8),
                                       latent_channels=4, layers_per_block=1, norm_num_groups=2,
                                       temporal_compression_ratio=4)
        t5 = _t5()
        pipe = d.CogVideoXPipeline(tokenizer=None, text_encoder=t5, transformer=tr, vae=vae,
                                   scheduler=d.CogVideoXDDIMScheduler())
        ids = _ids(16)

        def step():
            return pipe(prompt_embeds=t5(ids)[0], negative_prompt_embeds=t5(ids)[0], height=32, width=32,
                        num_frames=9, num_inference_steps=5, guidance_scale=6.0, output_type="np",
                        max_sequence_length=16, callback_on_step_end=_step_end)

        return step, {"DiT": [tr], "VAE": [vae.decode], "Other": [t5]}
    if name == "qwenimage":  # not in PIPELINES: a test of its own
        tr = d.QwenImageTransformer2DModel(patch_size=2, in_channels=64, out_channels=16, num_layers=2,
                                           attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
                                           axes_dims_rope=(4, 6, 6))
        vae = d.AutoencoderKLQwenImage(base_dim=4, z_dim=16, dim_mult=[1, 1, 1, 1], num_res_blocks=1,
                                       temperal_downsample=[False, True, True])
        t5 = _t5()
        pipe = d.QwenImagePipeline(scheduler=d.FlowMatchEulerDiscreteScheduler(), vae=vae, text_encoder=None,
                                   tokenizer=None, transformer=tr)
        ids, negative = _ids(16), _ids(7)

        def step():
            embedded = [t5(i)[0] for i in (ids, negative)]
            masks = [torch.ones(e.shape[:2], dtype=torch.long) for e in embedded]
            return pipe(prompt_embeds=embedded[0], prompt_embeds_mask=masks[0], negative_prompt_embeds=embedded[1],
                        negative_prompt_embeds_mask=masks[1], true_cfg_scale=4.0, height=64, width=64,
                        num_inference_steps=5, output_type="np", callback_on_step_end=_step_end)

        return step, {"DiT": [tr], "VAE": [vae.decode], "Other": [t5]}
    if name in ("pixart", "pixart-vae-after"):  # not in PIPELINES: tests of their own
        tr = d.PixArtTransformer2DModel(sample_size=8, num_layers=2, attention_head_dim=8, num_attention_heads=2,
                                        in_channels=4, out_channels=8, cross_attention_dim=16, caption_channels=32,
                                        norm_type="ada_norm_single", use_additional_conditions=False, patch_size=2)
        t5 = _t5()
        vae = d.AutoencoderKL(in_channels=3, out_channels=3, down_block_types=["DownEncoderBlock2D"] * 2,
                              up_block_types=["UpDecoderBlock2D"] * 2, block_out_channels=[32, 64],
                              layers_per_block=1, latent_channels=4, norm_num_groups=32, sample_size=16)
        pipe = d.PixArtAlphaPipeline(tokenizer=None, text_encoder=t5, vae=vae, transformer=tr,
                                     scheduler=d.DDIMScheduler())
        ids, mask = _ids(16), torch.ones(1, 16)

        latents, calls = [], []

        def step():
            calls.append(1)
            if name == "pixart-vae-after" and latents:  # the call before's, decoded after its step ended
                vae.decode(latents.pop() / vae.config.scaling_factor)
                if len(calls) % 3 == 0:  # and every third step that decode alone, as after the last call
                    return
            emb = t5(ids)[0]
            out = pipe(negative_prompt=None, prompt_embeds=emb, prompt_attention_mask=mask,
                       negative_prompt_embeds=t5(ids)[0], negative_prompt_attention_mask=mask, height=16, width=16,
                       num_inference_steps=2, guidance_scale=4.5, use_resolution_binning=False,
                       output_type="latent" if name == "pixart-vae-after" else "np")
            latents.append(out.images)

        return step, {"DiT": [tr], "VAE": [vae.decode], "Other": [t5]}
    if name == "sd":  # not in PIPELINES: its loop is a UNet's, found by its markers only
        unet = d.UNet2DConditionModel(sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
                                      block_out_channels=(32, 64),
                                      down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                      up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32,
                                      attention_head_dim=8, norm_num_groups=32)
        clip = _clip()
        vae = d.AutoencoderKL(in_channels=3, out_channels=3, down_block_types=["DownEncoderBlock2D"] * 2,
                              up_block_types=["UpDecoderBlock2D"] * 2, block_out_channels=[32, 64],
                              layers_per_block=1, latent_channels=4, norm_num_groups=32, sample_size=32)
        pipe = d.StableDiffusionPipeline(vae=vae, text_encoder=clip, tokenizer=None, unet=unet,
                                         scheduler=d.DDIMScheduler(), safety_checker=None, feature_extractor=None,
                                         requires_safety_checker=False)
        ids = _ids(77)

        def step():
            emb = clip.text_model(ids)[0]
            return pipe(prompt_embeds=emb, negative_prompt_embeds=emb, height=32, width=32, num_inference_steps=5,
                        guidance_scale=7.5, output_type="np")

        return step, {"DiT": [unet], "VAE": [vae.decode], "Other": [clip]}
    raise KeyError(name)


# What runs at each denoising step's end in PIPELINES' calls (their callback_on_step_end): a user's
# prof.step() there, when profiled per denoising step.
ON_DENOISING_STEP: List[Callable[[], object]] = []


def _step_end(pipe, i, t, kwargs):
    for fn in ON_DENOISING_STEP:
        fn()
    return kwargs


def _hook_truth(stages: Dict[str, list]) -> None:
    """A truth range around every call of each stage's modules (forward hooks) or methods (the
    VAE's ``decode``, whose own ops, the post-quant conv, a video VAE's per-frame slicing and
    concatenation, lie outside its decoder module: the VAE stage is the whole decode)."""
    import functools

    import torch

    for stage, modules in stages.items():
        for module in modules:
            if not isinstance(module, torch.nn.Module):
                method = module

                @functools.wraps(method)
                def wrapped(*args, method=method, stage=stage, **kwargs):
                    with torch.profiler.record_function(TRUTH_PREFIX + stage):
                        return method(*args, **kwargs)

                setattr(method.__self__, method.__name__, wrapped)
                continue
            open_ranges = []

            def pre(m, args, stage=stage, open_ranges=open_ranges):
                rf = torch.profiler.record_function(TRUTH_PREFIX + stage)
                rf.__enter__()
                open_ranges.append(rf)

            def post(m, args, out, open_ranges=open_ranges):
                open_ranges.pop().__exit__(None, None, None)

            module.register_forward_pre_hook(pre)
            module.register_forward_hook(post)


def profile_pipeline(name: str, out: Path, modules: bool = False, steps: int = 5,
                     per_denoising_step: bool = False, decode: bool = True, layers: Optional[int] = None,
                     cache=None, inside_call: bool = False, denoising_steps: Optional[int] = None,
                     controlnet: bool = False) -> Run:
    """Profile ``steps`` calls of the pipeline with the recipe (2 warm-up calls first) into ``out``;
    ``per_denoising_step``: with prof.step() at each denoising step's end instead of each call's, the
    schedule as long as the calls' denoising steps (the last call's decode runs after it ends);
    ``inside_call``: that way, one call's denoising steps after its first, ``steps`` of them (the
    first, with the text encoders, is the schedule's warm-up; the decode is not reached): forwards
    alone; ``decode``, ``layers``, ``denoising_steps``, ``controlnet``: see build; ``cache``: a
    diffusers cache config the transformer is given (``enable_cache``: step caching, a DiT's
    forwards no longer alike)."""
    import torch
    from npu_tui.collect.recipe import Backend, _active_schedule, profile_steps

    call, stages = build(name, decode, layers, denoising_steps, controlnet)
    if cache is not None:
        stages["DiT"][0].enable_cache(cache)
    _hook_truth(stages)
    tp = torch.profiler

    def profiler(folder: Path, n: int):
        schedule = (tp.schedule(wait=0, warmup=1, active=n, repeat=1) if inside_call
                    else _active_schedule(tp.schedule, n))
        return tp.profile(activities=[tp.ProfilerActivity.CPU], record_shapes=True, with_stack=modules,
                          schedule=schedule, on_trace_ready=tp.tensorboard_trace_handler(str(folder)))

    def step():
        with torch.no_grad():
            call()

    out.mkdir(parents=True, exist_ok=True)
    if inside_call:
        _profile_inside_call(step, out, steps, profiler)
    elif per_denoising_step:
        _profile_denoising_steps(step, out, steps, profiler)
    else:
        profile_steps(step, out, steps, Backend("cpu", "cpu", lambda: None, profiler))
    (trace,) = glob.glob(str(out / "*.pt.trace.json"))
    doc = json.loads(Path(trace).read_text())
    base = int(doc.get("baseTimeNanoseconds") or 0)

    def ns(us: float) -> int:  # as the loader reads the number written back: exact decimal µs
        return int(Decimal(repr(us)) * 1000) + base

    truth, kept = [], []
    for e in doc["traceEvents"]:
        if str(e.get("name", "")).startswith(TRUTH_PREFIX):
            if e.get("ph") == "X":
                truth.append((e["name"][len(TRUTH_PREFIX):], ns(e["ts"]), ns(e["ts"]) + int(Decimal(repr(e["dur"])) * 1000)))
        else:
            kept.append(e)
    doc["traceEvents"] = kept
    Path(trace).write_text(json.dumps(doc))
    (out / "truth.json").write_text(json.dumps(truth))
    return Run(out, truth)


def _profile_denoising_steps(call: Callable[[], None], out: Path, calls: int, profiler) -> None:
    """2 warm-up calls, then ``calls`` profiled with prof.step() at each denoising step's end."""
    ends: List[int] = []
    ON_DENOISING_STEP.append(lambda: ends.append(1))
    try:
        for _ in range(2):
            call()
        with profiler(out, calls * len(ends) // 2) as prof:
            ON_DENOISING_STEP[:] = [prof.step]
            for _ in range(calls):
                call()
    finally:
        ON_DENOISING_STEP.clear()


def _profile_inside_call(call: Callable[[], None], out: Path, steps: int, profiler) -> None:
    """2 warm-up calls, then one whose denoising steps each end in prof.step(), ``steps`` of them profiled."""
    for _ in range(2):
        call()
    with profiler(out, steps) as prof:
        ON_DENOISING_STEP[:] = [prof.step]
        try:
            call()
        finally:
            ON_DENOISING_STEP.clear()


def load_run(out: Path) -> Run:
    return Run(out, [tuple(t) for t in json.loads((out / "truth.json").read_text())])


# -- scoring: how much kernel time the analysis put in the right stage --------------------------------

TRUTH_SQL = """
WITH truth AS (SELECT * FROM (VALUES {values}) t(stage, lo_ns, hi_ns)),
-- innermost truth range holding the kernel's start (a text encoder inside nothing, the VAE decoder
-- inside nothing: the ranges do not nest across stages), else Other
k AS (
    SELECT k.rank, k.start_ns, k.dur_ns, k.stage AS found, k.category,
           coalesce((SELECT any_value(t.stage) FROM truth t WHERE k.start_ns >= t.lo_ns AND k.start_ns < t.hi_ns),
                    'Other') AS truth
    FROM kernel_stages k
)
SELECT * FROM k
"""


@dataclass
class Score:
    right: float  # share of kernel time in its true stage
    dit_share_error: float  # the largest |share(DiT, category) - the truth's| over categories
    found: Dict[str, float]  # kernel time (µs) per detected stage
    truth: Dict[str, float]  # kernel time (µs) per true stage
    method: str


def score(con, run: Run, by_count: bool = False) -> Score:
    """Compare the stages the analysis found (kernel_stages) with the truth of ``run``; ``by_count``:
    each kernel weighs one, not its time (a tiny model's ops on a loaded machine: one preempted op
    can outweigh a stage)."""
    values = ", ".join(f"('{stage}', {lo}, {hi})" for stage, lo, hi in run.truth)
    rows = con.execute(TRUTH_SQL.format(values=values)).fetchall()
    if by_count:
        rows = [(a, b, 1000, *rest) for a, b, _, *rest in rows]
    total = sum(r[2] for r in rows)
    # DiT and All are the same thing to a user asking "where is the transformer's time".
    right = sum(r[2] for r in rows if r[3] == r[5])
    found: Dict[str, float] = {}
    truth: Dict[str, float] = {}
    shares_found: Dict[str, float] = {}
    shares_truth: Dict[str, float] = {}
    for _, _, dur, stage, category, true_stage in rows:
        found[stage] = found.get(stage, 0.0) + dur / 1e3
        truth[true_stage] = truth.get(true_stage, 0.0) + dur / 1e3
        if stage == "DiT":
            shares_found[category] = shares_found.get(category, 0.0) + dur
        if true_stage == "DiT":
            shares_truth[category] = shares_truth.get(category, 0.0) + dur
    nf, nt = sum(shares_found.values()) or 1, sum(shares_truth.values()) or 1
    error = max((abs(shares_found.get(c, 0.0) / nf - shares_truth.get(c, 0.0) / nt)
                 for c in set(shares_found) | set(shares_truth)), default=1.0)
    (method,) = con.execute("SELECT string_agg(DISTINCT method, ',') FROM stage_windows").fetchone()
    return Score(right / total if total else 0.0, error, found, truth, method)
