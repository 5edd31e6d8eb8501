"""Data health in full: every file the load skipped or cut short, why, and what would fix it."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..cells import literal
from ..panes.overview import health_line


def health_report(items: list) -> Text:
    text = Text().append("Data health\n", style="bold")
    if not items:
        return text.append("Every file loaded cleanly.\n", style="dim")
    for item in items:  # in health()'s order
        text.append_text(health_line(item)).append("\n")
        text.append(f"    {literal(item.file)}\n", style="dim")
        if item.fix:
            text.append("    fix: ", style="bold").append(literal(item.fix) + "\n")
    return text


class HealthScreen(ModalScreen):
    BINDINGS = [Binding("escape", "dismiss", "Close"), Binding("q", "dismiss", "Close", show=False),
                Binding("h", "dismiss", "Close", show=False)]

    def __init__(self, items: list) -> None:
        super().__init__()
        self.items = items

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="health-dialog"):
            yield Static(health_report(self.items).append("escape, q or h closes this screen", style="dim"),
                         id="health-text")
