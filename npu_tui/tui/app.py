"""The app shell: the first frame comes up at once, the profile loads in a worker behind a progress
bar (escape cancels), then every pane is handed the profile and its report."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional

from rich.text import Text
from textual import work
from textual.actions import SkipAction
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Header, Label, ProgressBar, Static, TabbedContent, TabPane
from textual.worker import get_current_worker

from .cells import literal
from .drill import DrillRequested, DrillScreen
from .grid import PagedTable, cursor_of
from .panes.comm import CommPane
from .panes.findings import FindingsPane
from .panes.operators import OperatorsPane
from .panes.overview import OverviewPane
from .panes.ranks import RanksPane

# (id, tab label, palette area); the number key is the position.
PANES = (
    ("overview", "Overview"),
    ("findings", "Findings"),
    ("operators", "Operators"),
    ("comm", "Comm"),
    ("ranks", "Ranks"),
    ("sql", "SQL"),
    ("collect", "Collect"),
)
TABLE_SORTS = (("total_us", "total"), ("count", "count"), ("mean_us", "mean"), ("max_us", "max"))


class LoadProgress(Message):
    def __init__(self, done: int, total: int, label: str) -> None:
        super().__init__()
        self.done, self.total, self.label = done, total, label


class ProfileLoaded(Message):
    """The tables are in: ``con`` is a cursor of the profile's database for the panes' own queries."""

    def __init__(self, profile, con) -> None:
        super().__init__()
        self.profile, self.con = profile, con


class ReportReady(Message):
    def __init__(self, report: dict) -> None:
        super().__init__()
        self.report = report


class LoadStopped(Message):
    """The load ended without a profile: cancelled, or nothing readable (``reason``)."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class NpuTuiApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "npu-tui"

    BINDINGS = [
        *(Binding(str(i), f"pane('{pid}')", label, show=False) for i, (pid, label) in enumerate(PANES, 1)),
        Binding("question_mark", "help", "Help"),
        Binding("r", "reload", "Reload", show=False),
        Binding("escape", "cancel_load", "Cancel load", show=False),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, path: Path, rules: Optional[Path] = None) -> None:
        super().__init__()
        # Over SSH every animation frame is bytes on the wire; panes switch without sliding.
        self.animation_level = "none"
        self.path = Path(path)
        self.rules = rules
        self.profile = None
        self.con = None  # the panes' connection (a cursor of the profile's database)
        self.report: Optional[dict] = None
        self.loading = False

    # -- shell --------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="loading"):
            yield Label(Text(f"Loading {literal(self.path)}"), id="load-label")
            yield ProgressBar(id="load-bar", show_eta=False)
            yield Label("escape cancels · r reloads · q quits", classes="hint")
        with TabbedContent(id="panes"):
            for i, (pid, label) in enumerate(PANES, 1):
                with TabPane(f"{i} {label}", id=pid):
                    yield self._pane(pid)
        yield Footer()

    def _pane(self, pid: str) -> Widget:
        panes = {"overview": OverviewPane, "findings": FindingsPane, "operators": OperatorsPane,
                 "comm": CommPane, "ranks": RanksPane}
        if pid in panes:
            return panes[pid](id=f"pane-{pid}")
        # SQL console and collection log are mounted into their slot by their own modules.
        return Vertical(id=f"{pid}-slot", classes="slot")

    def on_mount(self) -> None:
        self.query_one("#panes").display = False
        self.sub_title = literal(self.path)
        self.action_reload()

    # -- loading ------------------------------------------------------------------------------

    def action_reload(self) -> None:
        self.loading = True
        self.query_one("#loading").display = True
        self.query_one("#load-bar", ProgressBar).update(total=None, progress=0)
        self.query_one("#load-label", Label).update(Text(f"Loading {literal(self.path)}"))
        self._load(self.path, self.rules)

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def _load(self, path: Path, rules: Optional[Path]) -> None:
        from ..analysis import build_report, install_views, load_rules
        from ..profile import LoadCancelled, ProfileError, load_profile

        worker = get_current_worker()
        try:
            profile = load_profile(
                path,
                progress=lambda d, t, label: self.post_message(LoadProgress(d, t, label)),
                cancelled=lambda: worker.is_cancelled,
            )
            if worker.is_cancelled:
                raise LoadCancelled()
            # Tables first, so the grids fill while the analysis runs on the loader's own connection.
            self.post_message(ProfileLoaded(profile, cursor_of(profile.con)))
            ruleset = load_rules(rules)
            install_views(profile.con, ruleset)
            report = build_report(profile, ruleset)
        except LoadCancelled:
            self.post_message(LoadStopped("Load cancelled."))
            return
        except ProfileError as e:
            self.post_message(LoadStopped(str(e)))
            return
        except Exception as e:  # noqa: BLE001 - a bug must reach the screen, not hang it on "loading"
            self.post_message(LoadStopped(f"Load failed: {type(e).__name__}: {str(e).splitlines()[0]}"))
            raise
        if worker.is_cancelled:
            self.post_message(LoadStopped("Analysis cancelled; r reloads."))
        else:
            self.post_message(ReportReady(report))

    def on_load_progress(self, msg: LoadProgress) -> None:
        self.query_one("#load-bar", ProgressBar).update(total=max(msg.total, 1), progress=msg.done)
        self.query_one("#load-label", Label).update(Text(f"Loading {literal(self.path)}: {literal(msg.label)}"))

    def on_load_stopped(self, msg: LoadStopped) -> None:
        self.loading = False
        self.query_one("#load-label", Label).update(Text(literal(msg.reason)))
        if self.query_one("#panes").display:
            self.notify(literal(msg.reason), severity="warning")

    def on_profile_loaded(self, msg: ProfileLoaded) -> None:
        self.profile, self.con, self.report = msg.profile, msg.con, None
        self.sub_title = (f"{literal(self.path)} · {len(msg.profile.ranks)} rank(s) · "
                          f"{', '.join(msg.profile.formats)}")
        self.query_one("#loading").display = False
        self.query_one("#panes").display = True
        for pid, _ in PANES[:5]:
            self.query_one(f"#pane-{pid}").show_profile(msg.con)
        self._mount_console(msg.con)
        self._focus_pane(self.query_one(TabbedContent).active or "overview")

    def on_report_ready(self, msg: ReportReady) -> None:
        self.loading = False
        self.report = msg.report
        for pid in ("overview", "findings", "comm", "ranks"):
            self.query_one(f"#pane-{pid}").show_report(msg.report)

    def action_cancel_load(self) -> None:
        if not self.loading:
            raise SkipAction()
        self.workers.cancel_group(self, "load")

    # -- panes and drill-down -----------------------------------------------------------------

    def action_pane(self, pid: str) -> None:
        if self.screen is not self.screen_stack[0]:
            return
        self.query_one(TabbedContent).active = pid
        self._focus_pane(pid)

    def _focus_pane(self, pid: str) -> None:
        pane = self.query_one(f"#{pid}", TabPane)
        target = next((w for w in pane.walk_children(Widget) if w.focusable and w.display), None)
        if target is not None:
            target.focus()

    def on_tabbed_content_tab_activated(self, msg: TabbedContent.TabActivated) -> None:
        if msg.pane is not None and msg.pane.id:
            self._focus_pane(msg.pane.id)

    def on_drill_requested(self, msg: DrillRequested) -> None:
        self.push_screen(DrillScreen(msg.crumbs, msg.drill, self.con))

    # -- SQL console --------------------------------------------------------------------------

    def _mount_console(self, con) -> None:
        slot = self.query_one("#sql-slot")
        slot.remove_children()
        try:
            from .console import SqlConsole
        except ImportError:
            slot.mount(Static(Text("The SQL console is not available in this build; "
                                   "`npu-tui sql PATH QUERY` runs SQL headless.", style="dim"),
                              id="sql-text"))
            return
        slot.mount(SqlConsole(cursor_of(con)))

    def on_paged_table_show_sql(self, msg: PagedTable.ShowSql) -> None:
        while self.screen is not self.screen_stack[0]:
            self.pop_screen()  # the console lives on the main screen
        self.query_one(TabbedContent).active = "sql"
        consoles = [w for w in self.query_one("#sql-slot").children if hasattr(w, "load_sql")]
        if consoles:
            consoles[0].load_sql(msg.sql)
            self._focus_pane("sql")
        else:
            self.query_one("#sql-text", Static).update(Text(msg.sql))

    # -- the current table, help and palette --------------------------------------------------

    def current_table(self) -> Optional[PagedTable]:
        if isinstance(self.focused, PagedTable):
            return self.focused
        root = self.screen if self.screen is not self.screen_stack[0] else \
            self.query_one(TabbedContent).active_pane
        if root is None:
            return None
        return next(iter(root.query(PagedTable)), None)

    def _table_action(self, action: str, *args) -> None:
        table = self.current_table()
        if table is None:
            self.notify("No table here.", severity="warning")
            return
        table.focus()
        getattr(table, f"action_{action}")(*args)

    def action_help(self) -> None:
        from .screens.help import HelpScreen

        self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        for i, (pid, label) in enumerate(PANES, 1):
            yield SystemCommand(f"{label}: show", f"Switch to the {label} pane (key {i})",
                                lambda pid=pid: self.action_pane(pid))
        for key, label in TABLE_SORTS:
            yield SystemCommand(f"Operators: sort by {label}", f"Order operator types by {label}",
                                lambda key=key: self._sort_operators(key))
        yield SystemCommand("Operators: filter", "Filter operator types (/)",
                            lambda: self._on_operators("filter"))
        for action, title, helptext in (
            ("filter", "Table: filter", "Filter the current table (/)"),
            ("sort", "Table: sort by the column under the cursor", "Sort; again flips the order (s)"),
            ("export", "Table: export to CSV or Markdown", "Write the current table to a file (e)"),
            ("show_sql", "Table: show SQL in the console", "Open the SQL behind the table (v)"),
            ("copy_value", "Table: copy value", "Copy the cell under the cursor to the clipboard (y)"),
            ("copy_table", "Table: copy table", "Copy the table as TSV to the clipboard (Y)"),
        ):
            yield SystemCommand(title, helptext, lambda action=action: self._table_action(action))
        yield SystemCommand("App: help", "Every key (?)", self.action_help)
        yield SystemCommand("App: reload", "Load the profile again (r)", self.action_reload)
        yield SystemCommand("App: cancel load", "Stop a load in progress (escape)", self.action_cancel_load)
        yield SystemCommand("App: quit", "Quit (q)", self.exit)
        yield from super().get_system_commands(screen)

    def _on_operators(self, action: str, *args) -> None:
        self.action_pane("operators")
        getattr(self.query_one("#pane-operators").query_one(PagedTable), f"action_{action}")(*args)

    def _sort_operators(self, key: str) -> None:
        self.action_pane("operators")
        self.query_one("#pane-operators").query_one(PagedTable).sort_by(key, descending=True)
