"""Time to first frame and to a populated Overview, and CPU per page-down in a grid over every kernel.

    python scripts/measure_tui.py [PROFILE] [--pages 40]

Runs the real app headless (Textual's test driver renders every frame as a terminal would, without
the terminal). PROFILE defaults to the bundled demo.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

T0 = time.perf_counter()
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

async def measure(profile: Path, pages: int) -> None:
    from npu_tui.tui.app import NpuTuiApp
    from npu_tui.tui.drill import DrillScreen
    from npu_tui.tui.grid import GridQuery, PagedTable
    from npu_tui.tui.grids import INSTANCE_COLUMNS, Drill

    marks = {}

    def mark(what: str) -> None:
        # Printed as they happen, so a run stopped early still tells how far it got.
        marks[what] = time.perf_counter() - T0
        print(f"{marks[what]:7.2f}s  {what}", flush=True)

    # Textual calls a message handler of every class in the MRO: these run after the app's own.
    class Timed(NpuTuiApp):
        CSS_PATH = str(ROOT / "npu_tui" / "tui" / "app.tcss")  # relative paths resolve beside this file

        def on_mount(self) -> None:
            self.call_after_refresh(lambda: mark("first frame"))

        def on_session_loaded(self, msg) -> None:
            self.call_after_refresh(lambda: mark("tables loaded, grids filling"))

        def on_analysed(self, msg) -> None:
            self.call_after_refresh(lambda: mark("populated Overview"))

    app = Timed(profile)
    async with app.run_test(size=(120, 40)) as pilot:
        while "populated Overview" not in marks:
            await pilot.pause(0.01)
        kernels = app.con.execute("SELECT count(*) FROM kernels").fetchone()[0]
        t = time.perf_counter()
        every_kernel = GridQuery("Kernels", "kernel_instances", INSTANCE_COLUMNS)
        await app.push_screen(DrillScreen((), Drill(every_kernel), app.con))
        table = app.screen.query_one(PagedTable)
        while table.total is None:
            await pilot.pause(0.01)
        print(f"{time.perf_counter() - t:7.2f}s  grid over all kernels ready (after the Overview)")
        cpu = []
        for _ in range(pages):
            c = time.process_time()
            await pilot.press("pagedown")
            cpu.append(time.process_time() - c)
        print(f"{1e3 * sorted(cpu)[len(cpu) // 2]:7.1f}ms CPU per page-down (median of {pages}) "
              f"over {kernels:,} kernels")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profile", nargs="?")
    ap.add_argument("--pages", type=int, default=40)
    args = ap.parse_args()
    if args.profile:
        profile = Path(args.profile)
    else:
        from npu_tui.demo import PATH as profile
    asyncio.run(measure(profile, args.pages))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
