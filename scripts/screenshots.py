"""Write screenshots/ from the real app on the bundled demo profile: one SVG per pane (and a drill-down
and the help screen), plus a PNG of each when cairosvg is installed (`pip install cairosvg`).

    python scripts/screenshots.py [--out screenshots] [--size 100x30]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TIMELINE_RANGE = ("6", "w", *["right"] * 14, "space", *["right"] * 30, "space")
# (file stem, keys pressed from the loaded Overview[, terminal size when not --size])
SHOTS = (
    ("overview", ()),
    ("findings", ("2",)),
    ("operators", ("3",)),
    ("operators-drill", ("3", "enter", "enter")),
    ("comm", ("4",)),
    ("ranks", ("5",)),
    ("sql", ("3", "v")),
    ("help", ("question_mark",)),
    ("find", ("ctrl+f", *"MatMul")),
    ("collect-confirm", ("c",)),
    ("timeline", TIMELINE_RANGE),
    ("memory", ("0",)),
    ("comm-matrix", ("4", "m")),
    ("timeline-80x24", ("6", "n"), (80, 24)),
)
# Textual's SVGs name Fira Code, which rasterisers without web fonts replace by a proportional face.
MONO = "DejaVu Sans Mono"


async def settle(app, pilot):
    from textual.worker import WorkerCancelled

    for _ in range(4):
        try:
            await app.workers.wait_for_complete()
        except WorkerCancelled:  # a grid re-queried: its newer worker is waited for next round
            pass
        await pilot.pause()


async def shoot(profile: Path, out: Path, size) -> list:
    from npu_tui.tui.app import NpuTuiApp

    written = []
    for stem, keys, *shot_size in SHOTS:
        app = NpuTuiApp(profile)
        async with app.run_test(size=shot_size[0] if shot_size else size) as pilot:
            await settle(app, pilot)
            for key in keys:
                await pilot.press(key)
                await settle(app, pilot)
            written.append(Path(app.save_screenshot(filename=f"{stem}.svg", path=str(out))))
    return written


def to_png(svg: Path) -> bool:
    try:
        import cairosvg
    except ImportError:
        return False
    text = re.sub(r'"?Fira Code"?', f'"{MONO}"', svg.read_text(encoding="utf-8"))
    cairosvg.svg2png(bytestring=text.encode("utf-8"), write_to=str(svg.with_suffix(".png")), output_width=1400)
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "screenshots"))
    ap.add_argument("--size", default="100x30", help="terminal COLSxROWS")
    args = ap.parse_args()
    from npu_tui.demo import PATH

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    cols, rows = (int(v) for v in args.size.split("x"))
    os.chdir(ROOT)  # a relative profile path in the header, the same on every machine
    svgs = asyncio.run(shoot(PATH.relative_to(ROOT), out.resolve(), (cols, rows)))
    pngs = [s for s in svgs if to_png(s)]
    print(f"{len(svgs)} SVG and {len(pngs)} PNG files in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
