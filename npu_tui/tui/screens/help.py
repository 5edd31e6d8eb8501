"""Every key, read from the bindings themselves so the list cannot drift from what the keys do."""

from __future__ import annotations

from typing import Iterable, List, Tuple

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

# Keys Textual itself provides, which no binding list of ours declares.
BUILTIN = (("ctrl+p", "Command palette: every action as “Area: action”"),
           ("tab / shift+tab", "Move focus"))


def _keys(bindings: Iterable) -> List[Tuple[str, str]]:
    out = []
    for b in bindings:
        if isinstance(b, Binding):
            out.append((b.key_display or b.key, b.description or b.action))
    return out


def help_sections() -> List[Tuple[str, List[Tuple[str, str]]]]:
    from ..app import NpuTuiApp
    from ..drill import DrillScreen
    from ..grid import GridView, PagedTable
    from ..panes.findings import FindingsPane

    return [
        ("Everywhere", _keys(NpuTuiApp.BINDINGS) + list(BUILTIN)),
        ("Tables", _keys(PagedTable.BINDINGS) + _keys(GridView.BINDINGS)),
        ("Findings", [("enter", "Open the operators behind the finding")] + _keys(FindingsPane.BINDINGS)),
        ("Drill-down", _keys(DrillScreen.BINDINGS)),
    ]


def help_text() -> Text:
    text = Text()
    for title, keys in help_sections():
        text.append(f"{title}\n", style="bold")
        for key, desc in keys:
            text.append(f"  {key:<16}", style="bold color(39)")
            text.append(f"{desc}\n")
        text.append("\n")
    text.append("escape, q or ? closes this screen", style="dim")
    return text


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape", "dismiss", "Close"), Binding("q", "dismiss", "Close", show=False),
                Binding("question_mark", "dismiss", "Close", show=False)]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog"):
            yield Static(help_text(), id="help-text")
