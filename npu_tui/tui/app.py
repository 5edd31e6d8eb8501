"""The app shell over a Session: the first frame comes up at once, the profile opens behind it
(``loading``), and what the session gives is handed down to the panes (``panes``). The shell turns
messages into those hand-offs; the work is in the session, the loaders and the panes."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional, Tuple

from textual.actions import SkipAction
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Header

from . import flows
from .cells import literal
from .commands import Palette, app_commands, console_commands
from .drill import DrillRequested, DrillScreen
from .grid import PagedTable, cursor_of
from .loading import Analysed, LoadPanel, LoadStopped, ProfilePicked, SessionLoaded, TraceBar, TraceDone
from .panes import PANES, Panes, pane_key


class MainScreen(Screen):
    # Nothing is focused until a profile is in (the app focuses its pane then): every focus change
    # rebuilds the footer, and the panes are hidden while loading.
    AUTO_FOCUS = ""


class NpuTuiApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "npu-tui"
    COMMANDS = App.COMMANDS | {console_commands}

    BINDINGS = [
        *(Binding(pane_key(i), f"pane('{pid}')", label, show=False) for i, (pid, label) in enumerate(PANES, 1)),
        Binding("question_mark", "help", "Help"),
        Binding("c", "collect", "Collect"),
        Binding("h", "health", "Data health", show=False),
        Binding("r", "reload", "Reload", show=False),
        Binding("p", "pick_run", "Pick run or profile", show=False),
        Binding("ctrl+f", "find", "Find"),
        # A collection is stopped from its own pane (escape there) or the palette only: escape is
        # the everyday way back, and one press too many must not throw away minutes of device work.
        Binding("escape", "cancel_load", "Cancel load or trace", show=False),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, path: Path, rules: Optional[Path] = None, run: Optional[str] = None) -> None:
        super().__init__()
        # Over SSH every animation frame is bytes on the wire; panes switch without sliding.
        self.animation_level = "none"
        self.path = Path(path)  # what the user opened: a profile, or a folder of runs
        self.run_name = run  # in a folder of runs, the one to open (None: the newest)
        self.rules = rules
        self.session = None  # the open profile (npu_tui.session.Session), once its tables are in
        # The folder of several profiles the open one was picked from, and those profiles (p).
        self.found: Optional[Tuple[Path, Tuple[Path, ...]]] = None

    # What the open session holds, for the panes' hand-offs and for tests.
    @property
    def profile(self):
        return self.session.profile if self.session is not None else None

    @property
    def report(self) -> Optional[dict]:
        return self.panes.report

    @property
    def con(self):
        return self.panes.con

    @property
    def loading(self) -> bool:
        return self.query_one(LoadPanel).running

    @property
    def trace_loading(self) -> bool:
        return self.query_one(TraceBar).running

    @property
    def panes(self) -> Panes:
        return self.query_one(Panes)

    def get_default_screen(self) -> Screen:
        return MainScreen(id="_default")

    def compose(self) -> ComposeResult:
        yield Header()
        yield LoadPanel(id="loading")
        yield Panes(id="panes")
        yield TraceBar(id="trace-load")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = literal(self.path)
        # Loading starts once the first frame is up: the worker's imports (DuckDB, the analysis)
        # would otherwise share the interpreter with drawing it.
        self.call_after_refresh(self.action_reload)

    # -- the open profile ---------------------------------------------------------------------

    def action_reload(self) -> None:
        self.query_one(TraceBar).cancel(drop=True)
        self.query_one(LoadPanel).start(self.path, self.rules, self.run_name)

    def on_profile_picked(self, msg: ProfilePicked) -> None:
        self.found = (msg.folder, msg.among)
        self.open_path(msg.path)

    def open_path(self, path: Path, run: Optional[str] = None) -> None:
        """Open another profile (``run``: one run of a folder of runs) in place of this one."""
        self.path, self.run_name = Path(path), run
        self.action_reload()

    async def action_pick_run(self) -> None:
        await flows.pick_run(self)

    def on_session_loaded(self, msg: SessionLoaded) -> None:
        self._show_session(msg.session)

    def on_analysed(self, msg: Analysed) -> None:
        self._title(msg.session)
        self.panes.show_report(msg.session.report)
        self._read_grids_again()
        if msg.session.pending:
            self.query_one(TraceBar).start(msg.session)

    def on_load_stopped(self, msg: LoadStopped) -> None:
        if self.panes.display:
            self.notify(literal(msg.reason), severity="warning", markup=False)

    def on_sql_console_finished(self, msg) -> None:
        if msg.error is not None and msg.error.damaged:
            self._cache_damaged()

    def on_paged_table_cache_damaged(self, msg: PagedTable.CacheDamaged) -> None:
        self._cache_damaged()

    def _cache_damaged(self) -> None:
        """A block of the cache file failed to read under a query: the file goes, so that a reload
        reads the profile's own files again."""
        if self.session is not None and self.session.forget_cache():
            self.notify("This profile's cache file is damaged and was removed: r reloads the profile "
                        "from its files.", severity="error", markup=False)

    def on_trace_done(self, msg: TraceDone) -> None:
        self.query_one("#pane-overview").show_health(msg.session.health)
        if msg.reason:
            self.notify(literal(msg.reason), severity="warning", markup=False)
        else:
            self.panes.show_report(msg.session.report)
        self._read_grids_again()

    def _read_grids_again(self) -> None:
        """The tables or views under every grid changed: the analysis installed its views (a fresh
        load hands its tables over first), the trace came in (the stages now come from its
        markers), or what it had loaded was taken back out. Each grid reads again where it
        stands, drill levels included (one in a pane not shown reads when it is)."""
        for screen in self.screen_stack:
            for grid in screen.query(PagedTable):
                grid.reload()

    @property
    def opened(self) -> Optional[Path]:
        """The profile open now (a run, where ``path`` may be its folder of runs), or None."""
        return self.session.path if self.session is not None else None

    def _show_session(self, session) -> None:
        self.session = session
        self._title(session)
        if session.note:
            self.notify(literal(session.note), markup=False)
        self.panes.display = True
        self.panes.show_profile(cursor_of(session.con))
        self.query_one("#pane-overview").show_health(session.health)
        self.call_later(self.panes.reveal)

    def _title(self, session) -> None:
        ranks = f"{len(session.ranks)} rank(s)"
        if session.stand_ins:  # known once analysed
            ranks = (f"{ranks} + {len(session.stand_ins)}" if session.ranks else
                     f"{len(session.stand_ins)} rank(s)") + " by the cluster step trace"
        # The path last: on a narrow terminal the header cuts it, not the rank count and format.
        self.sub_title = f"{ranks} · {', '.join(literal(f) for f in session.formats)} · {literal(session.path)}"

    def action_cancel_load(self) -> None:
        if not (self.query_one(LoadPanel).cancel() or self.query_one(TraceBar).cancel()):
            raise SkipAction()

    async def to_panes(self) -> bool:
        """Close the drill levels above the panes (the app's keys work at every depth); False under
        a dialog, which keeps its keys."""
        while self.screen is not self.screen_stack[0]:
            if self.screen.is_modal:
                return False
            await self.pop_screen()
        return True

    # -- collection and comparison ------------------------------------------------------------

    async def action_collect(self) -> None:
        await flows.collect(self)

    def action_cancel_collect(self) -> None:
        collect = self.panes.built.get("collect")
        if collect is None or not collect.cancel():
            self.notify("No collection is running.")

    async def on_collect_log_finished(self, msg) -> None:
        await flows.collected(self, msg)

    def replace_profile(self, path: Path, session) -> None:
        """A new run, loaded and analysed elsewhere, replaces whatever was loading or open."""
        self.query_one(LoadPanel).cancel(drop=True)
        self.query_one(TraceBar).cancel(drop=True)
        self.path, self.run_name = path, None
        self._show_session(session)
        self.panes.show_report(session.report)

    # -- panes, drill-down, screens -----------------------------------------------------------

    async def action_pane(self, pid: str) -> None:
        """Digits work at every depth: the drill levels above the panes close first. (A text field
        keeps its digits: it takes the key before any binding.)"""
        if await self.to_panes():
            await self.panes.show(pid)

    async def on_timeline_requested(self, msg) -> None:
        await self.show_timeline(msg.rank, msg.stage)

    async def show_timeline(self, rank: Optional[int] = None, stage: Optional[str] = None) -> None:
        """The Timeline, framing the first window of ``stage`` on ``rank``."""
        if await self.to_panes():
            (await self.panes.show("timeline")).show_at(rank, stage)

    async def timeline_action(self, action: str, *args) -> None:
        if await self.to_panes():
            await self.panes.show("timeline")
            getattr(self.panes.built["timeline"].query_one("TimelineView"), f"action_{action}")(*args)

    async def action_find(self) -> None:
        await flows.find(self)

    def on_drill_requested(self, msg: DrillRequested) -> None:
        self.push_screen(DrillScreen(msg.crumbs, msg.drill, self.con))

    async def on_paged_table_show_sql(self, msg: PagedTable.ShowSql) -> None:
        while self.screen is not self.screen_stack[0]:
            self.pop_screen()  # the console lives on the main screen
        await (await self.panes.show("sql")).show_sql(msg.sql)

    def on_paged_table_export_requested(self, msg: PagedTable.ExportRequested) -> None:
        from .screens.export import ask_export

        ask_export(self, msg.table)

    async def action_health(self) -> None:
        from .screens.health import HealthScreen

        if not self.screen.is_modal:  # over a drill level, which escape comes back to
            self.push_screen(HealthScreen(self.session.health if self.session is not None else []))

    def action_command_palette(self) -> None:
        if self.use_command_palette and not Palette.is_open(self):
            self.push_screen(Palette(id="--command-palette"))

    def action_help(self) -> None:
        from .screens.help import HelpScreen, help_sections

        self.push_screen(HelpScreen(help_sections(self)))

    # -- the palette and the current table ----------------------------------------------------

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from app_commands(self)
        yield from super().get_system_commands(screen)

    def current_table(self) -> Optional[PagedTable]:
        if isinstance(self.focused, PagedTable):
            return self.focused
        root = self.screen if self.screen is not self.screen_stack[0] else self.panes.active_pane
        return next(iter(root.query(PagedTable)), None) if root is not None else None

    def table_action(self, action: str) -> None:
        table = self.current_table()
        if table is None:
            self.notify("No table here.", severity="warning")
            return
        table.focus()
        getattr(table, f"action_{action}")()

    async def on_operators(self, method: str, *args, **kwargs) -> None:
        await self.action_pane("operators")
        getattr(self.panes.built["operators"].query_one(PagedTable), method)(*args, **kwargs)

