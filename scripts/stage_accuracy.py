"""How well stage detection finds the DiT and the VAE of real diffusion pipelines.

    python scripts/stage_accuracy.py [--out DIR] [--pipelines flux,sd3,wan,cogvideox] [--keep]

Builds each test pipeline from diffusers' own model classes (small configs, random weights, no
downloads), profiles 5 pipeline calls with the recipe on the CPU three ways: without module ranges,
with them (``with_stack=True``), and without them a step per denoising step (``prof.step()`` in the
pipeline's step callback); and, that last way, 3 denoising steps inside one call (a schedule that
skips the first: forwards alone); then scores the stages npu-tui finds against the truth that forward
hooks on the transformer, the VAE decoder and the text encoders recorded: the share of kernel time
in its true stage, and the largest error of a DiT category share. Targets: without markers >= 95 %
and +-0.02, with module ranges >= 99 % and +-0.005. Needs torch, diffusers and transformers (the
test extra).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

# how it is profiled -> (right share, DiT share error)
TARGETS = {"plain": (0.95, 0.02), "modules": (0.99, 0.005), "denoising-steps": (0.95, 0.02),
           "inside-a-call": (0.95, 0.02)}


def main() -> int:
    import diffusion_pipelines as dp
    from npu_tui.session import open_session

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="where the traces go (default: a temporary folder)")
    ap.add_argument("--pipelines", default=",".join(dp.PIPELINES))
    ap.add_argument("--keep", action="store_true", help="reuse traces already in --out")
    args = ap.parse_args()
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="npu-tui-stages-"))
    print(f"{'pipeline':<10} {'profiled':<16} {'method':<10} {'right':>7} {'target':>7} "
          f"{'DiT err':>8} {'target':>7}  result")
    failed = 0
    for name in args.pipelines.split(","):
        for variant, (want_right, want_err) in TARGETS.items():
            folder = out / f"{name}-{variant}"
            if args.keep and (folder / "truth.json").is_file():
                run = dp.load_run(folder)
            else:
                shutil.rmtree(folder, ignore_errors=True)
                inside = variant == "inside-a-call"
                run = dp.profile_pipeline(name, folder, modules=variant == "modules", steps=3 if inside else 5,
                                          per_denoising_step=variant == "denoising-steps", inside_call=inside)
            s = dp.score(open_session(run.path, cache=False).con, run)
            ok = s.right >= want_right and s.dit_share_error <= want_err
            failed += not ok
            print(f"{name:<10} {variant:<16} {s.method:<10} {s.right:>7.1%} "
                  f"{want_right:>7.0%} {s.dit_share_error:>8.4f} {want_err:>7.3f}  {'ok' if ok else 'MISSED'}")
    print(f"traces in {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
