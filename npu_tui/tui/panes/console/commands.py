"""Command palette entries for the console ("SQL: ..."); the app lists this provider in COMMANDS."""

from __future__ import annotations

from textual.command import DiscoveryHit, Hit, Hits, Provider

from .console import SqlConsole

COMMANDS = (
    ("SQL: run statement", "run_statement", "Run the statement under the cursor (ctrl+r)"),
    ("SQL: run all", "run_all", "Run every statement in the editor (f5)"),
    ("SQL: cancel", "cancel", "Interrupt the running statement (escape)"),
    ("SQL: history", "history", "Search earlier statements (f2)"),
    ("SQL: queries", "queries", "Saved and starter queries (f3)"),
    ("SQL: save query", "save_query", "Save the editor's text under a name (ctrl+s)"),
    ("SQL: export results", "export", "Write the result to CSV, Parquet or JSON (ctrl+o)"),
    ("SQL: copy results", "copy", "Copy the page on screen to the clipboard (y in the grid)"),
    ("SQL: toggle schema browser", "toggle_schema", "Show or hide tables and views (f4)"),
)


class SqlConsoleCommands(Provider):
    """Offers the console's actions while a console is on the screen."""

    def _console(self):
        consoles = self.screen.query(SqlConsole)
        return consoles.first() if consoles else None

    async def discover(self) -> Hits:
        console = self._console()
        if console is None:
            return
        for title, action, help_text in COMMANDS:
            yield DiscoveryHit(title, getattr(console, f"action_{action}"), help=help_text)

    async def search(self, query: str) -> Hits:
        console = self._console()
        if console is None:
            return
        matcher = self.matcher(query)
        for title, action, help_text in COMMANDS:
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), getattr(console, f"action_{action}"),
                          help=help_text)
