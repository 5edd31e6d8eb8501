"""The command palette (ctrl+p): every action as "Area: action"."""

from __future__ import annotations

from typing import Iterable

from textual import on
from textual.app import App, SystemCommand
from textual.command import CommandPalette
from textual.widgets import Button, Input

from .panes import PANES, pane_key

TABLE_ACTIONS = (
    ("filter", "Table: filter", "Filter the current table (/)"),
    ("sort", "Table: sort by the column under the cursor", "Sort; again flips the order (s)"),
    ("export", "Table: export to CSV or Markdown", "Write the current table to a file (e)"),
    ("show_sql", "Table: show SQL in the console", "Open the SQL behind the table (v)"),
    ("copy_value", "Table: copy value", "Copy the cell under the cursor to the clipboard (y)"),
    ("copy_table", "Table: copy table", "Copy the table as TSV to the clipboard (Y)"),
)
TIMELINE_ACTIONS = (
    ("fit", (), "Timeline: fit the whole run", "Zoom out to the whole run (0)"),
    ("zoom", (1,), "Timeline: zoom in", "Halve the time a column holds, around the cursor (w)"),
    ("zoom", (-1,), "Timeline: zoom out", "Double the time a column holds, around the cursor (s)"),
    ("step", (1,), "Timeline: next step", "Frame the next step of the cursor's rank (])"),
    ("step", (-1,), "Timeline: previous step", "Frame the previous step of the cursor's rank ([)"),
    ("next_exposed", (), "Timeline: next exposed comm", "Jump to the next communication no compute covers (n)"),
    ("mark", (), "Timeline: select a range", "Mark a range's start, then its end (space)"),
    ("align", (), "Timeline: align ranks on the collective under the cursor",
     "Undo clock skew: the same call ends at the same instant on every rank; again: by step start (g)"),
)
OPERATOR_SORTS = (("total_us", "total"), ("count", "count"), ("mean_us", "mean"), ("max_us", "max"))


def console_commands():
    """The SQL console's own entries ("SQL: ..."), loaded when the palette opens: the console
    module imports DuckDB, which the first frame does not wait for."""
    from .panes.console import SqlConsoleCommands

    return SqlConsoleCommands


def app_commands(app: App) -> Iterable[SystemCommand]:
    """The entries of npu-tui's app (``NpuTuiApp``): panes, tables, collection, data health, app."""
    for i, (pid, label) in enumerate(PANES, 1):
        yield SystemCommand(f"{label}: show", f"Switch to the {label} pane (key {pane_key(i)})",
                            lambda pid=pid: app.action_pane(pid))
    for key, label in OPERATOR_SORTS:
        yield SystemCommand(f"Operators: sort by {label}", f"Order operator types by {label}",
                            lambda key=key: app.on_operators("sort_by", key, descending=True))
    yield SystemCommand("Operators: filter", "Filter operator types (/)", lambda: app.on_operators("action_filter"))
    for action, title, helptext in TABLE_ACTIONS:
        yield SystemCommand(title, helptext, lambda action=action: app.table_action(action))
    for action, args, title, helptext in TIMELINE_ACTIONS:
        yield SystemCommand(title, helptext, lambda action=action, args=args: app.timeline_action(action, *args))
    yield SystemCommand("Collect: run again", "Collect the open run's workload again, or the demo, "
                        "after a confirmation (c)", app.action_collect)
    yield SystemCommand("Runs: pick another", "Open another run of this folder of collected runs, or another "
                        "profile of the folder this one was picked from (p)", app.action_pick_run)
    yield SystemCommand("Collect: cancel", "Stop the running collection (escape)", app.action_cancel_collect)
    yield SystemCommand("Find: kernel or operator", "Look a name up across every type and jump to its kernels (ctrl+f)",
                        app.action_find)
    yield SystemCommand("Data health: show all", "What the load skipped, why, and the fix (h)", app.action_health)
    yield SystemCommand("App: help", "Every key (?)", app.action_help)
    yield SystemCommand("App: reload", "Load the profile again (r)", app.action_reload)
    yield SystemCommand("App: cancel load", "Stop a load or the trace load in progress (escape)",
                        app.action_cancel_load)
    yield SystemCommand("App: quit", "Quit (q)", app.exit)


class Palette(CommandPalette):
    """Textual's palette, answering one enter only: a second, pressed before it has closed (a
    double press), dismissed it again (a ScreenStackError that ended the app) and would have run
    the command twice. Each enter selects the highlighted command, and each selection closes the
    palette with it: past the first, nothing."""

    _answered = False

    def dismiss(self, result=None):
        self._answered = True
        return super().dismiss(result)

    def _select_or_command(self, event=None) -> None:  # (as a selection calls it)
        if not self._answered:
            super()._select_or_command(event)

    @on(Input.Submitted)
    @on(Button.Pressed)
    def _answered_already(self, event) -> None:
        if self._answered:  # (before CommandPalette's own handler, which it then skips)
            event.stop()
            event.prevent_default()
