"""The Timeline's numbers against the profile's own tables, worked out here in Python: the cells a
redraw draws, what a selected range holds (timeline_range, range_operators), the exposed gaps `n`
jumps to, and the alignment on a collective."""

import shutil
from collections import defaultdict

import pytest

from npu_tui.analysis.timeline import Timeline
from npu_tui.demo import PATH as DEMO
from npu_tui.session import open_session

LANE_NAMES = {"Communication(Not Overlapped)": "exposed", "Free": "free"}


@pytest.fixture(scope="module")
def demo():
    return open_session(DEMO)


@pytest.fixture(scope="module")
def kernels_only(tmp_path_factory):
    """One rank of the demo as a lone kernel_details.csv: no overlap lanes, so exposed comm and
    free time come from the kernels."""
    src = next(DEMO.glob("*/ASCEND_PROFILER_OUTPUT/kernel_details.csv"))
    dst = tmp_path_factory.mktemp("kernels_only")
    shutil.copy(src, dst / "kernel_details.csv")
    return open_session(dst, cache=False)


@pytest.fixture(scope="module")
def cut_trace(tmp_path_factory):
    """The demo with rank 0's trace cut half way beside its whole kernel file: its overlap lanes
    stop at the cut, so the Timeline, as the step account, works them out from the kernels (it
    drew the cut lanes: no exposed comm, no free time past the cut)."""
    dst = shutil.copytree(DEMO, tmp_path_factory.mktemp("cut") / "demo")
    (trace,) = dst.glob("*3096504*/ASCEND_PROFILER_OUTPUT/trace_view.json")
    data = trace.read_bytes()
    trace.write_bytes(data[:len(data) // 2])
    return open_session(dst, cache=False)


def _kernels(s, rank):
    # kernel_categories: the kernels table with each one's category from the rules file
    return s.con.execute("""SELECT stream_id, start_ns, start_ns + dur_ns, category, is_comm, is_compute, is_copy
                            FROM kernel_categories WHERE rank = ? AND dur_ns > 0""", [rank]).fetchall()


def _first_step_start(s, rank):
    # the device span of the first step: its first kernel (the step's kernels, from the table)
    return s.con.execute("SELECT min(start_ns) FROM kernels WHERE rank = ? AND step = (SELECT min(step) FROM "
                         "kernels WHERE rank = ?)", [rank, rank]).fetchone()[0]


def _clip(a, b, lo, hi):
    return max(0, min(b, hi) - max(a, lo))


def _union(intervals):
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _minus(xs, ys):
    """Intervals of xs not covered by ys (both unions)."""
    out = []
    for a, b in xs:
        cur = a
        for c, d in ys:
            if d <= cur or c >= b:
                continue
            if c > cur:
                out.append([cur, c])
            cur = max(cur, d)
        if cur < b:
            out.append([cur, b])
    return out


def test_the_cells_are_the_kernels_of_each_stream_bucketed(demo):
    tl = Timeline(demo.con.cursor())
    assert tl.alignment == "aligned by step start"
    for rank in demo.ranks:
        off = _first_step_start(demo, rank)
        assert tl.offsets[rank] == off
        lanes = {lane.stream_id: lane.no for lane in tl.lanes if lane.rank == rank and lane.kind == "stream"}
        kernels = _kernels(demo, rank)
        lo = min(k[1] for k in kernels) - off
        hi = max(k[2] for k in kernels) - off
        for n in (37, 200):
            w = -(-(hi - lo) // n) // 3 + 1  # a zoom level with spans across bucket edges
            b0 = (lo + (hi - lo) // 4) // w
            cells = tl.cells(b0, n, w)
            for stream, lane_no in lanes.items():
                expect = defaultdict(lambda: defaultdict(int))
                for st, a, b, cat, *_ in kernels:
                    if st != stream:
                        continue
                    for bucket in range(max((a - off) // w, b0), min((b - off - 1) // w, b0 + n - 1) + 1):
                        expect[bucket][cat] += _clip(a - off, b - off, bucket * w, (bucket + 1) * w)
                got = cells.get((rank, lane_no), {})
                shown = {b: c for b, c in got.items() if b0 <= b < b0 + n}
                assert set(shown) == {b for b, cats in expect.items() if sum(cats.values())}
                for bucket, cell in shown.items():
                    assert cell.ns == sum(expect[bucket].values())
                    assert expect[bucket][cell.cat] == max(expect[bucket].values())


def test_a_zoom_level_is_queried_once_and_a_pan_only_for_the_new_columns(demo):
    tl = Timeline(demo.con.cursor())
    lo, hi = tl.extent
    w = -(-(hi - lo) // 100)
    first = tl.cells(lo // w, 100, w)
    fetched = tl.fetched
    inside = tl.cells(lo // w + 10, 80, w)
    assert tl.fetched == fetched  # inside: nothing queried
    assert inside == {key: {b: c for b, c in got.items() if lo // w + 10 <= b < lo // w + 90} for key, got in first.items()}
    tl.cells(lo // w + 25, 100, w)
    assert tl.fetched == fetched + 25  # only the 25 new columns
    tl.cells(lo // w, 100, w // 2)
    assert tl.fetched == fetched + 125  # another zoom level, its own cells


def test_only_the_ranks_asked_for_are_queried_and_each_keeps_its_own_columns(demo):
    # A screen shows a few ranks of many: the others are not bucketed until scrolled to.
    tl, every = Timeline(demo.con.cursor()), Timeline(demo.con.cursor())
    lo, hi = tl.extent
    w = -(-(hi - lo) // 100)
    b0 = lo // w
    want = every.cells(b0, 110, w)  # every rank, every column used below
    assert {r for r, _ in want} == {0, 1}

    def same(cells, rank, first, last):
        for (r, no), got in want.items():
            if r == rank:
                assert {b: c for b, c in cells.get((r, no), {}).items() if first <= b < last} == \
                       {b: c for b, c in got.items() if first <= b < last}

    cells = tl.cells(b0, 100, w, [1])
    assert {r for r, _ in cells} == {1}
    same(cells, 1, b0, b0 + 100)
    fetched = tl.fetched
    # Scrolled to rank 0 and panned: rank 0 all 100 columns, rank 1 only the 10 new ones.
    cells = tl.cells(b0 + 10, 100, w, [0, 1])
    assert tl.fetched == fetched + 100 + 10
    same(cells, 0, b0 + 10, b0 + 110)
    same(cells, 1, b0 + 10, b0 + 110)
    # What a redraw got stays as it was while another, far away, starts the level afresh.
    kept = {key: dict(got) for key, got in cells.items()}
    tl.cells(b0 + 100 * 100, 100, w, [0, 1])
    assert cells == kept


@pytest.mark.parametrize("profile", ["demo", "kernels_only"])
def test_a_range_holds_what_the_kernels_and_lanes_say(profile, request):
    s = request.getfixturevalue(profile)
    tl = Timeline(s.con.cursor())
    rank = s.ranks[0]
    off = tl.offsets[rank]
    kernels = _kernels(s, rank)
    lo, hi = min(k[1] for k in kernels), max(k[2] for k in kernels)
    a, b = lo + (hi - lo) // 5, lo + (hi - lo) // 2  # profile clock
    rows = tl.range_summary(rank, a - off, b - off)
    assert tl.range_args(rank, a - off, b - off) == (rank, a, b)

    per_cat = defaultdict(lambda: [0, 0])
    for _, ka, kb, cat, *_ in kernels:
        if kb > a and ka < b:
            per_cat[cat][0] += 1
            per_cat[cat][1] += _clip(ka, kb, a, b)
    cats = {r["part"]: r for r in rows if r["kind"] == "category"}
    assert set(cats) == set(per_cat)
    total = sum(t for _, t in per_cat.values())
    for cat, (count, ns) in per_cat.items():
        assert cats[cat]["kernels"] == count
        assert cats[cat]["time_us"] == pytest.approx(ns / 1e3)
        assert cats[cat]["share"] == pytest.approx(ns / total)

    lanes = s.con.execute("SELECT lane, start_ns, start_ns + dur_ns FROM overlap_lanes WHERE rank = ? AND dur_ns > 0",
                          [rank]).fetchall()
    if lanes:  # the profiler's lanes
        expect = {name: sum(_clip(la, lb, a, b) for lane, la, lb in lanes if lane == key)
                  for key, name in LANE_NAMES.items()}
    else:  # from the kernels: comm with no compute; nothing running between the first and last busy moment
        comm = _union([[ka, kb] for _, ka, kb, _, is_comm, *_ in kernels if is_comm])
        compute = _union([[ka, kb] for _, ka, kb, _, _, is_compute, _ in kernels if is_compute])
        busy = _union([[ka, kb] for _, ka, kb, _, is_comm, is_compute, is_copy in kernels
                       if is_comm or is_compute or is_copy])
        gaps = [[x[1], y[0]] for x, y in zip(busy, busy[1:])]
        expect = {"exposed": sum(_clip(x, y, a, b) for x, y in _minus(comm, compute)),
                  "free": sum(_clip(x, y, a, b) for x, y in gaps)}
        assert expect["exposed"] > 0
    parts = {r["part"]: r for r in rows if r["kind"] == "lane"}
    assert parts["exposed comm"]["time_us"] == pytest.approx(expect["exposed"] / 1e3)
    assert parts["free"]["time_us"] == pytest.approx(expect["free"] / 1e3)
    assert parts["exposed comm"]["share"] == pytest.approx(expect["exposed"] / (b - a))

    # The range's operators add up to the same kernel time, and the SQL shown runs as it reads.
    ops = s.con.execute("SELECT sum(total_us), sum(count) FROM range_operators(?, ?, ?)", [rank, a, b]).fetchone()
    assert ops[0] == pytest.approx(total / 1e3) and ops[1] == sum(c for c, _ in per_cat.values())
    assert s.con.execute(tl.range_sql(rank, a - off, b - off)).fetchall() == \
        [tuple(r.values()) for r in rows]


def test_n_finds_the_next_stretch_of_exposed_comm(demo):
    tl = Timeline(demo.con.cursor())
    rank = demo.ranks[0]
    off = tl.offsets[rank]
    lanes = _union([[a - off, b - off] for a, b in demo.con.execute(
        "SELECT start_ns, start_ns + dur_ns FROM overlap_lanes WHERE rank = ? AND lane = "
        "'Communication(Not Overlapped)' AND dur_ns > 0", [rank]).fetchall()])
    assert len(lanes) > 3
    t = -10**12
    for a, b in lanes[:4]:
        gap = tl.next_exposed(rank, t)
        assert (gap.start_ns, gap.end_ns) == (a, b)
        t = a
    assert tl.next_exposed(rank, lanes[-1][0]) is None


def test_aligning_on_a_collective_ends_it_at_one_instant_on_every_rank(demo):
    tl = Timeline(demo.con.cursor())
    calls = demo.con.execute("""SELECT rank, start_ns, end_ns, op FROM kernel_stages WHERE is_comm
                                QUALIFY row_number() OVER (PARTITION BY rank, op ORDER BY start_ns) = 3
                                ORDER BY op, rank""").fetchall()
    r0, start0, end0, op = calls[0]
    peers = [c for c in calls if c[3] == op]
    assert len(peers) == len(demo.ranks) == 2
    assert tl.align_on(r0, start0 - tl.offsets[r0], op)
    assert tl.alignment == f"aligned on the end of {op} #3"
    aligned_ends = {r: end - tl.offsets[r] for r, _, end, _ in peers}
    assert len(set(aligned_ends.values())) == 1
    tl.align_by_step()
    assert tl.offsets == {r: _first_step_start(demo, r) for r in demo.ranks}


def test_the_windows_in_view_are_those_that_overlap_it(demo):
    tl = Timeline(demo.con.cursor())
    for rank in demo.ranks:
        spans = tl.windows(rank)
        labels = [s.label for s in spans]
        assert len(labels) == len(set(labels)) and "DiT 1" in labels and "VAE 1" in labels
        lo, hi = spans[0].start_ns, spans[-1].end_ns
        for i in range(40):
            t0 = lo + (hi - lo) * i // 40
            t1 = t0 + (hi - lo) // (7 + i)
            assert tl.windows_in(rank, t0, t1) == [s for s in spans if s.end_ns > t0 and s.start_ns < t1]


def test_n_from_inside_a_stretch_goes_to_the_next_one_on_kernel_lanes(kernels_only):
    """Without the profiler's lanes exposed comm comes in pieces cut at every kernel edge: from
    inside a stretch, `n` skips the rest of it."""
    s = kernels_only
    tl = Timeline(s.con.cursor())
    rank = s.ranks[0]
    off = tl.offsets[rank]
    kernels = _kernels(s, rank)
    comm = _union([[ka, kb] for _, ka, kb, _, is_comm, *_ in kernels if is_comm])
    compute = _union([[ka, kb] for _, ka, kb, _, _, is_compute, _ in kernels if is_compute])
    stretches = [[a - off, b - off] for a, b in _minus(comm, compute)]
    assert len(stretches) > 3
    for (a, b), (na, nb) in zip(stretches, stretches[1:4]):
        mid = (a + b) // 2
        gap = tl.next_exposed(rank, mid)
        assert (gap.start_ns, gap.end_ns) == (na, nb)


@pytest.mark.parametrize("profile", ["kernels_only", "cut_trace"])
def test_the_overlap_lanes_are_the_kernels_worked_out_without_the_profilers(profile, request):
    s = request.getfixturevalue(profile)
    tl = Timeline(s.con.cursor())
    rank = s.ranks[0]
    off = tl.offsets[rank]
    kernels = _kernels(s, rank)
    comm = _union([[ka - off, kb - off] for _, ka, kb, _, is_comm, *_ in kernels if is_comm])
    compute = _union([[ka - off, kb - off] for _, ka, kb, _, _, is_compute, _ in kernels if is_compute])
    lanes = {1: compute, 2: comm, 3: _minus(comm, compute)}
    lo, hi = tl.extent
    n = 150
    w = -(-(hi - lo) // n)
    cells = tl.cells(lo // w, n, w)
    for lane_no, intervals in lanes.items():
        for b in range(lo // w, lo // w + n):
            want = sum(_clip(x, y, b * w, (b + 1) * w) for x, y in intervals)
            got = cells.get((rank, lane_no), {}).get(b)
            assert (got.ns if got else 0) == want, (lane_no, b)


def test_fit_shows_the_whole_run():
    from npu_tui.tui.timeline_draw import Viewport

    for lo, hi, n in ((5, 105, 10), (0, 10**9, 106), (123_456_789, 987_654_321, 67), (3, 4, 80)):
        v = Viewport.fit(lo, hi, n)
        t0, t1 = v.visible
        assert t0 <= lo and hi <= t1, (lo, hi, n)
        assert v.zoomed(3).zoomed(-3).visible[0] <= lo  # back out to the fit: all of it again


def test_the_memory_lane_shows_each_buckets_highest_level(demo):
    """Lane 5: eighths of the rank's peak, each sample held until the next (on the device's clock,
    as memory_series places it); a bucket shows the highest level held in it."""
    import math

    tl = Timeline(demo.con.cursor())
    rank = demo.ranks[0]
    off = tl.offsets[rank]
    samples = demo.con.execute("SELECT at_ns, coalesce(allocated_mb, reserved_mb) FROM memory_series WHERE rank = ? "
                               "ORDER BY at_ns, ts_ns", [rank]).fetchall()
    peak = max(mb for _, mb in samples)
    spans = [(a - off, b - off, max(1, min(8, math.ceil(8 * mb / peak))))
             for (a, mb), (b, _) in zip(samples, samples[1:]) if b > a]
    lo, hi = tl.extent
    n = 120
    w = -(-(hi - lo) // n)
    cells = tl.cells(lo // w, n, w).get((rank, 5), {})
    for bucket in range(lo // w, lo // w + n):
        levels = [lv for a, b, lv in spans if a < (bucket + 1) * w and b > bucket * w]
        got = cells.get(bucket)
        assert (int(got.cat.split()[1]) if got else None) == (max(levels) if levels else None), bucket
