"""Stage windows set by hand: they replace detection for their rank (method "override")."""

from __future__ import annotations

from typing import Iterable, Optional, Tuple

import duckdb

from .views import refresh_stages

# (rank, stage, start_ns, end_ns)
Window = Tuple[int, str, int, int]

# Override windows are given relative to the rank's first kernel, in µs (absolute device
# timestamps are 16-digit numbers nobody types).
INSERT_RELATIVE = """
INSERT INTO stage_overrides
SELECT k.rank, $stage, k.t0 + CAST(round($start_us * 1000) AS BIGINT), k.t0 + CAST(round($end_us * 1000) AS BIGINT)
FROM (SELECT rank, min(start_ns) AS t0 FROM kernels GROUP BY rank) k
WHERE $rank IS NULL OR k.rank = $rank
"""


def set_stage_windows(con: duckdb.DuckDBPyConnection, windows: Iterable[Window],
                      ranks: Optional[Iterable[int]] = None) -> None:
    """Replace the override windows of ``ranks`` (default: the ranks in ``windows``)."""
    windows = list(windows)
    for r in set(ranks if ranks is not None else (w[0] for w in windows)):
        con.execute("DELETE FROM stage_overrides WHERE rank = ?", [r])
    if windows:
        con.executemany("INSERT INTO stage_overrides VALUES (?, ?, ?, ?)", windows)
    refresh_stages(con)


# ns are 64-bit integers in the tables: a window's ends, placed after the rank's first kernel
# (ns since 1970), and its length must fit. ±2.3e15 µs (73 years) leaves room for both.
MAX_US = 2**61 / 1e3


def parse_stage_option(text: str) -> Tuple[Optional[int], str, float, float]:
    """`[RANK:]STAGE=START-END` (µs from the rank's first kernel) -> (rank, stage, start, end)."""
    head, sep, span = text.partition("=")
    start, dash, end = span.partition("-")
    rank_text, colon, stage = head.rpartition(":")
    try:
        if not sep or not dash or not stage:
            raise ValueError(text)
        rank = int(rank_text) if colon else None
        lo, hi = float(start), float(end)
    except ValueError:
        raise ValueError(f"--stage {text!r}: expected [RANK:]STAGE=START-END (us from the first kernel)")
    if not all(abs(v) < MAX_US for v in (lo, hi)):
        raise ValueError(f"--stage {text!r}: START and END must be within ±{MAX_US:.1e} us")
    if hi <= lo:
        raise ValueError(f"--stage {text!r}: the window ends before it starts")
    return rank, stage, lo, hi


def add_relative_window(con: duckdb.DuckDBPyConnection, rank: Optional[int], stage: str,
                        start_us: float, end_us: float) -> None:
    """One override window, µs from the rank's first kernel; rank None: every rank."""
    con.execute(INSERT_RELATIVE, {"rank": rank, "stage": stage, "start_us": start_us, "end_us": end_us})
    refresh_stages(con)
