"""Every key, read from the bindings themselves so the list cannot drift from what the keys do."""

from __future__ import annotations

from typing import Callable, Iterable, List, Tuple

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

# Keys Textual itself provides, which no binding list of ours declares.
BUILTIN = (("ctrl+p", "Command palette: every action as “Area: action”"),
           ("tab / shift+tab", "Move focus"))


Display = Callable[[Binding], str]


def help_sections(display: Display) -> List[Tuple[str, List[Tuple[str, str]]]]:
    """(section, [(key as the footer shows it, what it does)]) for every binding of the app."""
    from ..app import NpuTuiApp
    from ..drill import DrillScreen
    from ..grid import GridView, PagedTable
    from ..panes.findings import FindingsPane

    def _keys(bindings: Iterable) -> List[Tuple[str, str]]:
        return [(display(b), b.description or b.action) for b in bindings if isinstance(b, Binding)]

    return [
        ("Everywhere", _keys(NpuTuiApp.BINDINGS) + list(BUILTIN)),
        ("Tables", _keys(PagedTable.BINDINGS) + _keys(GridView.BINDINGS)),
        ("Findings", [("enter", "Open the operators behind the finding")] + _keys(FindingsPane.BINDINGS)),
        ("Drill-down", _keys(DrillScreen.BINDINGS)),
    ]


def help_text(display: Display) -> Text:
    text = Text()
    for title, keys in help_sections(display):
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
            yield Static(help_text(self.app.get_key_display), id="help-text")
