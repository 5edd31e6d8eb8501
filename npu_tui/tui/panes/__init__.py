"""The panes, one tab each, and the widget that holds them.

Every pane is built the first time it is shown, so neither the first frame nor the Overview waits
for the others. Attributes go down: ``Panes.show_profile(con)`` hands each pane built so far the
profile's connection as soon as the tables are in, ``show_report(report)`` the report when it is
built, and a pane built later gets both at once."""

from __future__ import annotations

from typing import Dict, Optional

from textual.widget import Widget
from textual.widgets import TabbedContent, TabPane

from .overview import OverviewPane

# (id, tab label); the number key is the position, the tenth's 0 (pane_key).
PANES = (
    ("overview", "Overview"),
    ("findings", "Findings"),
    ("operators", "Operators"),
    ("comm", "Comm"),
    ("ranks", "Ranks"),
    ("timeline", "Timeline"),
    ("sql", "SQL"),
    ("collect", "Collect"),
    ("diff", "Diff"),
    ("memory", "Memory"),
)


def pane_key(position: int) -> str:
    """The digit of the pane at ``position`` (1-based): 1–9, then 0."""
    return str(position % 10)


def _new_pane(pid: str) -> Widget:
    # Imported here: a pane is built when first shown, so the first frame waits for none of these.
    from .collect import CollectLog
    from .comm import CommPane
    from .diff import DiffView
    from .memory import MemoryPane
    from .findings import FindingsPane
    from .operators import OperatorsPane
    from .ranks import RanksPane
    from .sql import SqlPane
    from .timeline import TimelinePane

    kinds = {"findings": FindingsPane, "operators": OperatorsPane, "comm": CommPane, "ranks": RanksPane,
             "timeline": TimelinePane, "sql": SqlPane, "collect": CollectLog, "diff": DiffView,
             "memory": MemoryPane}
    return kinds[pid](id=f"pane-{pid}")


def _hand(widget: Widget, con, report: Optional[dict]) -> None:
    """What the pane takes of the open profile (panes that show none of it take nothing)."""
    if con is not None and hasattr(widget, "show_profile"):
        widget.show_profile(con)
    if report is not None and hasattr(widget, "show_report"):
        widget.show_report(report)


class Panes(TabbedContent):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.built: Dict[str, Widget] = {"overview": OverviewPane(id="pane-overview")}
        for i, (pid, label) in enumerate(PANES, 1):
            # As `with TabPane(...)` inside a compose would add it.
            self.compose_add_child(TabPane(f"{pane_key(i)} {label}", *([self.built[pid]] if pid in self.built else []),
                                           id=pid))
        self.con = None  # the panes' connection (a cursor of the profile's database)
        self.report: Optional[dict] = None

    async def pane(self, pid: str) -> Widget:
        """The pane's widget, built on first use and handed the open profile and its report."""
        widget = self.built.get(pid)
        if widget is None:
            widget = self.built[pid] = _new_pane(pid)
            await self.get_pane(pid).mount(widget)
            _hand(widget, self.con, self.report)
        return widget

    async def show(self, pid: str) -> Widget:
        """Switch to the pane, ready and focused. It is built before the switch: while a mount is
        awaited after it, the old pane's focused widget, hidden, hands the focus on inside its own
        pane, and a focused widget switches back to its tab."""
        await self.pane(pid)
        self.active = pid
        return await self._shown(pid)

    async def _shown(self, pid: str) -> Widget:
        widget = await self.pane(pid)
        if hasattr(widget, "prepare"):
            await widget.prepare()
        if self.display:  # hidden while loading: the app focuses once a profile is in
            self.focus_pane(pid)
        return widget

    async def reveal(self) -> None:
        """The panes shown again with a profile in (after a load): the pane chosen meanwhile,
        while they were hidden, is made ready (the SQL console mounts only on a pane in view)."""
        await self._shown(self.active or "overview")

    def focus_pane(self, pid: Optional[str] = None) -> None:
        """Focus the pane's own choice (``default_focus()``: None while it is not ready, and it is
        focused when it is), else its first focusable widget."""
        pid = pid or self.active or "overview"
        widget = self.built.get(pid)
        if hasattr(widget, "default_focus"):
            target = widget.default_focus()
        else:
            target = next((w for w in self.get_pane(pid).walk_children(Widget) if w.focusable and w.display),
                          None)
        if target is not None:
            target.focus()

    def show_profile(self, con) -> None:
        self.con, self.report = con, None
        for widget in self.built.values():
            _hand(widget, con, None)

    def show_report(self, report: dict) -> None:
        """A new analysis: its report, to every pane built so far (their grids read again with
        the app's)."""
        self.report = report
        for widget in self.built.values():
            _hand(widget, None, report)

    async def on_tabbed_content_tab_activated(self, msg: TabbedContent.TabActivated) -> None:
        if msg.pane is not None and msg.pane.id:
            await self._shown(msg.pane.id)
