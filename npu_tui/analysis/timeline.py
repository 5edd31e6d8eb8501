"""The Timeline's data, UI-free: the lanes of each rank, their spans bucketed into cells by one
grouped query per redraw (``sql/timeline_cells.sql``, cached per zoom level), the steps, stage
windows and exposed-comm gaps to jump between, the kernel under a cursor, and what a selected range
holds (the ``timeline_range`` view, so the numbers can be had again from the console).

Time here is each rank's *aligned* clock, ns: the profile's clock less the rank's offset, which is
its first step's start (``align_by_step``) or puts one collective's end at the same instant on
every rank (``align_on``), undoing clock skew between machines."""

from __future__ import annotations

import bisect
import itertools
import threading
from collections import defaultdict
from dataclasses import dataclass
from importlib import resources
from typing import Dict, List, Optional, Sequence, Tuple

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
# Each rank's first step start, else its first kernel's (two aggregates, not a join of the two).
STEP_START_SQL = """SELECT rank, coalesce(s.t, k.t) FROM (SELECT rank, min(start_ns) AS t FROM kernels GROUP BY rank) k
LEFT JOIN (SELECT rank, min(start_ns) AS t FROM step_windows GROUP BY rank) s USING (rank)"""
# A new alignment shifts each rank's spans by the change of its offset: the order within a rank stays.
SHIFT_SQL = """UPDATE timeline_draw SET start_ns = start_ns - d.delta, end_ns = end_ns - d.delta
FROM (SELECT unnest($ranks::INTEGER[]) AS rank, unnest($deltas::BIGINT[]) AS delta) d
WHERE timeline_draw.rank = d.rank AND d.delta <> 0"""
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
SELECT rank, end_ns, (SELECT n FROM picked) FROM (
    SELECT rank, end_ns, row_number() OVER (PARTITION BY rank ORDER BY start_ns) - 1 AS i
    FROM kernel_stages WHERE op = $op
) WHERE i = (SELECT n FROM picked)"""
# Exposed comm from an aligned time on, its pieces (cut at every kernel and window edge) joined
# into stretches: the first two (the first may hold the time itself).
GAPS_SQL = """WITH p AS (
    SELECT start_ns, end_ns FROM timeline_draw WHERE rank = $rank AND lane_no = $lane AND end_ns > $t
),
m AS (SELECT *, max(end_ns) OVER (ORDER BY start_ns ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before FROM p),
g AS (SELECT *, sum((before IS NULL OR start_ns > before)::INTEGER) OVER (ORDER BY start_ns ROWS UNBOUNDED PRECEDING)
             AS stretch FROM m)
SELECT min(start_ns), max(end_ns) FROM g GROUP BY stretch ORDER BY 1 LIMIT 2"""
RANGE_SQL = "SELECT * FROM timeline_range(?, ?, ?) ORDER BY kind, time_us DESC"

STAGE_LANE, EXPOSED_LANE, MEMORY_LANE, FIRST_STREAM_LANE = 0, 3, 5, 10
STEP_ALIGNED = "aligned by step start"
# A zoom level holding more than this many screens of buckets starts afresh, so panning far at a
# deep zoom does not keep every screen it passed.
CACHE_SCREENS = 16


@dataclass(frozen=True)
class Lane:
    rank: int
    no: int  # 0 stage, 1-4 overlap lanes, 5 memory, 10 + n the streams (timeline_spans)
    label: str
    stream_id: Optional[int] = None

    @property
    def kind(self) -> str:
        if self.no == STAGE_LANE:
            return "stage"
        return "memory" if self.no == MEMORY_LANE else "stream" if self.no >= FIRST_STREAM_LANE else "overlap"


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


class _RankSpans:
    """A rank's stage windows and steps on its aligned clock, built once per alignment (a redraw
    asks for the windows in view every time)."""

    def __init__(self, windows, steps, off: int) -> None:
        seen: Dict[str, int] = {}
        self.windows: List[Span] = []
        for r, stage, a, b in windows:
            seen[stage] = seen.get(stage, 0) + 1
            self.windows.append(Span(r, f"{stage} {seen[stage]}", a - off, b - off))
        self.steps = [Span(r, f"step {s}", a - off, b - off) for r, s, a, b in steps]
        self._starts = [w.start_ns for w in self.windows]
        # the latest end so far: windows before the first whose running end passes t0 all end by t0
        self._reach = list(itertools.accumulate((w.end_ns for w in self.windows), max))

    def windows_in(self, t0: int, t1: int) -> List[Span]:
        first = bisect.bisect_right(self._reach, t0)
        return [w for w in self.windows[first:bisect.bisect_left(self._starts, t1)] if w.end_ns > t0]


@dataclass
class _Level:
    """The cells computed at one zoom level: per rank, the buckets [lo, hi) computed (absolute:
    bucket b is [b·w, (b+1)·w)); the ranks scrolled to at different places have different ones."""

    ranges: Dict[int, Tuple[int, int]]
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
        self._steps: Dict[int, list] = defaultdict(list)
        for row in self.con.execute(STEPS_SQL).fetchall():
            self._steps[row[0]].append(row)
        self._windows: Dict[int, list] = defaultdict(list)
        for row in self.con.execute(WINDOWS_SQL).fetchall():
            self._windows[row[0]].append(row)
        self.offsets: Dict[int, int] = {r: self.step_start.get(r, 0) for r in self.ranks}
        self.con.execute(DRAW_SQL, {"ranks": list(self.offsets), "offsets": list(self.offsets.values())})
        self.con.execute("DROP TABLE timeline_text")
        self.fetched = 0  # buckets queried so far (the cache's test counts them)
        self._aligned(self.offsets, STEP_ALIGNED)

    # -- alignment ----------------------------------------------------------------------------

    def _aligned(self, offsets: Dict[int, int], alignment: str) -> None:
        """Take ``offsets`` (the drawing table already on them): every cache and span follows."""
        self.offsets, self.alignment = offsets, alignment
        self._levels: Dict[int, _Level] = {}
        self.extent: Tuple[int, int] = tuple(v or 0 for v in self.con.execute(EXTENT_SQL).fetchone())
        self._spans = {r: _RankSpans(self._windows[r], self._steps[r], offsets[r]) for r in self.ranks}

    def _shift(self, offsets: Dict[int, int], alignment: str) -> None:
        offsets = {r: offsets.get(r, self.offsets[r]) for r in self.ranks}
        deltas = [offsets[r] - self.offsets[r] for r in self.ranks]
        if any(deltas):
            self.con.execute(SHIFT_SQL, {"ranks": self.ranks, "deltas": deltas})
        self._aligned(offsets, alignment)

    def align_by_step(self) -> None:
        """Each rank's time from its first step's start (its first kernel's without steps)."""
        with self.lock:
            self._shift({r: self.step_start.get(r, 0) for r in self.ranks}, STEP_ALIGNED)

    def align_on(self, rank: int, start_ns: int, op: str) -> bool:
        """Put the end of this call of ``op`` (``start_ns`` on ``rank``, aligned) and of the same
        call (counted from the start) on every other rank at the same instant; False when no other
        rank has it. Ranks without that call keep their offsets."""
        with self.lock:
            rows = self.con.execute(NTH_CALL_SQL, {"rank": rank, "op": op,
                                                   "start": start_ns + self.offsets[rank]}).fetchall()
            ends = {r: end for r, end, _ in rows}
            if len(ends) < 2 or rank not in ends:
                return False
            x = ends[rank] - self.offsets[rank]  # where the picked call ends now: it stays there
            self._shift({r: end - x for r, end in ends.items()}, f"aligned on the end of {op} #{rows[0][2] + 1}")
            return True

    # -- cells --------------------------------------------------------------------------------

    def cells(self, b0: int, n: int, w: int, ranks: Optional[Sequence[int]] = None
              ) -> Dict[Tuple[int, int], Dict[int, Cell]]:
        """The cells of buckets [b0, b0 + n) at bucket width ``w`` ns, per (rank, lane no) of
        ``ranks`` (default: every rank): bucket → Cell, absent where nothing runs. Only buckets
        of a rank not computed at this zoom level before are queried: a screen shows a few ranks
        of 64, and their spans are a few row groups. A copy: another redraw's worker may change
        the cache while this one draws."""
        wanted = set(self.ranks if ranks is None else ranks)
        with self.lock:
            level = self._levels.setdefault(w, _Level({}, {}))
            missing: Dict[Tuple[int, int], List[int]] = defaultdict(list)
            grown = {}
            for r in wanted:
                lo, hi = level.ranges.get(r, (b0, b0))
                if b0 + n < lo or b0 > hi or hi - lo > CACHE_SCREENS * n:
                    for key in [k for k in level.cells if k[0] == r]:
                        del level.cells[key]
                    lo = hi = b0
                    level.ranges[r] = (b0, b0)
                if b0 < lo:
                    missing[b0, lo].append(r)
                if b0 + n > hi:
                    missing[hi, b0 + n].append(r)
                grown[r] = (min(lo, b0), max(hi, b0 + n))
            for (lo, hi), rs in missing.items():
                self._fetch(level, lo, hi, w, rs)
            level.ranges.update(grown)  # only once fetched: a query that failed leaves no hole
            return {key: {b: c for b in range(b0, b0 + n) if (c := got.get(b)) is not None}
                    for key, got in level.cells.items() if key[0] in wanted}

    def _fetch(self, level: _Level, lo: int, hi: int, w: int, ranks: List[int]) -> None:
        # The ranks shown are next to each other: one range of them for the scan to skip the rest.
        rows = self.con.execute(CELLS_SQL, {"t0": lo * w, "w": w, "n": hi - lo,
                                            "r0": min(ranks), "r1": max(ranks)}).fetchall()
        self.fetched += hi - lo
        wanted = set(ranks)
        for rank, lane_no, b, code, ns, spans in rows:
            if rank in wanted:
                level.cells.setdefault((rank, lane_no), {})[lo + b] = Cell(self.cats[code], ns, spans)

    # -- what to jump to and what lies under the cursor ------------------------------------

    def steps(self, rank: int) -> List[Span]:
        return self._spans[rank].steps

    def windows(self, rank: int) -> List[Span]:
        """The stage windows of a rank in time order, each labelled with its stage and its number
        among them."""
        return self._spans[rank].windows

    def windows_in(self, rank: int, t0: int, t1: int) -> List[Span]:
        """The windows of a rank that overlap [t0, t1) (aligned)."""
        return self._spans[rank].windows_in(t0, t1)

    def next_exposed(self, rank: int, t: int) -> Optional[Span]:
        """The next stretch of exposed comm (not overlapped) on ``rank`` starting after ``t``: not
        the rest of one ``t`` is inside."""
        with self.lock:
            rows = self.con.execute(GAPS_SQL, {"rank": rank, "lane": EXPOSED_LANE, "t": t}).fetchall()
        after = [(a, b) for a, b in rows if a > t]
        return Span(rank, "exposed comm", *after[0]) if after else None

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
