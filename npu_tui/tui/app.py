"""The app shell: the first frame comes up at once, the profile loads in a worker behind a progress
bar (escape cancels), then the panes are handed the profile and its report. A pane other than the
Overview is built when first shown, so neither the first frame nor the Overview waits for them.

Loading is in two phases: kernels and step data first (the panes fill and the report is built on
signature stages), then the deferred trace work (host events, flows, overlap lanes: the stage
markers) behind a small progress line of its own, after which the analysis is rebuilt. Escape
during the second phase keeps the first phase's numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterable, Optional

from rich.text import Text
from textual import work
from textual.actions import SkipAction
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widget import AwaitMount, Widget
from textual.widgets import Footer, Header, Label, ProgressBar, Static, TabbedContent, TabPane
from textual.worker import get_current_worker

from .cells import literal
from .drill import DrillRequested, DrillScreen
from .grid import PagedTable, cursor_of
from .panes.overview import OverviewPane

# (id, tab label, palette area); the number key is the position.
PANES = (
    ("overview", "Overview"),
    ("findings", "Findings"),
    ("operators", "Operators"),
    ("comm", "Comm"),
    ("ranks", "Ranks"),
    ("sql", "SQL"),
    ("collect", "Collect"),
    ("diff", "Diff"),
)
# The panes handed the profile (show_profile) and its report (show_report).
PROFILE_PANES = ("overview", "findings", "operators", "comm", "ranks")
REPORT_PANES = ("overview", "findings", "comm", "ranks")
DEMO_ROOT = Path("prof_out")  # where `c` collects the demo when the open profile is not a run
TABLE_SORTS = (("total_us", "total"), ("count", "count"), ("mean_us", "mean"), ("max_us", "max"))


class LoadProgress(Message):
    def __init__(self, done: int, total: int, label: str) -> None:
        super().__init__()
        self.done, self.total, self.label = done, total, label


class TraceProgress(LoadProgress):
    """Progress of the second phase (the deferred trace work)."""


class ProfileLoaded(Message):
    """The tables are in: ``con`` is a cursor of the profile's database for the panes' own queries;
    ``health`` the load's data health (``profile.health``)."""

    def __init__(self, profile, con, health: list) -> None:
        super().__init__()
        self.profile, self.con, self.health = profile, con, health


class ReportReady(Message):
    """The first phase's report; ``rules`` (loaded) serve the second phase when there is one."""

    def __init__(self, report: dict, profile, rules) -> None:
        super().__init__()
        self.report, self.profile, self.rules = report, profile, rules


class TraceDone(Message):
    """The second phase ended: with a rebuilt ``report``, or None and the ``reason``."""

    def __init__(self, profile, report: Optional[dict], health: list, reason: str = "") -> None:
        super().__init__()
        self.profile, self.report, self.health, self.reason = profile, report, health, reason


class LoadStopped(Message):
    """The load ended without a profile: cancelled, or nothing readable (``reason``)."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class MainScreen(Screen):
    # Nothing is focused until a profile is in (the app focuses its pane then): every focus change
    # rebuilds the footer, and the panes are hidden while loading.
    AUTO_FOCUS = ""


class NpuTuiApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "npu-tui"

    BINDINGS = [
        *(Binding(str(i), f"pane('{pid}')", label, show=False) for i, (pid, label) in enumerate(PANES, 1)),
        Binding("question_mark", "help", "Help"),
        Binding("c", "collect", "Collect"),
        Binding("h", "health", "Data health", show=False),
        Binding("r", "reload", "Reload", show=False),
        Binding("escape", "cancel_load", "Cancel load, trace or collection", show=False),
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
        self.health: list = []
        self.loading = False
        self.trace_loading = False
        self.console_mounted = False  # for the open profile (mounted when the SQL pane is shown)
        self.panes: Dict[str, Widget] = {}  # pane id -> its widget, once built

    # -- shell --------------------------------------------------------------------------------

    def get_default_screen(self) -> Screen:
        return MainScreen(id="_default")

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="loading"):
            yield Label(Text(f"Loading {literal(self.path)}"), id="load-label")
            yield ProgressBar(id="load-bar", show_eta=False)
            yield Label("escape cancels · r reloads · q quits", classes="hint")
        with TabbedContent(id="panes"):
            for i, (pid, label) in enumerate(PANES, 1):
                with TabPane(f"{i} {label}", id=pid):
                    if pid == "overview":
                        yield self.panes.setdefault(pid, OverviewPane(id="pane-overview"))
        with Horizontal(id="trace-load"):
            yield Label(id="trace-label")
            yield ProgressBar(id="trace-bar", show_eta=False)
        yield Footer()

    async def pane(self, pid: str) -> Widget:
        """The pane's widget, built on first use and handed the open profile and its report."""
        widget = self.panes.get(pid)
        if widget is None:
            widget = self.panes[pid] = _new_pane(pid)
            await self.query_one(f"#{pid}", TabPane).mount(widget)
            if self.con is not None and pid in PROFILE_PANES:
                widget.show_profile(self.con)
            if self.report is not None and pid in REPORT_PANES:
                widget.show_report(self.report)
        return widget

    def on_mount(self) -> None:
        self.sub_title = literal(self.path)
        # Loading starts once the first frame is up: the worker's imports (DuckDB, the analysis)
        # would otherwise share the interpreter with drawing it.
        self.call_after_refresh(self.action_reload)

    # -- loading ------------------------------------------------------------------------------

    def action_reload(self) -> None:
        self.workers.cancel_group(self, "trace")
        self._trace_shown(False)
        self.loading = True
        self.query_one("#loading").display = True
        self.query_one("#load-bar", ProgressBar).update(total=None, progress=0)
        self.query_one("#load-label", Label).update(Text(f"Loading {literal(self.path)}"))
        self._load(self.path, self.rules)

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def _load(self, path: Path, rules: Optional[Path]) -> None:
        from ..analysis import build_report, install_views, load_rules
        from ..analysis.views import views_installed
        from ..profile import LoadCancelled, ProfileError, load_profile
        from ..profile.health import health

        worker = get_current_worker()
        try:
            # Phase one: a big trace_view.json waits in profile.pending (see _load_trace).
            profile = load_profile(
                path,
                progress=lambda d, t, label: self.post_message(LoadProgress(d, t, label)),
                cancelled=lambda: worker.is_cancelled,
                cache=True,
                background=True,
            )
            if worker.is_cancelled:
                raise LoadCancelled()
            tables = ProfileLoaded(profile, cursor_of(profile.con), health(profile))
            ruleset = load_rules(rules)
            analysed = views_installed(profile.con, ruleset)  # reopened from the cache
            if not analysed:
                # Tables first, so the grids fill while the analysis runs on the loader's own connection.
                self.post_message(tables)
                install_views(profile.con, ruleset)
            report = build_report(profile, ruleset, windows=False)
            profile.save_cache()  # no-op while trace work is pending or when opened from the cache
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
            return
        if analysed:
            # Tables and report together: the panes are laid out and drawn once, not twice.
            self.post_message(tables)
        self.post_message(ReportReady(report, profile, ruleset))

    @work(thread=True, exclusive=True, group="trace", exit_on_error=False)
    def _load_trace(self, profile, rules) -> None:
        """Phase two: the deferred trace work, then the analysis again (its stored tables are
        snapshots of phase one). Once the trace is in, the analysis runs to the end even if escape
        comes late, so the views and the report shown always agree."""
        from ..analysis import build_report, install_views
        from ..profile import LoadCancelled, ProfileError
        from ..profile.health import health

        worker = get_current_worker()
        try:
            profile.load_pending(
                progress=lambda d, t, label: self.post_message(TraceProgress(d, t, label)),
                cancelled=lambda: worker.is_cancelled,
            )
            self.post_message(TraceProgress(1, 1, "analysing with the stage markers"))
            install_views(profile.con, rules)
            report = build_report(profile, rules, windows=False)
            profile.save_cache()
        except LoadCancelled:
            self.post_message(TraceDone(profile, None, health(profile),
                                        "Trace not loaded: the panes show the kernels and step data "
                                        "(stages from kernel signatures); r loads everything."))
            return
        except ProfileError as e:
            self.post_message(TraceDone(profile, None, health(profile), str(e)))
            return
        except Exception as e:  # noqa: BLE001 - the first phase's panes stay usable
            self.post_message(TraceDone(profile, None, [], f"Trace load failed: {type(e).__name__}: "
                                                           f"{str(e).splitlines()[0]}"))
            raise
        self.post_message(TraceDone(profile, report, health(profile)))

    def on_load_progress(self, msg: LoadProgress) -> None:
        self.query_one("#load-bar", ProgressBar).update(total=max(msg.total, 1), progress=msg.done)
        self.query_one("#load-label", Label).update(Text(f"Loading {literal(self.path)}: {literal(msg.label)}"))

    def on_trace_progress(self, msg: TraceProgress) -> None:
        self.query_one("#trace-bar", ProgressBar).update(total=max(msg.total, 1), progress=msg.done)
        self.query_one("#trace-label", Label).update(
            Text(f"Loading trace: host events, flows ({literal(msg.label)}) · escape stops "))

    # A load replaced by a collected run (loading is then False) must not come back over it.

    def on_load_stopped(self, msg: LoadStopped) -> None:
        if not self.loading:
            return
        self.loading = False
        self.query_one("#load-label", Label).update(Text(literal(msg.reason)))
        if self.query_one("#panes").display:
            self.notify(literal(msg.reason), severity="warning", markup=False)

    def on_profile_loaded(self, msg: ProfileLoaded) -> None:
        if not self.loading:
            return
        self._show_profile(msg.profile, msg.con, msg.health)

    def on_report_ready(self, msg: ReportReady) -> None:
        if not self.loading or msg.profile is not self.profile:
            return
        self.loading = False
        self._show_report(msg.report)
        if msg.profile.pending:
            self._trace_shown(True)
            self.query_one("#trace-bar", ProgressBar).update(total=None, progress=0)
            self.query_one("#trace-label", Label).update(Text("Loading trace: host events, flows · "
                                                              "escape stops "))
            self._load_trace(msg.profile, msg.rules)

    def on_trace_done(self, msg: TraceDone) -> None:
        if msg.profile is not self.profile:
            return  # a reload or a collection replaced it meanwhile
        self._trace_shown(False)
        if msg.health:
            self.health = msg.health
            self.query_one("#pane-overview", OverviewPane).show_health(msg.health)
        if msg.report is None:
            self.notify(literal(msg.reason), severity="warning", markup=False)
            return
        self._show_report(msg.report)

    def _trace_shown(self, shown: bool) -> None:
        self.trace_loading = shown
        self.query_one("#trace-load").display = shown

    def _show_profile(self, profile, con, health: list) -> None:
        self.profile, self.con, self.report, self.health = profile, con, None, health
        self.sub_title = (f"{literal(self.path)} · {len(profile.ranks)} rank(s) · "
                          f"{', '.join(literal(f) for f in profile.formats)}")
        self.query_one("#loading").display = False
        self.query_one("#panes").display = True
        for pid in PROFILE_PANES:
            if pid in self.panes:
                self.panes[pid].show_profile(con)
        self.query_one("#pane-overview", OverviewPane).show_health(health)
        self._reset_console()
        self._focus_pane(self.query_one(TabbedContent).active or "overview")

    def _show_report(self, report: dict) -> None:
        """A report for the open profile; the analysis views were (re)installed before it."""
        self.report = report
        for pid in REPORT_PANES:
            if pid in self.panes:
                self.panes[pid].show_report(report)
        console = self._console()
        if console is not None:
            console.refresh_schema()

    def action_cancel_load(self) -> None:
        if "collect" in self.panes and self.panes["collect"].cancel():
            return
        if self.loading:
            self.workers.cancel_group(self, "load")
        elif self.trace_loading:
            self.workers.cancel_group(self, "trace")
            self.query_one("#trace-label", Label).update(Text("Stopping the trace load… "))
        else:
            raise SkipAction()

    # -- collection and comparison ------------------------------------------------------------

    async def action_collect(self) -> None:
        """Collect again what the open run collected (its record says how), else the demo."""
        from ..analysis import load_rules
        from ..collect import CollectError, CollectSpec, read_record, run_of

        run = run_of(self.path)
        try:
            if run is not None:
                spec, root = CollectSpec.from_record(read_record(run)), run.parent
            else:
                spec, root = CollectSpec(demo=True), DEMO_ROOT
            rules = load_rules(self.rules)
        except (OSError, ValueError, KeyError, TypeError, CollectError) as e:
            self.notify(literal(f"Cannot collect: {e}"), severity="error", markup=False)
            return
        await self.action_pane("collect")
        if not (await self.pane("collect")).start(spec, root, rules):
            self.notify("A collection is already running; escape cancels it.", severity="warning")

    def action_cancel_collect(self) -> None:
        if "collect" not in self.panes or not self.panes["collect"].cancel():
            self.notify("No collection is running.")

    async def on_collect_log_finished(self, msg) -> None:
        r = msg.result
        if r.status != "ok" or msg.error:
            why = msg.error or r.error or r.status
            self.notify(literal(f"Collection {r.status}: {why}. The open profile is unchanged."),
                        severity="warning" if r.status == "cancelled" else "error", markup=False)
            return
        from ..profile.health import health

        # The new run replaces whatever was loading or open.
        self.workers.cancel_group(self, "load")
        self.workers.cancel_group(self, "trace")
        self.loading = False
        self._trace_shown(False)
        self.path = r.run_dir
        self._show_profile(msg.profile, cursor_of(msg.profile.con), health(msg.profile))
        self._show_report(msg.report)
        diff = await self.pane("diff")
        if msg.diff is None:
            diff.clear()
            self.notify(literal(f"Collected {r.run_dir}; no earlier run to compare with."), markup=False)
        else:
            from ..analysis.diff import verdict_line

            diff.show(msg.diff)
            self.notify(literal(f"{verdict_line(msg.diff)} · 8 shows the comparison"), markup=False)

    # -- data health --------------------------------------------------------------------------

    def action_health(self) -> None:
        from .screens.health import HealthScreen

        if self.screen is self.screen_stack[0]:
            self.push_screen(HealthScreen(self.health))

    # -- panes and drill-down -----------------------------------------------------------------

    async def action_pane(self, pid: str) -> None:
        if self.screen is not self.screen_stack[0]:
            return
        self.query_one(TabbedContent).active = pid
        await self.pane(pid)
        self._focus_pane(pid)

    def _focus_pane(self, pid: str) -> None:
        pane = self.query_one(f"#{pid}", TabPane)
        target = next((w for w in pane.walk_children(Widget) if w.focusable and w.display), None)
        if target is not None:
            target.focus()

    async def on_tabbed_content_tab_activated(self, msg: TabbedContent.TabActivated) -> None:
        if msg.pane is not None and msg.pane.id:
            await self.pane(msg.pane.id)
            if msg.pane.id == "sql" and (mounting := self._mount_console()) is not None:
                await mounting
            if self.query_one("#panes").display:  # hidden while loading: _show_profile focuses
                self._focus_pane(msg.pane.id)

    def on_drill_requested(self, msg: DrillRequested) -> None:
        self.push_screen(DrillScreen(msg.crumbs, msg.drill, self.con))

    # -- SQL console --------------------------------------------------------------------------

    def _console(self):
        slot = self.panes.get("sql")
        return next((w for w in slot.children if hasattr(w, "load_sql")), None) if slot else None

    def _reset_console(self) -> None:
        """A new profile: the console on the old one goes; the new one comes when the SQL pane is
        first shown (it reads the catalog on the UI thread, 0.1 s on a big profile, which the
        Overview need not wait for)."""
        if "sql" in self.panes:
            self.panes["sql"].remove_children()
        self.console_mounted = False
        if self.query_one(TabbedContent).active == "sql":
            self._mount_console()

    def _mount_console(self) -> Optional[AwaitMount]:
        """Mounts the console on the open profile into the SQL pane, if built and not done yet."""
        slot = self.panes.get("sql")
        if slot is None or self.console_mounted or self.con is None:
            return None
        self.console_mounted = True
        try:
            from .console import SqlConsole
        except ImportError:
            return slot.mount(Static(Text("The SQL console is not available in this build; "
                                          "`npu-tui sql PATH QUERY` runs SQL headless.", style="dim"),
                                     id="sql-text"))
        return slot.mount(SqlConsole(cursor_of(self.con)))

    async def on_paged_table_show_sql(self, msg: PagedTable.ShowSql) -> None:
        while self.screen is not self.screen_stack[0]:
            self.pop_screen()  # the console lives on the main screen
        self.query_one(TabbedContent).active = "sql"
        await self.pane("sql")
        if (mounting := self._mount_console()) is not None:
            await mounting
        console = self._console()
        if console is not None:
            console.load_sql(msg.sql)
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
        yield SystemCommand("Collect: run again", "Collect the open run's workload again, or the demo (c)",
                            self.action_collect)
        yield SystemCommand("Collect: cancel", "Stop the running collection (escape)", self.action_cancel_collect)
        yield SystemCommand("Data health: show all", "What the load skipped, why, and the fix (h)",
                            self.action_health)
        yield SystemCommand("App: help", "Every key (?)", self.action_help)
        yield SystemCommand("App: reload", "Load the profile again (r)", self.action_reload)
        yield SystemCommand("App: cancel load", "Stop a load or the trace load in progress (escape)",
                            self.action_cancel_load)
        yield SystemCommand("App: quit", "Quit (q)", self.exit)
        yield from super().get_system_commands(screen)

    async def _on_operators(self, action: str, *args) -> None:
        await self.action_pane("operators")
        getattr(self.panes["operators"].query_one(PagedTable), f"action_{action}")(*args)

    async def _sort_operators(self, key: str) -> None:
        await self.action_pane("operators")
        self.panes["operators"].query_one(PagedTable).sort_by(key, descending=True)


def _new_pane(pid: str) -> Widget:
    # Imported here: a pane is built when first shown, so the first frame waits for none of these.
    from .collect import CollectLog, DiffView
    from .panes.comm import CommPane
    from .panes.findings import FindingsPane
    from .panes.operators import OperatorsPane
    from .panes.ranks import RanksPane

    panes = {"findings": FindingsPane, "operators": OperatorsPane, "comm": CommPane, "ranks": RanksPane,
             "collect": CollectLog, "diff": DiffView}
    if pid in panes:
        return panes[pid](id=f"pane-{pid}")
    # The SQL console needs the profile's connection: it is mounted into this slot when shown.
    return Vertical(id=f"{pid}-slot", classes="slot")
