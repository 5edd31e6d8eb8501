"""Timeline: time left to right, one block of lanes per rank (the stage band, the overlap lanes,
one lane per device stream), zoomed, panned and jumped like Insight's and Perfetto's; a range
selected with space is summed in a side panel and opens its operators. The cells are the
analysis' (``analysis.timeline``), queried in workers; this pane holds the view and draws it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Tuple

from rich.text import Text
from textual import work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static
from textual.worker import get_current_worker

from ...analysis.timeline import FIRST_STREAM_LANE, STEP_ALIGNED, Lane, Span, Timeline
from ...text import apart_ranks
from ..cells import fmt_us, literal
from ..drill import DrillRequested
from ..grid import PagedTable, cursor_of
from ..grids import range_operators
from ..plots import color_for, legend
from ..timeline_draw import LABEL, Frame, Viewport, draw, fmt_ms, frame_for


@dataclass
class TimelineReady(Message):
    timeline: Optional[Timeline]
    error: str = ""


@dataclass
class Drawn(Message):
    timeline: Timeline  # the one it was drawn from: a frame of a profile replaced since is dropped
    frame: Frame


@dataclass
class Jumped(Message):
    """A place found in a worker (a step, an exposed gap, a stage window) to bring into view."""

    span: Optional[Span]
    frame: bool  # zoom to fit it, or only bring it into view
    missing: str = ""  # what to say when there is none


@dataclass
class Aligned(Message):
    note: str


@dataclass
class RangeSummed(Message):
    rank: int
    start_ns: int  # aligned
    end_ns: int
    rows: List[dict]


class TimelineView(Widget, can_focus=True):
    """The lanes. Every key changes the Viewport and asks a worker for the cells of the new view;
    until they come, the last frame stays drawn."""

    HELP_TITLE = "Timeline"
    HELP_EXTRA = (("enter", "Open the operators of the selected range"),)
    BINDINGS = [
        Binding("w", "zoom(1)", "Zoom in"),
        Binding("s", "zoom(-1)", "Zoom out"),
        Binding("a", "pan(-1)", "Pan left", show=False),
        Binding("d", "pan(1)", "Pan right", show=False),
        Binding("left", "move(-1)", "Cursor left", show=False),
        Binding("right", "move(1)", "Cursor right", show=False),
        Binding("shift+left", "move(-8)", "Cursor 8 left", show=False),
        Binding("shift+right", "move(8)", "Cursor 8 right", show=False),
        Binding("up", "lane(-1)", "Lane up", show=False),
        Binding("down", "lane(1)", "Lane down", show=False),
        Binding("left_square_bracket", "step(-1)", "Previous step", show=False),
        Binding("right_square_bracket", "step(1)", "Next step", show=False),
        Binding("n", "next_exposed", "Exposed comm"),
        Binding("0", "fit", "Fit"),
        Binding("space", "mark", "Select"),
        Binding("enter", "open_range", "Range operators", show=False),
        Binding("v", "show_sql", "Range SQL", show=False),
        Binding("g", "align", "Align on the collective under the cursor (again: by step start)", show=False),
        Binding("escape", "clear", "Clear the selection", show=False),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.timeline: Optional[Timeline] = None
        self.view: Optional[Viewport] = None
        self.frame: Optional[Frame] = None
        self.range: Optional[Tuple[int, int, int]] = None  # (rank, start, end) aligned ns
        self.pending: Optional[Tuple[int, Optional[str]]] = None  # show_at before the timeline was ready
        self.kept: Optional[Viewport] = None  # the view before a rebuild on the same profile
        self.message = "building the timeline…"
        self.note = ""  # what the last jump found, for the header, until the next key
        self.rows_asked = 0  # the lanes the last redraw asked cells for (a frame may still be coming)
        self.apart: Dict[int, str] = {}  # the ranks not compared with the others, and why: marked ✕

    @property
    def lanes(self) -> List[Lane]:
        return self.timeline.lanes if self.timeline is not None else []

    @property
    def lane(self) -> Optional[Lane]:
        return self.lanes[self.view.lane] if self.view is not None and self.lanes else None

    # -- the profile ------------------------------------------------------------------------

    def clear(self, message: str) -> None:
        self.timeline, self.view, self.frame, self.range, self.pending = None, None, None, None, None
        self.message = message
        self.refresh()

    def load(self, con, apart: Dict[int, str]) -> None:
        """Build the timeline over ``con`` (a cursor of its own, made here on the UI thread) once the
        analysis views are in: on every report, as the trace's second phase changes the stages.
        ``apart``: the report's ranks not compared with the others (text.apart_ranks), marked ✕."""
        pending, self.kept, self.apart = self.pending, self.view, apart
        self.clear("building the timeline…")
        self.pending = pending
        self._build(cursor_of(con))

    @work(thread=True, exclusive=True, group="timeline-build")
    def _build(self, cur) -> None:
        try:
            timeline = Timeline(cur)
        except Exception as exc:  # a view that failed: said on screen, not raised
            timeline, error = None, f"no timeline: {exc}"
        else:
            error = ""
        if not get_current_worker().is_cancelled:
            self.post_message(TimelineReady(timeline, error))

    def on_timeline_ready(self, msg: TimelineReady) -> None:
        msg.stop()
        self.timeline = msg.timeline
        if msg.timeline is None or not msg.timeline.lanes:
            self.timeline = None
            self.message = msg.error or "no kernels to draw"
            self.refresh()
            self.post_message(self.Changed(self))
            return
        self._place()

    def _place(self) -> None:
        """The view over the timeline just built, once the widget has its size: a build done before
        the pane's first layout (a fast one, the pane just mounted) would fit the run to the 8
        columns of no width, and the resize after it keeps a view's scale."""
        if not self.size.width:
            return  # on_resize places it
        lo, hi = self.timeline.extent
        if self.kept is not None:  # rebuilt on a new report (the trace's phase): the view stays
            # (at today's width: a resize while it was rebuilt found no view to resize)
            self.view = replace(self.kept, lo=lo, hi=hi, mark=None).resized(self.columns).with_lane(
                self.kept.lane, len(self.lanes), self.lane_rows)
        else:
            lane = next((i for i, lane in enumerate(self.lanes) if lane.kind == "stream"), 0)
            self.view = Viewport.fit(lo, hi, self.columns, lane=lane).with_lane(lane, len(self.lanes), self.lane_rows)
        self.kept = None
        if self.pending is not None:
            self.show_at(*self.pending)
        self.request()

    @property
    def columns(self) -> int:
        return max(self.size.width - LABEL, 8)

    @property
    def lane_rows(self) -> int:
        return max(self.size.height - 1, 1)  # the ruler takes one

    def on_resize(self) -> None:
        if self.view is None:
            if self.timeline is not None:
                self._place()
            return
        if self.columns != self.view.n:
            self.view = self.view.resized(self.columns)
        elif self.rows_asked == self.lane_rows:
            return
        # taller or shorter: a frame holds the cells of the lanes it had room for
        self.view = self.view.with_lane(self.view.lane, len(self.lanes), self.lane_rows)
        self.request()

    # -- drawing ----------------------------------------------------------------------------

    def request(self) -> None:
        if self.timeline is not None and self.view is not None:
            self.refresh()
            self.rows_asked = self.lane_rows
            self._draw(self.view, self.lane_rows)

    @work(thread=True, exclusive=True, group="timeline-draw")
    def _draw(self, view: Viewport, rows: int) -> None:
        # A held key queues a redraw a repeat: the replaced ones stop before their queries.
        worker = get_current_worker()
        timeline = self.timeline
        frame = frame_for(timeline, view, rows, lambda: worker.is_cancelled)
        if frame is not None and not worker.is_cancelled:
            self.post_message(Drawn(timeline, frame))

    def on_drawn(self, msg: Drawn) -> None:
        msg.stop()
        if msg.timeline is not self.timeline:
            return
        self.frame = msg.frame
        self.refresh()
        self.post_message(self.Changed(self))

    @dataclass
    class Changed(Message):
        """The view or what lies under the cursor changed: the header follows."""

        timeline_view: "TimelineView"

    def render(self) -> Text:
        if self.frame is None or self.view is None:
            return Text(self.message, style="dim")
        # Until the worker brings the new view's cells, the last frame stays as it was drawn.
        return draw(self.frame, self.lanes, self.size.height, self._selected(self.frame.view), self.apart)

    def _selected(self, view: Viewport) -> Optional[Tuple[int, int]]:
        if self.range is None:
            return None
        _, a, b = self.range
        return a // view.w, (b - 1) // view.w

    # -- keys -------------------------------------------------------------------------------

    def _set(self, view: Viewport, note: str = "") -> None:
        self.note = note
        if view != self.view:
            self.view = view
            self.request()

    def _ready(self) -> bool:
        return self.view is not None

    def action_zoom(self, by: int) -> None:
        if self._ready():
            self._set(self.view.zoomed(by))

    def action_pan(self, direction: int) -> None:
        if self._ready():
            self._set(self.view.panned(direction * max(self.view.n // 4, 1)))

    def action_move(self, columns: int) -> None:
        if self._ready():
            self._set(self.view.moved(columns))

    def action_lane(self, by: int) -> None:
        if self._ready():
            self._set(self.view.with_lane(self.view.lane + by, len(self.lanes), self.lane_rows))

    def action_fit(self) -> None:
        """The whole run across today's width (a resize keeps the scale until then)."""
        if self._ready():
            v = self.view
            fitted = Viewport.fit(v.lo, v.hi, v.n, lane=v.lane, top=v.top)
            self._set(replace(fitted, cursor=v.cursor_t // fitted.fit_w))

    def action_step(self, direction: int) -> None:
        if not self._ready():
            return
        v = self.view
        steps = self.timeline.steps(self.lane.rank)
        after = [s for s in steps if s.start_ns // v.w > v.cursor] if direction > 0 else \
            [s for s in steps if s.start_ns // v.w < v.cursor][-1:]
        if not after:
            self.notify(f"No {'next' if direction > 0 else 'previous'} step on rank {self.lane.rank}.")
            return
        self._jump(after[0], True)

    def action_next_exposed(self) -> None:
        if self._ready():
            self._find_exposed(self.lane.rank, self.view.cursor_t + self.view.w)

    @work(thread=True, exclusive=True, group="timeline-find")
    def _find_exposed(self, rank: int, t: int) -> None:
        self.post_message(Jumped(self.timeline.next_exposed(rank, t), False,
                                 f"No exposed comm after the cursor on rank {rank}."))

    def on_jumped(self, msg: Jumped) -> None:
        msg.stop()
        if msg.span is None:
            self.notify(msg.missing)
        else:
            self._jump(msg.span, msg.frame)

    def _jump(self, span: Span, frame: bool) -> None:
        v = self.view.framed(span.start_ns, span.end_ns) if frame else self.view.centred_on(span.start_ns)
        rank_lanes = [i for i, lane in enumerate(self.lanes) if lane.rank == span.rank]
        lane = v.lane if self.lanes[v.lane].rank == span.rank else next(
            (i for i in rank_lanes if self.lanes[i].kind == "stream"), rank_lanes[0])
        note = f"{literal(span.label)}: {fmt_ms(span.end_ns - span.start_ns, v.w)} from {fmt_ms(span.start_ns, v.w)}"
        self._set(v.with_lane(lane, len(self.lanes), self.lane_rows), note)

    def show_at(self, rank: Optional[int], stage: Optional[str]) -> None:
        """Frame the first window of ``stage`` on ``rank`` (the whole run without a stage)."""
        if self.timeline is None or self.view is None:  # built or placed later: it frames it then
            self.pending = (rank, stage)
            return
        self.pending = None
        if not self.timeline.ranks:
            return
        if rank is not None and rank not in self.timeline.ranks:
            # a rank compared by the cluster step trace alone (its files not here) has figures, no events
            self.notify(f"Rank {rank} has no events to draw (no kernels or lanes loaded for it); "
                        f"rank {self.timeline.ranks[0]} is shown.", markup=False)
            rank = None
        rank = rank if rank is not None else self.timeline.ranks[0]
        win = next((w for w in self.timeline.windows(rank) if stage and w.label.rsplit(" ", 1)[0] == stage), None)
        lo, hi = self.timeline.extent
        self._jump(win or Span(rank, "the run", lo, hi), True)

    def action_mark(self) -> None:
        if not self._ready():
            return
        v = self.view
        if v.mark is None:
            self.range = None
            self.post_message(RangeSummed(self.lane.rank, 0, 0, []))  # the side panel closes
            self._set(replace(v, mark=v.cursor_t))
            return
        first, last = v.selection()
        self.range = (self.lane.rank, v.time(first), v.time(last + 1))
        self._set(replace(v, mark=None))
        self._sum(*self.range)

    @work(thread=True, exclusive=True, group="timeline-range")
    def _sum(self, rank: int, a: int, b: int) -> None:
        self.post_message(RangeSummed(rank, a, b, self.timeline.range_summary(rank, a, b)))

    def action_clear(self) -> None:
        if self.view is not None and (self.view.mark is not None or self.range is not None):
            self.range = None
            self.post_message(RangeSummed(0, 0, 0, []))
            self._set(replace(self.view, mark=None))
            self.refresh()
            return
        raise SkipAction()

    def action_open_range(self) -> None:
        if self.range is None:
            self.notify("Select a range first: space, move, space.")
            return
        rank, a, b = self.range
        args = self.timeline.range_args(rank, a, b)
        label = f"{fmt_ms(a, b - a)}–{fmt_ms(b, b - a)}"
        self.post_message(DrillRequested(("Timeline",), range_operators(args, label)))

    def action_show_sql(self) -> None:
        if self.range is None:
            self.notify("Select a range first: space, move, space.")
            return
        self.post_message(PagedTable.ShowSql(self.timeline.range_sql(*self.range)))

    def action_align(self) -> None:
        """On a collective: align the ranks on it; aligned on one already: back to step starts."""
        if not self._ready():
            return
        under = self.frame.under_cursor if self.frame is not None else None
        if self.timeline.alignment != STEP_ALIGNED:
            self._align_on(None, 0, "")
        elif under and under.get("is_comm"):
            self._align_on(self.lane.rank, under["start_ns"], under["op"])
        else:
            self.notify("Put the cursor on a collective of a stream lane to align the ranks on it.")

    @work(thread=True, exclusive=True, group="timeline-align")
    def _align_on(self, rank: Optional[int], start_ns: int, op: str) -> None:
        if rank is None:
            self.timeline.align_by_step()
        elif not self.timeline.align_on(rank, start_ns, op):
            self.post_message(Aligned(f"No other rank has that call of {op}."))
            return
        self.post_message(Aligned(""))

    def on_aligned(self, msg: Aligned) -> None:
        msg.stop()
        if msg.note:
            self.notify(msg.note)
            return
        lo, hi = self.timeline.extent
        self.range = None
        self.post_message(RangeSummed(0, 0, 0, []))
        self.view = replace(self.view, lo=lo, hi=hi, mark=None)
        self.notify(self.timeline.alignment)
        self.request()  # the same view, but every cell moved


def header_text(view: TimelineView) -> Text:
    """Two lines: where the view is (range, column width, cursor, alignment), then what lies under
    the cursor on the selected lane."""
    v, lane, frame = view.view, view.lane, view.frame
    text = Text(no_wrap=True, overflow="ellipsis")
    if v is None or lane is None:
        return text  # (the view says why it has nothing to draw)
    t0, t1 = v.visible
    text.append(f"{fmt_ms(t0, v.w)} – {fmt_ms(t1, v.w)}", style="bold")
    text.append(f" · {fmt_ms(v.w, v.w)}/col · cursor {fmt_ms(v.cursor_t, v.w)} · {view.timeline.alignment}")
    if view.note:
        text.append(f" · {view.note}", style="bold")
    text.append(f"\nr{lane.rank} {literal(lane.label)}: ", style="bold")
    if lane.rank in view.apart:  # (what its lanes show is what of it loaded, or another run's)
        text.append(f"✕ {view.apart[lane.rank]} (h says why) · ")
    under = frame.under_cursor if frame is not None and frame.view == v else None
    if v.mark is not None:
        first, last = v.selection()
        text.append(f"selecting {fmt_ms(v.time(last + 1 - first), v.w)} · space ends it, escape drops it")
    elif under and "window" in under:
        win = under["window"]
        text.append(f"{literal(win.label)} · {fmt_ms(win.end_ns - win.start_ns, v.w)}")
    elif under:
        # the name last: a narrow terminal cuts it, not the figures
        text.append(f"{literal(under['category'])} · {fmt_us(under['dur_ns'] / 1e3)} · {literal(under['stage'])}"
                    f" · at {fmt_ms(under['start_ns'], v.w)} · ")
        text.append(literal(under["name"]), style="bold")
    else:
        cell = frame.cells.get((lane.rank, lane.no), (None,) * v.n)[v.cursor - v.b0] \
            if frame is not None and frame.view == v and 0 <= v.cursor - v.b0 < v.n else None
        if cell and lane.kind == "memory":
            text.append(f"up to {cell.cat.split()[1]}/8 of the rank's peak (the Memory pane, 0, has the figures)",
                        style="dim")
        else:
            text.append(f"{fmt_us(cell.ns / 1e3)} of this column" if cell else "nothing here", style="dim")
    return text


def range_text(msg: RangeSummed) -> Text:
    """The side panel (25 columns): the range, then per category kernels, time and share of the
    range's kernel time, then exposed comm and free time and their share of the range."""
    length = msg.end_ns - msg.start_ns
    text = Text().append(f"rank {msg.rank} · {fmt_ms(length, length)}\n", style="bold")
    text.append(f"{fmt_ms(msg.start_ns, length)} – {fmt_ms(msg.end_ns, length)}\n", style="dim")
    text.append(f"{'':<8}{'count':>5}{'time':>9}{'%':>3}\n", style="dim")  # the rows' 25 columns
    for i, row in enumerate(r for r in msg.rows if r["kind"] == "category"):
        text.append("■ ", style=color_for(row["part"], i)).append(f"{literal(row['part'])[:6]:<6}")
        text.append(f"{row['kernels']:>5}{fmt_us(row['time_us']):>9}{(row['share'] or 0) * 100:3.0f}\n")
    text.append(f"\n{'of the range':<13}{'time':>9}{'%':>3}\n", style="dim")
    for row in (r for r in msg.rows if r["kind"] == "lane"):
        text.append(f"{row['part']:<13}{fmt_us(row['time_us']):>9}{(row['share'] or 0) * 100:3.0f}\n")
    return text.append("\nenter operators · v SQL", style="dim")


class TimelinePane(Vertical):
    summary: Optional[RangeSummed] = None  # the selected range's, while the side panel shows it
    con = None

    def compose(self) -> ComposeResult:
        yield Static(id="timeline-header")
        with Horizontal(id="timeline-body"):
            yield TimelineView(id="timeline-view")
            yield Static(id="timeline-range")
        yield Static(id="timeline-legend")

    def default_focus(self) -> Widget:
        return self.query_one(TimelineView)

    def show_profile(self, con) -> None:
        self.con = con
        self.query_one("#timeline-range").display = False
        self.query_one(TimelineView).clear("waiting for the analysis…")
        self.query_one("#timeline-header", Static).update(Text("waiting for the analysis…", style="dim"))

    def show_report(self, report: dict) -> None:
        # The views are in (and after the trace's phase, rebuilt): the timeline is built on them.
        self.query_one("#timeline-range").display = False
        self.query_one(TimelineView).load(self.con, apart_ranks(report))
        self.query_one("#timeline-header", Static).update(Text("building the timeline…", style="dim"))

    def show_at(self, rank: Optional[int], stage: Optional[str]) -> None:
        self.query_one(TimelineView).show_at(rank, stage)

    def on_timeline_view_changed(self, msg: TimelineView.Changed) -> None:
        view = msg.timeline_view
        self.query_one("#timeline-header", Static).update(header_text(view))
        if view.frame is None:
            self.query_one("#timeline-legend", Static).update("")
            return
        # the categories the stream lanes show (the stage band and overlap lanes are labelled)
        cats = sorted({c.cat for (rank, lane_no), cells in view.frame.cells.items()
                       if lane_no >= FIRST_STREAM_LANE for c in cells if c is not None})
        self.query_one("#timeline-legend", Static).update(legend(cats))

    def on_range_summed(self, msg: RangeSummed) -> None:
        if msg.rows and self.query_one(TimelineView).range != (msg.rank, msg.start_ns, msg.end_ns):
            return  # a sum that came after its range was dropped or replaced
        self.summary = msg if msg.rows else None
        panel = self.query_one("#timeline-range", Static)
        panel.display = bool(msg.rows)
        if msg.rows:
            panel.update(range_text(msg))
