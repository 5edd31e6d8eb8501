"""Half-open integer intervals [start, end): union, difference, clipping, gaps."""

from __future__ import annotations

from typing import Iterable, List, Tuple

Interval = Tuple[int, int]


def union(intervals: Iterable[Interval]) -> List[Interval]:
    out: List[Interval] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def subtract(a: List[Interval], b: List[Interval]) -> List[Interval]:
    """a minus b, both as returned by union()."""
    out: List[Interval] = []
    j = 0
    for s, e in a:
        while j < len(b) and b[j][1] <= s:
            j += 1
        k, cur = j, s
        while k < len(b) and b[k][0] < e:
            if b[k][0] > cur:
                out.append((cur, b[k][0]))
            cur = max(cur, b[k][1])
            k += 1
        if cur < e:
            out.append((cur, e))
    return out


def clip(a: List[Interval], windows: List[Interval]) -> List[Interval]:
    """The parts of a (from union()) inside the windows (disjoint, sorted)."""
    return subtract(a, subtract([(min(a[0][0], windows[0][0]), max(a[-1][1], windows[-1][1]))],
                                windows)) if a and windows else []


def total(a: Iterable[Interval]) -> int:
    return sum(e - s for s, e in a)
