"""The SQL pane: the console on the open profile, mounted when the pane is first shown after the
profile opens (the console reads the catalog on the UI thread, 0.1 s on a big profile, which the
Overview need not wait for)."""

from __future__ import annotations

from textual.containers import Vertical


class SqlPane(Vertical):
    DEFAULT_CSS = "SqlPane { height: 1fr; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.con = None
        # A mount is asynchronous: the console is not among the children yet right after it, and
        # this stops a second one.
        self.mounted = False

    @property
    def console(self):
        from .console import SqlConsole

        found = self.query(SqlConsole)
        return found.first() if found else None

    def show_profile(self, con) -> None:
        """A new profile: the console on the old one goes; the new one comes when the pane shows."""
        self.con = con
        self.remove_children()
        self.mounted = False
        if self.is_on_screen:
            self.call_later(self.mount_console)

    def show_report(self, report: dict) -> None:
        console = self.console
        if console is not None:
            console.refresh_schema()  # the analysis views were (re)installed

    async def prepare(self) -> None:
        """The pane is being shown: the console must be there to take the focus."""
        await self.mount_console()

    def default_focus(self):
        """The editor, not the schema list: what one types on arriving is a query (None until the
        console has composed it)."""
        from .console.editor import SqlEditor

        editors = self.query(SqlEditor)
        return editors.first() if editors else None

    async def mount_console(self) -> None:
        if self.mounted or self.con is None:
            return
        from ..grid import cursor_of
        from .console import SqlConsole

        self.mounted = True
        await self.mount(SqlConsole(cursor_of(self.con)))

    async def show_sql(self, sql: str) -> None:
        """Put ``sql`` in the console's editor, focused."""
        await self.mount_console()
        console = self.console
        if console is not None:
            console.load_sql(sql)
