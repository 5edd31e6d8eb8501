"""The run picker: the runs of a folder that `npu-tui collect` writes into, newest first."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

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


def _line(run: Path, here: bool) -> Text:
    try:
        rec = read_record(run)
    except (OSError, ValueError):
        rec = {}
    work = rec.get("workload", {})
    what = "demo" if work.get("demo") else Path(work.get("workload") or "").name or "command"
    text = Text(literal(run.name), style="bold" if here else "")
    text.append(f"  {rec.get('status', '?')}  {what}  {rec.get('started', '')}", style="dim")
    return text.append("  (open)" if here else "", style="bold")


class RunPicker(ModalScreen[Optional[Path]]):
    BINDINGS = [Binding("escape", "dismiss(None)", "Close")]

    def __init__(self, root: Path, current: Optional[Path]) -> None:
        super().__init__()
        self.root = Path(root)
        self.runs = list(reversed(list_runs(self.root)))
        opened = Path(current).resolve() if current is not None else None
        # The run that is open: marked, and where the cursor starts.
        self.open_index = next((i for i, r in enumerate(self.runs) if r.resolve() == opened), None)

    def compose(self) -> ComposeResult:
        with Vertical(id="run-picker"):
            yield Static(Text(f"Runs in {literal(self.root)} (newest first)", style="bold"))
            yield OptionList(*(Option(_line(r, i == self.open_index), id=str(i)) for i, r in enumerate(self.runs)))
            yield Static(Text("enter opens the run · escape closes", style="dim"))

    def on_mount(self) -> None:
        self.query_one(OptionList).highlighted = self.open_index or 0

    def on_option_list_option_selected(self, msg: OptionList.OptionSelected) -> None:
        self.dismiss(self.runs[int(msg.option.id)])
