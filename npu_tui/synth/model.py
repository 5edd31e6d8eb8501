"""The pipeline model: which kernels a text encoder -> DiT loop -> VAE decode launches, in order.

Each kernel kind carries the names torch_npu gives it (kernel name, Type, Accelerator Core), the
host op that launches it, shapes, and a duration derived from its work (FLOPs or bytes at a fixed
effective rate), so shapes and times agree. The category is what design.md §5 assigns; the model
records it so the truth file does not depend on the analysis rules it is meant to check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, NamedTuple, Optional, Union

from .spec import Spec

# Effective rates of an Ascend 910B-class device (bf16); only their ratios matter for the shares.
MATMUL_FLOP_PER_NS = 190e3
FA_FLOP_PER_NS = 140e3
CONV_FLOP_PER_NS = 110e3
VECTOR_BYTE_PER_NS = 900.0
KERNEL_FLOOR_NS = 3_000        # launch-to-finish floor of any device task
BF16 = 2


@dataclass(frozen=True)
class Op:
    """One kind of device task."""

    name: str            # kernel name; for comm a prefix completed with a per-op counter
    type: str            # OP Type as Level1 writes it
    core: str            # Accelerator Core
    category: str        # FA | MatMul | Conv | Vector | Comm | Other
    host: str            # host op that launches it (cpu_op in trace_view.json)
    in_shapes: str = ""
    in_dtypes: str = ""
    in_formats: str = ""
    out_shapes: str = ""
    out_dtypes: str = ""
    out_formats: str = ""
    block: int = 0
    mix_block: int = 0
    dur_ns: int = KERNEL_FLOOR_NS
    launch_ns: int = 15_000       # host cost of the launching op
    comm_bytes: int = 0           # for Comm: bytes each rank sends
    waits_comm: bool = False      # starts only after the rank's latest collective finished

    @property
    def compute(self) -> bool:
        return self.category in ("FA", "MatMul", "Conv", "Vector") or self.core == "AI_CPU"


class Call(NamedTuple):
    """Start of one call of a stage (a DiT forward, a VAE decode, the text encoding)."""

    stage: str


class Range(NamedTuple):
    """Begin or end of a host module range (``nn.Module: X_0``)."""

    name: str
    begin: bool


Item = Union[Op, Call, Range]


def _shape(*dims: int) -> str:
    return ",".join(str(d) for d in dims)


def _ns(work: float, rate: float) -> int:
    return KERNEL_FLOOR_NS + int(work / rate)


def matmul(m: int, k: int, n: int, bias: bool = False, waits: bool = False) -> Op:
    if bias:
        name, typ, host = "aclnnAddmm_MatMulCommon_MatMulV2", "MatMulV2", "aten::addmm"
        ins = f"{_shape(n)};{_shape(m, k)};{_shape(k, n)}"
        dt, fm = "DT_BF16;DT_BF16;DT_BF16", "ND;ND;ND"
    else:
        name, typ, host = "aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "aten::matmul"
        ins, dt, fm = f"{_shape(m, k)};{_shape(k, n)}", "DT_BF16;DT_BF16", "ND;ND"
    return Op(name, typ, "AI_CORE", "MatMul", host, ins, dt, fm, _shape(m, n), "DT_BF16", "ND",
              block=24, dur_ns=_ns(2.0 * m * k * n, MATMUL_FLOP_PER_NS), launch_ns=22_000,
              waits_comm=waits)


def attention(q_len: int, kv_len: int, hidden: int, fused_infer: bool, waits: bool = False) -> Op:
    heads = max(1, hidden // 128)
    if fused_infer:
        name = "aclnnFusedInferAttentionScoreV2_FusedInferAttentionScore_FusedInferAttentionScore"
        typ, host = "FusedInferAttentionScore", "npu::npu_fused_infer_attention_score"
    else:
        name = "aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore"
        typ, host = "FlashAttentionScore", "npu::npu_fusion_attention"
    q, kv = _shape(1, heads, q_len, 128), _shape(1, heads, kv_len, 128)
    return Op(name, typ, "MIX_AIC", "FA", host, f"{q};{kv};{kv}", "DT_BF16;DT_BF16;DT_BF16",
              "ND;ND;ND", q, "DT_BF16", "ND", block=24, mix_block=48,
              dur_ns=_ns(4.0 * q_len * kv_len * hidden, FA_FLOP_PER_NS), launch_ns=30_000,
              waits_comm=waits)


def conv(cin: int, cout: int, spatial: tuple, k: int, stride: int = 1, waits: bool = False) -> Op:
    """Conv2D for a 2-element ``spatial`` (H, W), Conv3D for 3 (T, H, W); output size = in / stride."""
    out = tuple(max(1, s // stride) for s in spatial)
    points = 1
    for s in out:
        points *= s
    kernel = (k,) * len(spatial)
    taps = k ** len(spatial)
    if len(spatial) == 2:
        name, typ, host, fmt = "aclnnConvolution_Conv2D_Conv2D", "Conv2D", "aten::conv2d", "NCHW"
    else:
        name, typ, host, fmt = "aclnnConvolution_Conv3DV2_Conv3DV2", "Conv3DV2", "aten::conv3d", "NCDHW"
    ins = f"{_shape(1, cin, *spatial)};{_shape(cout, cin, *kernel)};{_shape(cout)}"
    return Op(name, typ, "AI_CORE", "Conv", host, ins, "DT_BF16;DT_BF16;DT_BF16",
              f"{fmt};{fmt};ND", _shape(1, cout, *out), "DT_BF16", fmt, block=24,
              dur_ns=_ns(2.0 * points * cin * cout * taps, CONV_FLOP_PER_NS), launch_ns=25_000,
              waits_comm=waits)


# name, Type, host op, inputs read per output element (for the bytes moved)
VECTOR_KINDS = {
    "rmsnorm": ("aclnnRmsNorm_RmsNorm_RmsNorm", "RmsNorm", "npu::npu_rms_norm", 2),
    "layernorm": ("aclnnLayerNorm_LayerNormV4_LayerNormV4", "LayerNormV4", "aten::layer_norm", 2),
    "groupnorm": ("aclnnGroupNorm_GroupNormV2_GroupNormV2", "GroupNormV2", "aten::group_norm", 2),
    "mul": ("aclnnMul_MulAiCore_Mul", "Mul", "aten::mul", 2),
    "add": ("aclnnAdd_AddAiCore_Add", "Add", "aten::add", 2),
    "gelu": ("aclnnGelu_GeluV2_GeluV2", "GeluV2", "aten::gelu", 1),
    "silu": ("aclnnSilu_Swish_Swish", "Swish", "aten::silu", 1),
    "upsample": ("aclnnUpsampleNearest2d_ResizeNearestNeighborV2_ResizeNearestNeighborV2",
                 "ResizeNearestNeighborV2", "aten::upsample_nearest2d", 1),
}


def vector(kind: str, *dims: int, waits: bool = False) -> Op:
    name, typ, host, reads = VECTOR_KINDS[kind]
    elems = 1
    for d in dims:
        elems *= d
    shape = _shape(*dims)
    ins = ";".join([shape] * reads)
    return Op(name, typ, "AI_VECTOR_CORE", "Vector", host, ins, ";".join(["DT_BF16"] * reads),
              ";".join(["ND"] * reads), shape, "DT_BF16", "ND", block=40,
              dur_ns=_ns(elems * BF16 * (reads + 1), VECTOR_BYTE_PER_NS), launch_ns=12_000,
              waits_comm=waits)


def ai_cpu(name: str, typ: str, host: str, shape: str, dur_ns: int) -> Op:
    return Op(name, typ, "AI_CPU", "Other", host, shape, "DT_INT64", "ND", shape, "DT_FLOAT",
              "ND", dur_ns=dur_ns, launch_ns=40_000)


def collective(kind: str, nbytes: int, gbps: float) -> Op:
    """``kind`` is allGather or allReduce; the time is the transfer alone, waits come on top."""
    name = f"hcom_{kind}_"
    host = "c10d::allgather_" if kind == "allGather" else "c10d::allreduce_"
    factor = 2.0 if kind == "allReduce" else 1.0  # reduce-scatter + all-gather phases
    return Op(name, name, "HCCL", "Comm", host, dur_ns=_ns(factor * nbytes, gbps),
              launch_ns=35_000, comm_bytes=nbytes)


# ---------------------------------------------------------------------------------------------
# The pipeline, as the host launches it.

TEXT_LEN, TEXT_HIDDEN, TEXT_LAYERS = 512, 4096, 2
LATENT_CHANNELS = 16


def _text_encoder(spec: Spec) -> Iterator[Item]:
    s, h = TEXT_LEN, TEXT_HIDDEN
    if spec.markers:
        yield Range("nn.Module: T5EncoderModel_0", True)
    for _ in range(TEXT_LAYERS):
        yield vector("rmsnorm", s, h)
        yield matmul(s, h, 3 * h)
        yield attention(s, s, h, fused_infer=True)
        yield matmul(s, h, h)
        yield vector("add", s, h)
        yield vector("rmsnorm", s, h)
        yield matmul(s, h, 4 * h)
        yield vector("gelu", s, 4 * h)
        yield matmul(s, 4 * h, h)
        yield vector("add", s, h)
    yield vector("rmsnorm", s, h)
    if spec.markers:
        yield Range("nn.Module: T5EncoderModel_0", False)


def _dit_forward(spec: Spec) -> Iterator[Item]:
    s, h, multi = spec.seq_len, spec.hidden, spec.ranks > 1
    kv = s * spec.ranks            # sequence parallel: each rank attends to every rank's keys
    gbps = spec.comm_gbps
    model = "WanTransformer3DModel_0" if spec.vae == "wan" else "FluxTransformer2DModel_0"
    if spec.markers:
        yield Range(f"nn.Module: {model}", True)
    side = max(2, int((s * spec.ranks) ** 0.5))
    yield conv(LATENT_CHANNELS, h, (side, side), k=2, stride=2)     # patch embedding, every forward
    yield ai_cpu("aclnnIndexSelect_GatherV2_GatherV2", "GatherV2", "aten::index_select", "1", 18_000)
    yield matmul(1, 256, h, bias=True)
    yield vector("silu", 1, h)
    yield matmul(1, h, 6 * h, bias=True)
    for _ in range(spec.blocks):
        yield vector("layernorm", s, h)
        yield vector("mul", s, h)
        yield matmul(s, h, 3 * h, bias=True)
        if multi:
            yield collective("allGather", 2 * s * h * BF16, gbps)   # K and V of the other ranks
        yield vector("rmsnorm", s, 2 * h)
        yield vector("mul", s, 2 * h)
        yield vector("mul", s, 2 * h)
        yield vector("add", s, 2 * h)
        yield attention(s, kv, h, fused_infer=False, waits=multi)
        yield matmul(s, h, h, bias=True)
        if multi:
            yield collective("allReduce", s * h * BF16, gbps)
        yield vector("add", s, h, waits=multi)
        yield vector("layernorm", s, h)
        yield vector("mul", s, h)
        yield matmul(s, h, 4 * h)
        yield vector("gelu", s, 4 * h)
        yield matmul(s, 4 * h, h)
        yield vector("add", s, h)
    yield vector("layernorm", s, h)
    yield matmul(s, h, 64, bias=True)
    if spec.markers:
        yield Range(f"nn.Module: {model}", False)


def _vae_decode(spec: Spec) -> Iterator[Item]:
    wan = spec.vae == "wan"
    top, inner = ("AutoencoderKLWan_0", "WanDecoder3d_0") if wan else ("AutoencoderKL_0", "Decoder_0")
    frames = 3
    if spec.markers:
        yield Range(f"nn.Module: {top}", True)
    size = 64
    multi = spec.ranks > 1

    def spatial(sz: int) -> tuple:
        return (frames, sz, sz) if wan else (sz, sz)

    if multi:  # patch-parallel decode gathers the latents first
        yield collective("allGather", LATENT_CHANNELS * frames * size * size * BF16, spec.comm_gbps)
    yield conv(LATENT_CHANNELS, LATENT_CHANNELS, spatial(size), k=1, waits=multi)  # post_quant_conv
    if spec.markers:
        yield Range(f"nn.Module: {inner}", True)

    def norm(c: int, sz: int) -> Op:
        dims = (1, c, frames, sz, sz) if wan else (1, c, sz, sz)
        return vector("rmsnorm" if wan else "groupnorm", *dims)

    def act(c: int, sz: int) -> Op:
        return vector("silu", *((1, c, frames, sz, sz) if wan else (1, c, sz, sz)))

    def resnet(cin: int, cout: int, sz: int) -> Iterator[Op]:
        yield norm(cin, sz)
        yield act(cin, sz)
        yield conv(cin, cout, spatial(sz), k=3)
        yield norm(cout, sz)
        yield act(cout, sz)
        yield conv(cout, cout, spatial(sz), k=3)
        if cin != cout:
            yield conv(cin, cout, spatial(sz), k=1)
        yield vector("add", 1, cout, *spatial(sz))

    yield conv(LATENT_CHANNELS, 512, spatial(size), k=3)
    yield from resnet(512, 512, size)
    if spec.vae_attention:
        tokens = size * size
        yield norm(512, size)
        yield matmul(tokens, 512, 3 * 512, bias=True)
        yield attention(tokens, tokens, 512, fused_infer=True)
        yield matmul(tokens, 512, 512, bias=True)
        yield vector("add", 1, 512, *spatial(size))
    yield from resnet(512, 512, size)
    channels = (512, 512, 256, 128)
    cin = 512
    for i, cout in enumerate(channels):
        for j in range(2):
            yield from resnet(cin if j == 0 else cout, cout, size)
        cin = cout
        if i < len(channels) - 1:
            yield vector("upsample", 1, cout, *spatial(size * 2))
            size *= 2
            yield conv(cout, cout, spatial(size), k=3)
    yield norm(cin, size)
    yield act(cin, size)
    yield conv(cin, 3, spatial(size), k=3)
    if spec.markers:
        yield Range(f"nn.Module: {inner}", False)
        yield Range(f"nn.Module: {top}", False)


def pipeline_call(spec: Spec, denoise_steps: Optional[int] = None) -> Iterator[Item]:
    """Everything one pipeline call launches, in host order."""
    yield Call("Other")
    yield ai_cpu("aclnnNormal_StandardNormal_StandardNormal", "StandardNormal", "aten::normal_",
                 _shape(1, LATENT_CHANNELS, 64, 64), 45_000)      # initial latents
    if spec.text_encoder:
        yield from _text_encoder(spec)
    forward = list(_dit_forward(spec))  # the same kernels every step: build them once
    for _ in range(spec.denoise_steps if denoise_steps is None else denoise_steps):
        yield Call("DiT")
        yield from forward
    yield Call("VAE")
    yield from _vae_decode(spec)


def kernels_per_call(spec: Spec, denoise_steps: int) -> int:
    return sum(1 for it in pipeline_call(spec, denoise_steps) if isinstance(it, Op))


def effective_denoise_steps(spec: Spec) -> int:
    """denoise_steps, or the number that gives about ``spec.kernels`` kernels per rank."""
    if spec.kernels is None:
        return spec.denoise_steps
    one, two = kernels_per_call(spec, 1), kernels_per_call(spec, 2)
    per_forward, fixed = two - one, one - (two - one)
    want = spec.kernels / spec.profiler_steps - fixed
    return max(1, round(want / per_forward))
