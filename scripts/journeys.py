"""The key journeys in a real terminal: npu-tui under tmux, driven by keystrokes, read from the screen.

    python scripts/journeys.py [--size 120x40] [--size 80x24] [--collect]

Each journey starts the app on the bundled demo in a tmux session of the given size (in a scratch
folder, with a scratch cache), sends keys as a user types them and waits for text on the screen.
``--collect`` adds the slow one: ``npu-tui collect --demo --out D`` (the CPU build of torch is
enough), then ``npu-tui D`` and ``npu-tui report D``. Prints one line per journey and exits 1 if
any failed, with the screen it last saw.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, List

ROOT = Path(__file__).resolve().parents[1]
WAIT_S = 60.0


class JourneyFailed(Exception):
    pass


class Terminal:
    """One tmux session running a command; keys in, screen text out."""

    def __init__(self, name: str, size: str, command: List[str], cwd: Path, env: dict) -> None:
        self.name = name
        width, height = size.split("x")
        line = " ".join(shlex.quote(a) for a in command)
        env_line = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", width, "-y", height, "-c", str(cwd),
                        f"env {env_line} {line}; sleep 30"], check=True)

    def screen(self) -> str:
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True,
                              text=True).stdout

    def keys(self, *keys: str) -> None:
        for key in keys:
            subprocess.run(["tmux", "send-keys", "-t", self.name, key], check=True)
            time.sleep(0.15)

    def type(self, text: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, "-l", text], check=True)
        time.sleep(0.3)

    def wait(self, text: str, timeout: float = WAIT_S) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            shown = self.screen()
            if text in shown:
                return shown
            time.sleep(0.2)
        raise JourneyFailed(f"{text!r} never appeared; the screen:\n{self.screen()}")

    def absent(self, text: str, settle_s: float = 1.0) -> None:
        time.sleep(settle_s)
        if text in self.screen():
            raise JourneyFailed(f"{text!r} is on the screen:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def console_query(t: Terminal, scratch: Path) -> None:
    t.keys("7")
    t.wait("ctrl+r runs the statement")
    t.type("select 40 + 2 as answer")
    t.keys("C-r")
    t.wait("answer")
    t.wait("42")
    t.keys("End")
    t.type(" from kernel_nam")
    t.keys("C-Space")  # completion, as a terminal without the kitty protocol sends it (NUL)
    t.wait("from kernel_names")
    t.absent("Collect a new profile?")
    if (scratch / "prof_out").exists():
        raise JourneyFailed("typing a query started a collection")
    t.keys("Escape", "1")
    t.wait("Step account")


def drill_then_digit(t: Terminal, scratch: Path) -> None:
    t.keys("3")
    # The rows, not only the header: it says "sorted by" while the grid is still loading, and an
    # enter then has no row to open (the journey failed now and then that way).
    t.wait("rows  ·  sorted by total")
    t.keys("Enter")
    t.wait("›")
    t.keys("4")
    t.wait("Exposed communication per stage")


def filter_by_kernel_name(t: Terminal, scratch: Path) -> None:
    t.keys("3")
    t.wait("rows")
    t.keys("/")
    t.type("aclnnConv")  # part of the kernels' names, not of their type's
    t.keys("Enter")
    t.wait("filter “aclnnConv”")
    t.wait("Conv3DV2")
    t.keys("Escape")
    t.absent("filter “aclnnConv”")


def collect_then_escape(t: Terminal, scratch: Path) -> None:
    t.keys("c")
    t.wait("Collect a new profile?")
    t.wait("npu-tui collect --demo --out")
    t.keys("Escape")
    t.absent("Collect a new profile?")
    if (scratch / "prof_out").exists():
        raise JourneyFailed("escape in the collect dialog started a collection")


def collected_folder(t: Terminal, scratch: Path) -> None:
    t.wait("Step account", timeout=120)
    t.wait("run_")


JOURNEYS: List[Callable[[Terminal, Path], None]] = [console_query, drill_then_digit, filter_by_kernel_name,
                                                     collect_then_escape]


def run(journey, size: str, scratch: Path, env: dict, target: List[str]) -> str:
    t = Terminal(f"npu-tui-{journey.__name__}-{os.getpid()}", size, [sys.executable, "-m", "npu_tui", *target],
                 scratch, env)
    try:
        t.wait("Step account")
        journey(t, scratch)
        return ""
    except JourneyFailed as e:
        return str(e)
    finally:
        t.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", action="append", help="WIDTHxHEIGHT (repeatable; default 120x40 and 80x24)")
    ap.add_argument("--collect", action="store_true", help="also collect the demo and open the folder of runs")
    args = ap.parse_args()
    if shutil.which("tmux") is None:
        print("journeys: tmux is not installed", file=sys.stderr)
        return 2
    # A session that outlives the journeys' own: the tmux server quits with its last session, and
    # the next journey's would race its exit.
    keeper = f"npu-tui-journeys-{os.getpid()}"
    subprocess.run(["tmux", "new-session", "-d", "-s", keeper, "sleep 3600"], check=True)
    try:
        return _journeys(args)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", keeper], capture_output=True)


def _journeys(args) -> int:
    failed = 0
    with tempfile.TemporaryDirectory(prefix="npu-tui-journeys-") as tmp:
        scratch = Path(tmp)
        env = {"NPU_TUI_CACHE_DIR": str(scratch / "cache"), "NPU_TUI_STATE_DIR": str(scratch / "state"),
               "PYTHONPATH": str(ROOT), "TERM": "xterm-256color"}
        plan = [(j, size, []) for size in (args.size or ["120x40", "80x24"]) for j in JOURNEYS]
        if args.collect:
            runs = scratch / "D"
            done = subprocess.run([sys.executable, "-m", "npu_tui", "collect", "--demo", "--out", str(runs)],
                                  cwd=scratch, env={**os.environ, **env}, capture_output=True, text=True)
            report = subprocess.run([sys.executable, "-m", "npu_tui", "report", str(runs)], cwd=scratch,
                                    env={**os.environ, **env}, capture_output=True, text=True)
            ok = done.returncode == 0 and report.returncode == 0
            print(f"{'ok  ' if ok else 'FAIL'} collect --demo --out D; report D (exit {report.returncode})")
            failed += not ok
            plan += [(collected_folder, size, [str(runs)]) for size in (args.size or ["120x40"])]
        for journey, size, target in plan:
            shutil.rmtree(scratch / "prof_out", ignore_errors=True)  # what a failed journey left
            why = run(journey, size, scratch, env, target)
            print(f"{'ok  ' if not why else 'FAIL'} {journey.__name__} at {size}")
            if why:
                failed += 1
                print(why)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
