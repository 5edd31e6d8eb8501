"""The built-in demo workload: a small DiT denoising loop, then a small VAE decoder.

Shaped like a diffusion pipeline so every part of the analysis has something to find (patch-embed
Conv inside the DiT, attention and MatMul inside the VAE), yet small enough that one step takes a
fraction of a second on a laptop CPU. Imported only inside the collection child.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from npu_tui import stage  # the public helper, as a user workload would use it

LATENT_CHANNELS = 4
LATENT_SIZE = 32
PATCH = 2
DIM = 64
HEADS = 4
DIT_BLOCKS = 2
DENOISE_STEPS = 3
VAE_CHANNELS = 64


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """RoPE-style rotation of pairs of channels by a position-dependent angle."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class DiTBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(DIM)
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)
        self.norm2 = nn.LayerNorm(DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x, cos, sin):
        b, n, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, HEADS, DIM // HEADS).permute(2, 0, 3, 1, 4)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, DIM)
        x = x + self.proj(a)
        return x + self.mlp(self.norm2(x))


class DiT(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Conv2d(LATENT_CHANNELS, DIM, PATCH, stride=PATCH)
        self.blocks = nn.ModuleList(DiTBlock() for _ in range(DIT_BLOCKS))
        self.norm = nn.LayerNorm(DIM)
        self.out = nn.Linear(DIM, PATCH * PATCH * LATENT_CHANNELS)
        side = LATENT_SIZE // PATCH
        angles = torch.arange(side * side)[:, None] / (100.0 ** (torch.arange(DIM // HEADS // 2) / 8))
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def forward(self, latent):
        b, c, h, w = latent.shape
        x = self.embed(latent).flatten(2).transpose(1, 2)
        for block in self.blocks:
            x = block(x, self.cos, self.sin)
        x = self.out(self.norm(x))
        # Unpatchify back to the latent's layout.
        x = x.view(b, h // PATCH, w // PATCH, c, PATCH, PATCH).permute(0, 3, 1, 4, 2, 5)
        return x.reshape(b, c, h, w)


class ResBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.body = nn.Sequential(nn.GroupNorm(8, cin), nn.SiLU(), nn.Conv2d(cin, cout, 3, padding=1),
                                  nn.GroupNorm(8, cout), nn.SiLU(), nn.Conv2d(cout, cout, 3, padding=1))
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        return self.skip(x) + self.body(x)


class AttnBlock(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.norm = nn.GroupNorm(8, ch)
        self.qkv = nn.Conv2d(ch, 3 * ch, 1)
        self.proj = nn.Conv2d(ch, ch, 1)

    def forward(self, x):
        b, c, h, w = x.shape
        q, k, v = self.qkv(self.norm(x)).flatten(2).transpose(1, 2).chunk(3, dim=-1)
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).view(b, c, h, w)
        return x + self.proj(a)


class VAEDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        ch = VAE_CHANNELS
        self.conv_in = nn.Conv2d(LATENT_CHANNELS, ch, 3, padding=1)
        self.mid = nn.Sequential(ResBlock(ch, ch), AttnBlock(ch))
        self.up = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"),
                                nn.Conv2d(ch, ch // 2, 3, padding=1), ResBlock(ch // 2, ch // 2))
        self.out = nn.Sequential(nn.GroupNorm(8, ch // 2), nn.SiLU(), nn.Conv2d(ch // 2, 3, 3, padding=1))

    def forward(self, z):
        return self.out(self.up(self.mid(self.conv_in(z))))


def build(device: str = "cpu"):
    """One step = one pipeline call: a few denoising iterations of the DiT, then the VAE decode,
    on ``device`` (the collection child passes the profiled device: "npu", "cuda" or "cpu")."""
    torch.manual_seed(0)
    dit, vae = DiT().eval().to(device), VAEDecoder().eval().to(device)
    noise = torch.randn(1, LATENT_CHANNELS, LATENT_SIZE, LATENT_SIZE).to(device)

    @torch.inference_mode()
    def step():
        latent = noise
        with stage("DiT"):
            for _ in range(DENOISE_STEPS):
                latent = latent - 0.1 * dit(latent)
        with stage("VAE"):
            return vae(latent)

    return step
