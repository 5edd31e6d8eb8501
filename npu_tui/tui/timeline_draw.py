"""The Timeline's view state and drawing, free of widgets: where the view is (``Viewport``: zoom
level, first bucket, cursor, lane, mark) and the lines it draws from a ``Frame`` of cells the
analysis bucketed. One cell is one bucket of ``w`` ns; its height in eighths of a block is the share
of the bucket covered, at least one eighth when anything ran, so a 2 µs kernel stays visible at any
zoom; its colour is the bucket's dominant stage, lane or category."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Callable, Collection, Dict, List, Optional, Sequence, Tuple

from rich.style import Style
from rich.text import Text

from ..analysis.timeline import Cell, Lane, Span, Timeline
from .cells import literal
from .plots import color_for

LABEL = 14  # the lane-label column: r<rank>, then the lane
EIGHTHS = " ▁▂▃▄▅▆▇█"
MAX_ZOOM = 40  # halvings below the fit: far below a nanosecond a column on any real run
CURSOR_BG, SELECTION_BG = "color(239)", "color(236)"


@dataclass(frozen=True)
class Viewport:
    """What is in view: buckets [b0, b0 + n) of width w = max(1, fit_w >> zoom) ns (aligned time),
    the cursor's bucket, the selected lane (an index into the lanes) and the first lane shown."""

    fit_w: int
    lo: int  # the run's extent, aligned ns
    hi: int
    n: int
    zoom: int = 0
    b0: int = 0
    cursor: int = 0
    lane: int = 0
    top: int = 0
    mark: Optional[int] = None  # a range's first time (aligned ns), while one is being selected

    @classmethod
    def fit(cls, lo: int, hi: int, n: int, **kw) -> "Viewport":
        """The whole run [lo, hi) in n columns. The first column starts at a multiple of the bucket
        width at or before lo, so the width leaves room for that: (n - 1) columns hold the run."""
        n = max(n, 2)
        fit_w = max(1, -(-(hi - lo) // (n - 1)))
        b0 = lo // fit_w
        return cls(fit_w=fit_w, lo=lo, hi=hi, n=n, b0=b0, cursor=b0, **kw)

    @property
    def w(self) -> int:
        return max(1, self.fit_w >> self.zoom)

    def time(self, b: int) -> int:
        return b * self.w

    @property
    def cursor_t(self) -> int:
        return self.time(self.cursor)

    @property
    def visible(self) -> Tuple[int, int]:
        return self.time(self.b0), self.time(self.b0 + self.n)

    def _clamped(self, b0: int) -> int:
        # Half a screen of slack past either end, no more: the run stays in view.
        lo_b, hi_b = self.lo // self.w, -(-self.hi // self.w)
        return max(lo_b - self.n // 2, min(b0, hi_b - self.n // 2))

    def resized(self, n: int) -> "Viewport":
        """Fewer or more columns at the same scale and left edge (a side panel opening must not
        move what is drawn); 0 fits the run to the new width."""
        v = replace(self, n=max(n, 1))
        return v.moved(0)

    def zoomed(self, by: int) -> "Viewport":
        """``by`` halvings of the bucket width (negative: doublings), the cursor's time staying at
        its column."""
        zoom = max(0, min(MAX_ZOOM, self.zoom + by))
        if zoom == self.zoom or self.w == 1 and by > 0:
            return self
        col, t = self.cursor - self.b0, self.cursor_t + self.w // 2
        v = replace(self, zoom=zoom)
        cursor = t // v.w
        if zoom == 0:
            return replace(v, b0=self.lo // v.w, cursor=cursor)
        return replace(v, b0=v._clamped(cursor - col), cursor=cursor)

    def panned(self, columns: int) -> "Viewport":
        b0 = self._clamped(self.b0 + columns)
        return replace(self, b0=b0, cursor=self.cursor + (b0 - self.b0))

    def moved(self, columns: int) -> "Viewport":
        """The cursor moved, within the run; the view follows it past either edge."""
        cursor = max(self.lo // self.w, min(self.cursor + columns, max(self.hi - 1, self.lo) // self.w))
        b0 = self.b0
        if cursor < b0:
            b0 = cursor
        elif cursor >= b0 + self.n:
            b0 = cursor - self.n + 1
        return replace(self, cursor=cursor, b0=b0)

    def framed(self, start: int, end: int) -> "Viewport":
        """The deepest zoom level at which [start, end) fits, centred, the cursor at its start."""
        span = max(end - start, 1)
        zoom = 0
        while zoom < MAX_ZOOM and (self.fit_w >> (zoom + 1)) * self.n >= span * 1.05 and self.fit_w >> (zoom + 1):
            zoom += 1
        v = replace(self, zoom=zoom)
        first, cols = start // v.w, -(-span // v.w)
        b0 = self.lo // v.w if zoom == 0 else v._clamped(first - (v.n - cols) // 2)
        return replace(v, b0=b0, cursor=first)

    def centred_on(self, t: int) -> "Viewport":
        b = t // self.w
        if self.b0 <= b < self.b0 + self.n:
            return replace(self, cursor=b)
        return replace(self, b0=self._clamped(b - self.n // 3), cursor=b)

    def with_lane(self, lane: int, lanes: int, rows: int) -> "Viewport":
        lane = max(0, min(lanes - 1, lane))
        # no blank rows below the last lane while lanes above are out of view (a taller terminal)
        top = min(self.top, lane, max(0, lanes - rows))
        if lane >= top + rows:
            top = lane - rows + 1
        return replace(self, lane=lane, top=max(0, top))

    def selection(self) -> Optional[Tuple[int, int]]:
        """The buckets being selected, [first, last] inclusive, while a mark is set (kept as a
        time, so zooming keeps it)."""
        if self.mark is None:
            return None
        mark = self.mark // self.w
        return min(mark, self.cursor), max(mark, self.cursor)


@dataclass(frozen=True)
class Frame:
    """What one redraw shows: the viewport it was computed for, the cells in view of each lane shown
    (None where nothing runs), the stage windows in view of their ranks, and what lies under the
    cursor."""

    view: Viewport
    cells: Dict[Tuple[int, int], Tuple[Optional[Cell], ...]]
    windows: Dict[int, Tuple[Span, ...]]
    under_cursor: Optional[dict] = None


def frame_for(timeline: Timeline, view: Viewport, rows: int, cancelled: Callable[[], bool] = lambda: False
              ) -> Optional[Frame]:
    """A redraw's data (run in a worker) for the ``rows`` lanes shown from ``view.top``: their cells
    in view, one grouped query for the columns not computed at this zoom level before, their stage
    windows in view and the kernel under the cursor (a lookup of its own). None when
    ``cancelled`` says a newer redraw replaced this one."""
    if cancelled():
        return None
    shown_lanes = timeline.lanes[view.top:view.top + rows]
    ranks = sorted({lane.rank for lane in shown_lanes})
    cells = timeline.cells(view.b0, view.n, view.w, ranks)
    if cancelled():
        return None
    shown = {(lane.rank, lane.no): tuple(got.get(b) for b in range(view.b0, view.b0 + view.n))
             for lane in shown_lanes if (got := cells.get((lane.rank, lane.no))) is not None}
    t0, t1 = view.visible
    windows = {r: tuple(timeline.windows_in(r, t0, t1)) for r in ranks}
    lane = timeline.lanes[view.lane]
    under = None
    if lane.kind == "stream":
        under = timeline.kernel_at(lane, view.cursor_t, view.w)
    elif lane.kind == "stage":
        win = next((s for s in windows.get(lane.rank, ()) if s.start_ns < view.cursor_t + view.w
                    and s.end_ns > view.cursor_t), None)
        under = {"window": win} if win is not None else None
    return Frame(view, shown, windows, under)


def fmt_ms(ns: float, w: int = 1_000_000) -> str:
    """Milliseconds with as many decimals as one column (w ns) needs to be told from the next."""
    decimals = max(0, min(6, math.ceil(-math.log10(max(w, 1) / 1e6)) + 1)) if w < 1e7 else 0
    return f"{ns / 1e6:.{decimals}f} ms"


def lane_label(lane: Lane, first_of_rank: bool, apart: bool = False) -> str:
    """The label column: r<rank> (✕ where the rank is not compared with the others) on its first
    lane, then the lane's name, cut to fit."""
    head = f"{f'r{lane.rank}' + '✕' * apart if first_of_rank else '':<4}"
    return f"{head}{literal(lane.label)[:LABEL - 1 - len(head)]:<{LABEL - 1 - len(head)}} "


def ruler(view: Viewport) -> Text:
    """Times along the top: a tick and its time every 16 columns or so."""
    line = [" "] * view.n
    step = 16 if view.n >= 48 else 12
    for col in range(0, view.n, step):
        label = "╷" + fmt_ms(view.time(view.b0 + col), view.w).replace(" ms", "")
        if col + len(label) <= view.n:
            line[col:col + len(label)] = label
    return Text(f"{'ms':<{LABEL}}" + "".join(line[:view.n]), style="dim", no_wrap=True)


def _glyph(cell: Optional[Cell], w: int) -> str:
    if cell is None or cell.spans == 0:
        return " "
    if cell.cat.startswith("memory "):  # the memory lane: its level, eighths of the rank's peak
        return EIGHTHS[int(cell.cat.split()[1])]
    return EIGHTHS[max(1, min(8, math.ceil(8 * cell.ns / w)))]


def _stage_chars(cells: Sequence[Optional[Cell]], windows: Sequence[Span], view: Viewport) -> List[str]:
    """The stage band's characters: each window's label where it fits, blanks (the colour is the
    cell's) elsewhere."""
    out = [" "] * len(cells)
    written = -2  # the last column a label took: labels keep a column between them
    for win in windows:
        first = max(win.start_ns // view.w - view.b0, written + 2, 0)
        last = min((win.end_ns - 1) // view.w - view.b0, view.n - 1)
        stage = win.label.rsplit(" ", 1)[0]
        if first <= last and (cells[first] is None or cells[first].cat != stage):
            first += 1  # the column it shares with the window before is that one's colour
        # "DiT 3" where it fits, else "DiT", else nothing
        text = next((t for t in (literal(win.label), literal(stage)) if last - first + 1 >= len(t) + 1), "")
        out[first:first + len(text)] = text
        if text:
            written = first + len(text) - 1
    return out


@lru_cache(maxsize=None)
def _style(cat: Optional[str], band: bool, mark: str) -> Style:
    """A cell's style: its colour (as the background on the stage band), and the cursor on the
    selected lane (reverse), the cursor's column on the others, or a selection's shade."""
    style = Style() if cat is None else \
        Style(bgcolor=color_for(cat), color="color(16)") if band else Style(color=color_for(cat))
    extra = {"cursor": Style(reverse=True), "column": Style(bgcolor=CURSOR_BG),
             "shade": Style(bgcolor=SELECTION_BG)}.get(mark)
    return style + extra if extra else style


def draw(frame: Frame, lanes: Sequence[Lane], rows: int, selected: Optional[Tuple[int, int]] = None,
         apart: Collection[int] = ()) -> Text:
    """The ruler and the lanes from ``view.top`` that fit in ``rows`` lines. ``selected``: a
    finished selection's buckets [first, last], drawn shaded like a selection in progress;
    ``apart``: ranks marked ✕ (not compared with the others)."""
    view = frame.view
    shade = view.selection() or selected
    text = ruler(view)
    empty: Tuple[Optional[Cell], ...] = (None,) * view.n
    for i in range(view.top, min(len(lanes), view.top + max(rows - 1, 0))):
        lane = lanes[i]
        cells = frame.cells.get((lane.rank, lane.no), empty)
        first = i == 0 or lanes[i - 1].rank != lane.rank
        text.append("\n")
        text.append(lane_label(lane, first, lane.rank in apart),
                    style="bold reverse" if i == view.lane else "bold" if first else "")
        band = lane.kind == "stage"
        chars = _stage_chars(cells, frame.windows.get(lane.rank, ()), view) if band else \
            [_glyph(c, view.w) for c in cells]
        run, run_key = [], None
        for col, cell in enumerate(cells):
            b = view.b0 + col
            mark = ("cursor" if i == view.lane else "column") if b == view.cursor else \
                "shade" if shade is not None and not band and shade[0] <= b <= shade[1] else ""  # the band keeps its colours
            key = (cell.cat if cell is not None else None, mark)
            if key != run_key:
                if run:
                    text.append("".join(run), _style(run_key[0], band, run_key[1]))
                run, run_key = [], key
            run.append(chars[col])
        if run:
            text.append("".join(run), _style(run_key[0], band, run_key[1]))
    text.no_wrap = True
    return text
