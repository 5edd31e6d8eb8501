"""Every key, read from the bindings themselves so the list cannot drift from what the keys do: the
app's, then those of the focused widget and the widgets around it."""

from __future__ import annotations

from typing import Iterable, List, Tuple

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

# Keys Textual itself provides, which no binding list of ours declares.
BUILTIN = (("ctrl+p", "Command palette: every action as “Area: action”"),
           ("tab / shift+tab", "Move focus"))

Section = Tuple[str, List[Tuple[str, str]]]


def _keys(app: App, bindings: Iterable) -> List[Tuple[str, str]]:
    return [(app.get_key_display(b), b.description or b.action) for b in bindings if isinstance(b, Binding)]


def help_sections(app: App) -> List[Section]:
    """(section, [(key as the footer shows it, what it does)]): the app's keys, then a section for
    each widget around the focus that names one (``HELP_TITLE``), innermost first."""
    sections = {"Everywhere": _keys(app, type(app).BINDINGS) + list(BUILTIN)}
    for node in (app.focused.ancestors_with_self if app.focused is not None else ()):
        title = getattr(node, "HELP_TITLE", "")
        if title:
            keys = list(getattr(node, "HELP_EXTRA", ())) + _keys(app, node.BINDINGS)
            sections.setdefault(title, []).extend(k for k in keys if k not in sections.get(title, []))
    return list(sections.items())


def help_text(sections: List[Section]) -> Text:
    text = Text()
    for title, keys in sections:
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

    def __init__(self, sections: List[Section]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog"):
            yield Static(help_text(self.sections), id="help-text")
