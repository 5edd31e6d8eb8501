"""python -m npu_tui.synth: write presets, or regenerate every committed output."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import List, Optional

from .generate import generate
from .spec import PRESETS, preset

SOURCE_ROOT = Path(__file__).resolve().parents[2]
# (profile path under the source tree, preset): what the repository commits.
COMMITTED = [(f"fixtures/{name}", name) for name in PRESETS if name != "demo"]
COMMITTED.append(("npu_tui/demo/diffusion_demo", "demo"))


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m npu_tui.synth", description=__doc__)
    ap.add_argument("--out", type=Path, help="write DIR/<preset>/ and DIR/<preset>.truth.json")
    ap.add_argument("--preset", action="append", choices=sorted(PRESETS),
                    help="preset to write (repeatable; default: all)")
    ap.add_argument("--kernels", type=int, help="about this many kernels per rank (benchmarks)")
    ap.add_argument("--committed", action="store_true",
                    help="regenerate fixtures/ and npu_tui/demo/ in the source tree")
    args = ap.parse_args(argv)
    if args.committed == (args.out is not None):
        ap.error("give either --out DIR or --committed")
    if args.committed:
        jobs = [(SOURCE_ROOT / path, name) for path, name in COMMITTED]
    else:
        jobs = [(args.out / name, name) for name in (args.preset or list(PRESETS))]
    for path, name in jobs:
        spec = preset(name) if args.kernels is None else preset(name, kernels=args.kernels)
        t0 = time.perf_counter()
        truth = generate(path, spec, preset=name)
        count = sum(r["kernel_count"] for r in truth["ranks"])
        print(f"{path}: {count} kernels in {time.perf_counter() - t0:.2f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
