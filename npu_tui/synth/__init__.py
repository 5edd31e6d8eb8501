"""Deterministic generator of torch_npu profiler output for a diffusion pipeline.

``generate(out, spec)`` writes a profile (text encoder -> DiT denoising loop -> VAE decode, on
one or more ranks) in the layout and format torch_npu writes, plus ``<out>.truth.json`` beside
it: what the profile holds, computed from the generator's own timeline (see ``truth``). Pure
standard library, so fixtures can be rebuilt anywhere: ``python -m npu_tui.synth --help``.
"""

from .generate import generate, truth_path
from .spec import PRESETS, Spec, preset

__all__ = ["PRESETS", "Spec", "generate", "preset", "truth_path"]
