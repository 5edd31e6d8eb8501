"""The question `c` asks before it collects: the exact command, where it writes, and what becomes of
the open profile. A collection runs the workload on the device for minutes, so it starts only on an
explicit enter here; escape (or any other way out) starts nothing."""

from __future__ import annotations

import math
import shlex
import sys
import time
from pathlib import Path
from typing import Optional

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from ...collect.runner import RUN_PREFIX, CollectSpec, previous_run
from ..cells import literal


def plan_text(spec: CollectSpec, root: Path, open_path: Optional[Path]) -> Text:
    """What the dialog says: the command, the new run's folder, the comparison and the open profile."""
    root = Path(root).resolve()
    base = previous_run(root)
    what = ("the built-in demo workload" if spec.demo
            else f"the workload {spec.workload}" if spec.workload else "the command above")
    text = Text().append("Collect a new profile?\n\n", style="bold")
    text.append("$ " + literal(shlex.join(spec.cli_argv(root))) + "\n\n", style="bold")
    text.append(f"Runs {literal(what)}: 2 warm-up steps, then {spec.steps} profiled steps.\n")
    text.append(f"Writes a new folder {literal(root / (RUN_PREFIX + '<date>_<time>_NN'))}; "
                "nothing there is overwritten.\n")
    text.append("Compares it with " + (literal(base.name) if base is not None else "nothing (no earlier run)")
                + ".\n")
    if open_path is not None:
        text.append(f"The open profile ({literal(open_path)}) stays open until the new run has "
                    "loaded, then the new run replaces it on screen; its files are left as they are.\n")
    return text.append("\nenter collects · escape cancels", style="dim")


# An enter collects once the question has been on screen this long, and after a moment without
# keys: enter is the drill key, so one typed ahead with `c` (before the question was drawn) or held
# down (repeating every few tens of ms) is no answer to it. Times are when each key arrived (its
# event's time), not when it is handled: a stalled loop handles a queued enter late.
SHOWN_S = 0.5
QUIET_S = 0.3
# The clock Textual stamps its events with (textual._time).
_clock = time.perf_counter if sys.platform == "win32" else time.monotonic


class CollectConfirm(ModalScreen[bool]):
    """Dismissed with True only by a deliberate enter (SHOWN_S, QUIET_S)."""

    BINDINGS = [Binding("enter", "collect", "Collect"),
                Binding("escape", "dismiss(False)", "Cancel")]

    def __init__(self, spec: CollectSpec, root: Path, open_path: Optional[Path]) -> None:
        super().__init__()
        self.spec, self.root, self.open_path = spec, root, open_path
        self._shown = self._last_key = math.inf  # until it is drawn, no key counts
        self._deliberate = False  # whether the key being handled is one (its enter collects)
        self._told = False  # that an enter came too soon, once a burst

    def on_mount(self) -> None:
        self.call_after_refresh(self._drawn)

    def _drawn(self) -> None:
        self._shown = self._last_key = _clock()

    def on_key(self, event: events.Key) -> None:
        quiet = event.time - self._last_key >= QUIET_S
        self._deliberate = quiet and event.time - self._shown >= SHOWN_S
        if self._shown != math.inf:
            self._last_key = max(self._last_key, event.time)
        self._told = self._told and not quiet

    def action_collect(self) -> None:
        if self._deliberate:
            self.dismiss(True)
        elif not self._told:
            self._told = True
            self.notify("Enter again to collect: that one came too soon after the others.", timeout=3)

    def compose(self) -> ComposeResult:
        with Vertical(id="collect-confirm"):
            yield Static(plan_text(self.spec, self.root, self.open_path), id="collect-confirm-text")
