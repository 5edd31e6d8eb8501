"""Pickers of what to open instead: the runs of a folder that `npu-tui collect` writes into, newest
first, and the profiles found in a folder of several."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ...collect.runner import list_runs, read_record, run_of
from ..cells import literal


def runs_root(path: Path, opened: Optional[Path]) -> Optional[Path]:
    """The folder of runs behind what is open: the path itself when it holds runs, else the
    parent of the run the open profile is in; None when neither."""
    if list_runs(path):
        return Path(path)
    run = run_of(opened or path)
    return run.parent if run is not None else None


def _detail(run: Path) -> str:
    try:
        rec = read_record(run)
    except (OSError, ValueError):
        rec = {}
    work = rec.get("workload", {})
    what = "demo" if work.get("demo") else Path(work.get("workload") or "").name or "command"
    return f"{rec.get('status', '?')}  {what}  {rec.get('started', '')}"


class PathPicker(ModalScreen[Optional[Path]]):
    """Folders to open, each by its name (and a detail, dim); the open one (``current``) marked and
    under the cursor. Enter dismisses with the one chosen, escape with None."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Close")]

    def __init__(self, title: str, paths: List[Path], names: List[str], current: Optional[Path],
                 details: Optional[List[str]] = None) -> None:
        super().__init__()
        self.title_text, self.paths, self.names = title, paths, names
        self.details = details or [""] * len(paths)
        opened = Path(current).resolve() if current is not None else None
        self.open_index = next((i for i, p in enumerate(paths) if p.resolve() == opened), None)

    def compose(self) -> ComposeResult:
        with Vertical(id="path-picker"):
            yield Static(Text(self.title_text, style="bold"))
            yield OptionList(*(Option(self._line(i), id=str(i)) for i in range(len(self.paths))))
            yield Static(Text("enter opens the highlighted one · escape closes", style="dim"))

    def _line(self, i: int) -> Text:
        here = i == self.open_index
        text = Text(literal(self.names[i]), style="bold" if here else "")
        if self.details[i]:
            text.append(f"  {self.details[i]}", style="dim")
        return text.append("  (open)" if here else "", style="bold")

    def on_mount(self) -> None:
        self.query_one(OptionList).highlighted = self.open_index or 0

    def on_option_list_option_selected(self, msg: OptionList.OptionSelected) -> None:
        self.dismiss(self.paths[int(msg.option.id)])


def run_picker(root: Path, current: Optional[Path]) -> PathPicker:
    """The runs of ``root``, newest first."""
    runs = list(reversed(list_runs(Path(root))))
    return PathPicker(f"Runs in {literal(root)} (newest first)", runs, [r.name for r in runs], current,
                      [_detail(r) for r in runs])


def profile_picker(folder: Path, profiles: List[Path], current: Optional[Path]) -> PathPicker:
    """The profiles found under ``folder`` (a folder of several, one of which was picked)."""
    return PathPicker(f"Profiles found under {literal(folder)}", profiles, [str(p) for p in profiles], current)
