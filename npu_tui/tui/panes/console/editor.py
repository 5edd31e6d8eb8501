"""The console's editor: a TextArea with SQL highlighting where tree-sitter is installed, and the
keys of the completion list while it is open."""

from __future__ import annotations

from textual import events
from textual.message import Message
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option
from rich.text import Text

from ....query import Completion


class CompletionList(OptionList):
    """Candidates for the word before the cursor; the editor keeps the focus and steers it."""

    def show(self, completion: Completion) -> None:
        self.clear_options()
        self.add_options(Option(Text.assemble(c.text, "  ", (c.detail or c.kind, "dim")), id=c.text)
                         for c in completion.candidates)
        self.highlighted = 0
        self.display = True

    def chosen(self) -> str:
        return self.get_option_at_index(self.highlighted or 0).id


class SqlEditor(TextArea):
    """Multi-line SQL input. While the completion list is open, up/down/enter/tab/escape steer it."""

    class CompletionKey(Message):
        """A key for the completion list: up, down, accept or close."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    _KEYS = {"up": "up", "down": "down", "enter": "accept", "tab": "accept", "escape": "close"}

    def __init__(self, **kwargs) -> None:
        super().__init__(show_line_numbers=True, soft_wrap=False, tab_behavior="focus", **kwargs)
        self.completing = False
        if "sql" in self.available_languages:
            self.language = "sql"

    async def _on_key(self, event: events.Key) -> None:
        # Completion opens on its own key (the console's ctrl+space): tab moves the focus, as help
        # says, unless the list is open.
        if not (self.completing and event.key in self._KEYS):
            await super()._on_key(event)
            return
        event.stop()
        event.prevent_default()
        self.post_message(self.CompletionKey(self._KEYS[event.key]))

    @property
    def cursor_offset(self) -> int:
        """The cursor as a character offset into the text."""
        row, col = self.cursor_location
        return sum(len(self.document.get_line(r)) + 1 for r in range(row)) + col
