"""The question `c` asks before it collects: the exact command, where it writes, and what becomes of
the open profile. A collection runs the workload on the device for minutes, so it starts only on an
explicit enter here; escape (or any other way out) starts nothing."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Optional

from rich.text import Text
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
# down (repeating every few tens of ms) is no answer to it.
SHOWN_S = 0.5
QUIET_S = 0.3


class CollectConfirm(ModalScreen[bool]):
    """Dismissed with True only by a deliberate enter (SHOWN_S, QUIET_S)."""

    BINDINGS = [Binding("enter", "collect", "Collect"),
                Binding("escape", "dismiss(False)", "Cancel")]

    def __init__(self, spec: CollectSpec, root: Path, open_path: Optional[Path]) -> None:
        super().__init__()
        self.spec, self.root, self.open_path = spec, root, open_path
        self._shown = self._last_key = time.monotonic()
        self._quiet = False  # whether the key being handled came after QUIET_S without keys

    def on_key(self) -> None:
        now = time.monotonic()
        self._quiet, self._last_key = now - self._last_key >= QUIET_S, now

    def action_collect(self) -> None:
        if self._quiet and time.monotonic() - self._shown >= SHOWN_S:
            self.dismiss(True)
        else:
            self.notify("Enter again to collect: that one came too soon after the others.", timeout=3)

    def compose(self) -> ComposeResult:
        with Vertical(id="collect-confirm"):
            yield Static(plan_text(self.spec, self.root, self.open_path), id="collect-confirm-text")
