"""What to generate: one frozen dataclass, and the named presets the committed fixtures use."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Dict, Optional, Tuple

LAYOUTS = ("cluster", "rank", "bare")
LEVELS = ("Level1", "Level0")
VAES = ("classic", "wan")


@dataclass(frozen=True)
class Spec:
    """A diffusion pipeline run under the profiler: one pipeline call per profiler step.

    ``kernels``, when set, replaces ``denoise_steps`` by the number that gives about that many
    kernels per rank (for load benchmarks); memory use grows with the kernels of one step.
    """

    ranks: int = 1
    first_device: int = 0          # rank r runs on device first_device + r (rank is not device)
    profiler_steps: int = 1        # pipeline calls, Step Id 1..n
    denoise_steps: int = 4         # DiT forwards per pipeline call
    blocks: int = 2                # transformer blocks per DiT forward
    seq_len: int = 4096            # DiT tokens per rank
    hidden: int = 3072
    text_encoder: bool = True
    vae: str = "classic"           # classic: GroupNorm + Conv2D; wan: Conv3D + RmsNorm, no GroupNorm
    vae_attention: bool = True
    markers: bool = True           # nn.Module ranges of the text encoder, DiT and VAE on the host
    layout: str = "cluster"        # cluster: run folder of *_ascend_pt; rank: one of those;
                                   # bare: trace_view.json alone
    level: str = "Level1"          # Level0: Type and Accelerator Core are N/A, fewer files
    comm_gbps: float = 40.0        # effective collective bandwidth between ranks
    slow_rank: Optional[int] = None  # this rank's compute takes slow_factor times as long: the
    slow_factor: float = 1.5         # others wait for it at every collective
    slow_link: Optional[Tuple[int, int]] = None  # this src -> dst link moves its bytes 4x slower
    memory_leak_mb: float = 0.0    # memory_record.csv: each DiT forward keeps this much more allocated
    kernels: Optional[int] = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}")
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}")
        if self.vae not in VAES:
            raise ValueError(f"vae must be one of {VAES}")
        if self.ranks < 1 or self.profiler_steps < 1 or self.denoise_steps < 1 or self.blocks < 1:
            raise ValueError("ranks, profiler_steps, denoise_steps and blocks must be >= 1")
        if self.slow_rank is not None and not 0 <= self.slow_rank < self.ranks:
            raise ValueError("slow_rank must be one of the ranks")
        if self.layout != "cluster" and self.ranks != 1:
            raise ValueError("the rank and bare layouts hold one rank")


# Chosen so the demo fires fa_high and comm_exposed_high in the DiT (long video-like sequence, slow
# links), the 2-rank fixture differs from it (devices 4-5, image sequence, no markers) and the 1-rank
# one is MatMul-bound, while all of fixtures/ stays small.
PRESETS: Dict[str, Spec] = {
    "demo": Spec(ranks=2, profiler_steps=5, denoise_steps=3, blocks=1, seq_len=16384,
                 comm_gbps=10.0, vae="wan", seed=7),
    "diffusion_1rank": Spec(ranks=1, profiler_steps=2, denoise_steps=4, blocks=2, seed=1),
    "diffusion_2rank": Spec(ranks=2, first_device=4, profiler_steps=2, denoise_steps=3, blocks=2,
                            seq_len=2048, markers=False, seed=2),
    "bare_trace": Spec(layout="bare", text_encoder=False, vae_attention=False, denoise_steps=3,
                       seed=3),
    "level0": Spec(level="Level0", layout="rank", profiler_steps=1, denoise_steps=3, seed=4),
}


def preset(name: str, **changes) -> Spec:
    """A named preset, optionally with some fields changed."""
    if name not in PRESETS:
        raise KeyError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
    return replace(PRESETS[name], **changes)
