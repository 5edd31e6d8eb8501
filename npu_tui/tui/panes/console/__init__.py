"""The SQL console pane: `SqlConsole(con)` with `load_sql(sql)`, and its palette commands."""

from .commands import SqlConsoleCommands
from .console import SqlConsole

__all__ = ["SqlConsole", "SqlConsoleCommands"]
