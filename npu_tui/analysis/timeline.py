"""The Timeline's data, UI-free: the lanes of each rank, their spans bucketed into cells by one
grouped query per redraw (``sql/timeline_cells.sql``, cached per zoom level), the steps, stage
windows and exposed-comm gaps to jump between, the kernel under a cursor, and what a selected range
holds (the ``timeline_range`` view, so the numbers can be had again from the console).

Time here is each rank's *aligned* clock, ns: the profile's clock less the rank's offset, which is
its first step's start (``align_by_step``) or puts one collective's end at the same instant on
every rank (``align_on``), undoing clock skew between machines."""

from __future__ import annotations

import bisect
import threading
import time
from dataclasses import dataclass
from importlib import resources
from typing import Dict, List, Optional, Tuple

from ..text import inline_params


def _sql(name: str) -> str:
    return resources.files(__package__).joinpath("sql", f"{name}.sql").read_text(encoding="utf-8")


DRAW_SQL = _sql("timeline_draw")
CELLS_SQL = _sql("timeline_cells")
TEXT_SQL = "CREATE OR REPLACE TEMP TABLE timeline_text AS SELECT * FROM timeline_spans"
CATS_SQL = ("CREATE OR REPLACE TEMP TABLE timeline_cats AS "
            "SELECT row_number() OVER (ORDER BY cat) AS code, cat FROM (SELECT DISTINCT cat FROM timeline_text)")
LANES_SQL = """SELECT rank, lane_no, any_value(lane), any_value(stream_id) FROM timeline_text
GROUP BY rank, lane_no ORDER BY rank, lane_no"""
STEP_START_SQL = """SELECT r.rank, coalesce(min(w.start_ns), min(k.start_ns)) FROM ranks r
LEFT JOIN step_windows w USING (rank) LEFT JOIN kernels k USING (rank) GROUP BY r.rank"""
EXTENT_SQL = "SELECT min(start_ns), max(end_ns) FROM timeline_draw"
STEPS_SQL = "SELECT rank, step, start_ns, end_ns FROM step_windows WHERE step IS NOT NULL ORDER BY rank, start_ns"
WINDOWS_SQL = "SELECT rank, stage, start_ns, end_ns FROM stage_windows ORDER BY rank, start_ns"
# The kernel of one stream that covers most of [t, t + w) (profile clock).
KERNEL_AT_SQL = """SELECT name, op, category, is_comm, stage, start_ns, dur_ns FROM kernel_stages
WHERE rank = $rank AND stream_id IS NOT DISTINCT FROM $stream AND end_ns > $t AND start_ns < $t + $w
ORDER BY least(end_ns, $t + $w) - greatest(start_ns, $t) DESC, start_ns LIMIT 1"""
# The n-th call of an operator on every rank (n counted on the picked rank), for aligning on it.
NTH_CALL_SQL = """WITH picked AS (
    SELECT count(*) AS n FROM kernel_stages WHERE rank = $rank AND op = $op AND start_ns < $start
)
SELECT rank, end_ns FROM (
    SELECT rank, end_ns, row_number() OVER (PARTITION BY rank ORDER BY start_ns) - 1 AS i
    FROM kernel_stages WHERE op = $op
) WHERE i = (SELECT n FROM picked)"""
# Exposed comm (lane 3) from an aligned time on, adjacent pieces (cut at window edges) to be merged.
GAPS_SQL = """SELECT start_ns, end_ns FROM timeline_draw WHERE rank = $rank AND lane_no = 3 AND end_ns > $t
ORDER BY start_ns LIMIT 200"""
RANGE_SQL = "SELECT * FROM timeline_range(?, ?, ?) ORDER BY kind, time_us DESC"

STAGE_LANE, EXPOSED_LANE, FIRST_STREAM_LANE = 0, 3, 10
# A zoom level's cells beyond this many screens of buckets are dropped, so panning far at a deep
# zoom does not keep every screen it passed.
CACHE_SCREENS = 16


@dataclass(frozen=True)
class Lane:
    rank: int
    no: int  # 0 stage, 1-4 overlap lanes, 10 + n the streams (timeline_spans)
    label: str
    stream_id: Optional[int] = None

    @property
    def kind(self) -> str:
        return "stage" if self.no == STAGE_LANE else "stream" if self.no >= FIRST_STREAM_LANE else "overlap"


@dataclass(frozen=True)
class Cell:
    cat: str  # the colour: the stage, lane or category with the most time in the bucket
    ns: int  # time covered in the bucket (spans of one lane may overlap: can exceed the bucket)
    spans: int


@dataclass(frozen=True)
class Span:
    rank: int
    label: str
    start_ns: int  # aligned
    end_ns: int


@dataclass
class _Level:
    """The cells computed at one zoom level: buckets [lo, hi) (absolute: bucket b is [b·w, (b+1)·w))."""

    lo: int
    hi: int
    cells: Dict[Tuple[int, int], Dict[int, Cell]]


class Timeline:
    """The Timeline of one profile over its own cursor (the drawing table is a temp table of it).
    Calls come from one worker at a time; the lock makes that so."""

    def __init__(self, con) -> None:
        self.con = con
        self.lock = threading.Lock()
        self.con.execute(TEXT_SQL)
        self.con.execute(CATS_SQL)
        self.cats: Dict[int, str] = dict(self.con.execute("SELECT code, cat FROM timeline_cats").fetchall())
        self.lanes: List[Lane] = [Lane(*row) for row in self.con.execute(LANES_SQL).fetchall()]
        self.ranks: List[int] = sorted({lane.rank for lane in self.lanes})
        self.step_start: Dict[int, int] = {r: t for r, t in self.con.execute(STEP_START_SQL).fetchall()
                                           if t is not None}
        self._steps = self.con.execute(STEPS_SQL).fetchall()
        self._windows = self.con.execute(WINDOWS_SQL).fetchall()
        self.offsets: Dict[int, int] = {}
        self.alignment = ""
        self.align_by_step()
        self.con.execute("DROP TABLE timeline_text")
        self.last_query_s = 0.0  # the last cells query's time, for the bench
        self.fetched = 0  # buckets queried so far (the cache's test counts them)

    # -- alignment ----------------------------------------------------------------------------

    def _set_offsets(self, offsets: Dict[int, int], alignment: str) -> None:
        offsets = {r: offsets.get(r, self.step_start.get(r, 0)) for r in self.ranks}
        if offsets == self.offsets and self.alignment:
            self.alignment = alignment
            return
        exists = self.con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'timeline_text'"
                                  ).fetchone()[0]
        if not exists:
            self.con.execute(TEXT_SQL)
        self.con.execute(DRAW_SQL, {"ranks": list(offsets), "offsets": list(offsets.values())})
        if not exists:
            self.con.execute("DROP TABLE timeline_text")
        self.offsets, self.alignment = offsets, alignment
        self._window_spans: Dict = {}
        self._levels: Dict[int, _Level] = {}
        self.extent: Tuple[int, int] = tuple(v or 0 for v in self.con.execute(EXTENT_SQL).fetchone())

    def align_by_step(self) -> None:
        """Each rank's time from its first step's start (its first kernel's without steps)."""
        with self.lock:
            self._set_offsets(self.step_start, "aligned by step start")

    def align_on(self, rank: int, start_ns: int, op: str) -> bool:
        """Put the end of this call of ``op`` (``start_ns`` on ``rank``, aligned) and of the same
        call (counted from the start) on every other rank at the same instant; False when no other
        rank has it."""
        with self.lock:
            raw = start_ns + self.offsets[rank]
            ends = dict(self.con.execute(NTH_CALL_SQL, {"rank": rank, "op": op, "start": raw}).fetchall())
            if len(ends) < 2 or rank not in ends:
                return False
            x = ends[rank] - self.offsets[rank]  # where the picked call ends now: it stays there
            n = self.con.execute("SELECT count(*) FROM kernel_stages WHERE rank = ? AND op = ? AND start_ns < ?",
                                 [rank, op, raw]).fetchone()[0]
            self._set_offsets({r: end - x for r, end in ends.items()}, f"aligned on the end of {op} #{n + 1}")
            return True

    # -- cells --------------------------------------------------------------------------------

    def cells(self, b0: int, n: int, w: int) -> Dict[Tuple[int, int], Dict[int, Cell]]:
        """The cells of buckets [b0, b0 + n) at bucket width ``w`` ns, per (rank, lane no): bucket
        → Cell, absent where nothing runs. Only buckets not computed at this zoom level before are
        queried."""
        with self.lock:
            level = self._levels.get(w)
            if level is None or b0 + n < level.lo or b0 > level.hi or level.hi - level.lo > CACHE_SCREENS * n:
                level = self._levels[w] = _Level(b0, b0, {})
            started = time.perf_counter()
            if b0 < level.lo:
                self._fetch(level, b0, level.lo, w)
                level.lo = b0
            if b0 + n > level.hi:
                self._fetch(level, level.hi, b0 + n, w)
                level.hi = b0 + n
            self.last_query_s = time.perf_counter() - started
            return level.cells

    def _fetch(self, level: _Level, lo: int, hi: int, w: int) -> None:
        rows = self.con.execute(CELLS_SQL, {"t0": lo * w, "w": w, "n": hi - lo}).fetchall()
        self.fetched += hi - lo
        for rank, lane_no, b, code, ns, spans in rows:
            level.cells.setdefault((rank, lane_no), {})[lo + b] = Cell(self.cats[code], ns, spans)

    # -- what to jump to and what lies under the cursor ------------------------------------

    def steps(self, rank: int) -> List[Span]:
        off = self.offsets.get(rank, 0)
        return [Span(r, f"step {s}", a - off, b - off) for r, s, a, b in self._steps if r == rank]

    def windows(self, rank: int) -> List[Span]:
        """The stage windows of a rank in time order, each labelled with its stage and its number
        among them (kept per alignment: a redraw asks for them every time)."""
        if rank not in self._window_spans:
            off, seen, out = self.offsets.get(rank, 0), {}, []
            for r, stage, a, b in self._windows:
                if r == rank:
                    seen[stage] = seen.get(stage, 0) + 1
                    out.append(Span(r, f"{stage} {seen[stage]}", a - off, b - off))
            self._window_spans[rank] = out
        return self._window_spans[rank]

    def windows_in(self, rank: int, t0: int, t1: int) -> List[Span]:
        """The windows of a rank that overlap [t0, t1) (aligned). They are in start order and
        overlap at most their neighbours (a window ends with its last kernel), so a few before the
        last one starting by t0 are all that can still reach into the range."""
        spans = self.windows(rank)
        key = ("starts", rank)
        if key not in self._window_spans:
            self._window_spans[key] = [s.start_ns for s in spans]
        starts = self._window_spans[key]
        first = max(bisect.bisect_right(starts, t0) - 4, 0)
        return [s for s in spans[first:bisect.bisect_left(starts, t1)] if s.end_ns > t0]

    def next_exposed(self, rank: int, t: int) -> Optional[Span]:
        """The next stretch of exposed comm (not overlapped) on ``rank`` starting after ``t``."""
        with self.lock:
            rows = self.con.execute(GAPS_SQL, {"rank": rank, "t": t}).fetchall()
        gap = None
        for a, b in rows:
            if gap is None:
                if a > t:
                    gap = [a, b]
            elif a <= gap[1]:
                gap[1] = max(gap[1], b)
            else:
                break
        return Span(rank, "exposed comm", gap[0], gap[1]) if gap else None

    def kernel_at(self, lane: Lane, t: int, w: int) -> Optional[dict]:
        """The kernel of a stream lane that covers most of the bucket [t, t + w) (aligned), with
        its start on the aligned clock."""
        if lane.kind != "stream":
            return None
        off = self.offsets[lane.rank]
        with self.lock:
            cur = self.con.execute(KERNEL_AT_SQL, {"rank": lane.rank, "stream": lane.stream_id, "t": t + off, "w": w})
            names = [d[0] for d in cur.description]
            row = cur.fetchone()
        if row is None:
            return None
        k = dict(zip(names, row))
        k["start_ns"] -= off
        return k

    # -- a selected range ---------------------------------------------------------------------

    def range_args(self, rank: int, a: int, b: int) -> Tuple[int, int, int]:
        """The arguments of timeline_range and range_operators for [a, b) aligned on ``rank``."""
        off = self.offsets[rank]
        return rank, min(a, b) + off, max(a, b) + off

    def range_sql(self, rank: int, a: int, b: int) -> str:
        return inline_params(RANGE_SQL, list(self.range_args(rank, a, b)))

    def range_summary(self, rank: int, a: int, b: int) -> List[dict]:
        with self.lock:
            cur = self.con.execute(RANGE_SQL, list(self.range_args(rank, a, b)))
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]
