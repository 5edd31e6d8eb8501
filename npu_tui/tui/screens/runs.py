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


def _line(run: Path) -> Text:
    try:
        rec = read_record(run)
    except (OSError, ValueError):
        rec = {}
    work = rec.get("workload", {})
    what = "demo" if work.get("demo") else Path(work.get("workload") or "").name or "command"
    return Text(literal(run.name)).append(f"  {rec.get('status', '?')}  {what}  {rec.get('started', '')}",
                                          style="dim")


class PathPicker(ModalScreen[Optional[Path]]):
    """A list of folders to open, the open one marked and under the cursor; enter dismisses with
    the one chosen, escape with None."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Close")]

    def __init__(self, title: str, paths: List[Path], lines: List[Text], open_index: Optional[int]) -> None:
        super().__init__()
        self.title_text, self.paths, self.lines, self.open_index = title, paths, lines, open_index

    def compose(self) -> ComposeResult:
        with Vertical(id="path-picker"):
            yield Static(Text(self.title_text, style="bold"))
            yield OptionList(*(Option(self._marked(line) if i == self.open_index else line, id=str(i))
                               for i, line in enumerate(self.lines)))
            yield Static(Text("enter opens the highlighted one · escape closes", style="dim"))

    @staticmethod
    def _marked(line: Text) -> Text:
        """The open one: bold, and said."""
        line = line.copy()
        line.stylize("bold", 0, len(line.plain.split("  ", 1)[0]))
        return line.append("  (open)", style="bold")

    def on_mount(self) -> None:
        self.query_one(OptionList).highlighted = self.open_index or 0

    def on_option_list_option_selected(self, msg: OptionList.OptionSelected) -> None:
        self.dismiss(self.paths[int(msg.option.id)])


def _open_index(paths: List[Path], current: Optional[Path]) -> Optional[int]:
    opened = Path(current).resolve() if current is not None else None
    return next((i for i, p in enumerate(paths) if p.resolve() == opened), None)


def run_picker(root: Path, current: Optional[Path]) -> PathPicker:
    """The runs of ``root``, newest first."""
    runs = list(reversed(list_runs(Path(root))))
    here = _open_index(runs, current)
    return PathPicker(f"Runs in {literal(root)} (newest first)", runs, [_line(r) for r in runs], here)


def profile_picker(folder: Path, profiles: List[Path], current: Optional[Path]) -> PathPicker:
    """The profiles found under ``folder`` (a folder of several, one of which was picked)."""
    return PathPicker(f"Profiles found under {literal(folder)}", profiles, [Text(literal(p)) for p in profiles],
                      _open_index(profiles, current))
