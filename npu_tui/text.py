"""Text for people: profile text shown as written but never able to drive a terminal, the tables of
the text and Markdown outputs, and SQL with its values written in. Stdlib only, so the TUI's first
frame, the reports and the CLI share it without importing the analysis (and DuckDB)."""

from __future__ import annotations

import decimal
import os
import re
import unicodedata
from typing import Any, Dict, List, Optional, Sequence, Tuple


def literal(value: Any) -> str:
    """Profile text as it is, except characters that would drive a terminal or hide text: control
    characters (ESC, BEL, CR, backspace...), zero-width and bidirectional format characters are
    written as escapes (``\\x1b``, ``\\u202e``). Used by the reports and by every TUI pane."""
    text = "" if value is None else str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def path_text(path: Any) -> str:
    """A path as text every output and DuckDB take: bytes of a name that are not UTF-8 (written in
    another locale, as GBK) as ``\\xNN`` escapes, where Python keeps them as lone surrogates."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _escape(c: str) -> str:
    n = ord(c)
    if 0xDC80 <= n <= 0xDCFF:  # a byte of a name that is not UTF-8, as path_text writes it
        return f"\\x{n - 0xDC00:02x}"
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


# Characters Markdown would read as markup (emphasis, links, code, HTML, table cells).
_MD_MARKUP = re.compile(r"([\\`*_\[\]<>|~&])")


def markdown(value: Any) -> str:
    """Profile text for a Markdown document: literal, its markup characters backslash-escaped."""
    return _MD_MARKUP.sub(r"\\\1", literal(value))


def no_findings(report: Dict[str, Any]) -> str:
    """Why a report holds no finding: no rule crossed its threshold, or none could be tested."""
    if not report.get("ranks"):
        if report.get("cluster", {}).get("spread"):  # msprof-analyze's step times of each rank
            return "no threshold crossed by the rules across ranks (the others need each rank's own data)"
        return "no rank's own data to test the rules on"
    if not any(r.get("kernel_count") for r in report["ranks"]):
        return "no kernels were loaded, so no rule could be tested (see the data health)"
    return "no threshold crossed"


def memory_unit(mb: Sequence[Optional[float]]) -> Tuple[float, str]:
    """(MB in one unit, its name) to show these sizes in: GB while one reaches a GB, else MB (a
    CPU run's megabytes read 0.00 GB)."""
    return (1024.0, "GB") if max((m or 0 for m in mb), default=0) >= 1024 else (1.0, "MB")


def width(s: str) -> int:
    """Columns ``s`` takes in a terminal: East Asian wide characters two, combining marks none."""
    if s.isascii():
        return len(s)
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)


def clip(s: str, cells: int, middle: bool = True) -> str:
    """``s`` cut to at most ``cells`` terminal columns. In the middle: an operator's or kernel's
    name says what it is at both ends (``autograd::engine::evaluate_function:
    ConvolutionBackward0``, ``aclnnMatmul_…_MatMulV3``), so the head and the tail both stay. A
    list (input shapes, dtypes) reads from its first item: cut at its end (``middle=False``)."""
    if width(s) <= cells:
        return s
    if cells <= 1:
        return "…"[:cells]
    head, tail = [], []
    room = cells - 1
    i, j = 0, len(s) - 1
    # Take characters from each end in turn, the tail first, while they fit.
    while i <= j:
        take_tail = middle and len(tail) <= len(head)
        c = s[j] if take_tail else s[i]
        if width(c) > room:
            break
        room -= width(c)
        if take_tail:
            tail.append(c)
            j -= 1
        else:
            head.append(c)
            i += 1
    return "".join(head) + "…" + "".join(reversed(tail))


def _numeric(s: str) -> bool:
    return s in ("-", "") or s.replace(",", "").replace(".", "").replace("%", "").lstrip("+-").isdigit()


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], md: bool = False,
          right: Optional[Sequence[bool]] = None) -> List[str]:
    """Rows as lines of an aligned text table, or of a Markdown table: every output that prints a
    table (report, diff, ``npu-tui sql``) goes through here, so profile text in a cell is escaped
    the same way everywhere. ``right`` says which columns align right; by default those whose
    cells all read as numbers."""
    esc = markdown if md else literal
    heads = [esc(h) for h in headers]
    cells = [[esc("" if v is None else v) for v in row] for row in rows]
    if right is None:
        right = [all(_numeric(row[i]) for row in cells) and bool(cells) for i in range(len(heads))]
    if md:
        rule = "|" + "|".join("---:" if r else "---" for r in right) + "|"
        return ["| " + " | ".join(heads) + " |", rule] + ["| " + " | ".join(row) + " |" for row in cells]
    widths = [max([width(h)] + [width(row[i]) for row in cells]) for i, h in enumerate(heads)]

    def line(values: Sequence[str]) -> str:
        pads = (" " * (w - width(v)) for v, w in zip(values, widths))
        return "  ".join(p + v if r else v + p for v, p, r in zip(values, pads, right)).rstrip()

    return [line(heads), line(["-" * w for w in widths])] + [line(row) for row in cells]


# Findings' metrics that count something (the DiT forwards of a pipeline call, which a step is only
# where prof.step() runs once a call); every other metric is a ratio (a share, a spread).
COUNT_METRICS = {"forwards": "per call"}


def metric_value(metric: str, value: Any) -> str:
    """A finding's value or threshold as people read it: a percentage, or a count."""
    if not isinstance(value, (int, float)):
        return literal(value)
    if metric in COUNT_METRICS:
        return f"{value:g} {COUNT_METRICS[metric]}"
    return f"{value * 100:.1f}%"


def finding_where(f: Dict[str, Any]) -> str:
    """Where a finding fired: "DiT, ranks 0, 1, worst 1", or "rank 1" for one across ranks (no
    stage). ``ranks`` lists the most affected first, its first the worst."""
    ranks = f.get("ranks") or [f["rank"]]
    where = f"rank {ranks[0]}" if len(ranks) == 1 else \
        "ranks " + ", ".join(str(r) for r in sorted(ranks)) + f", worst {ranks[0]}"
    return f"{f['stage']}, {where}" if f.get("stage") else where


# A rank whose profile numbers no steps (no schedule, no prof.step(); msprof-analyze's step-less
# rows): its "step" is the whole profile, start-up and all, not one step of the loop.
UNMARKED = "whole profile, no steps"


def steps_unmarked(report: Dict[str, Any], rank: Optional[int] = None) -> bool:
    """Whether ``rank``'s profile numbers no steps (rank_summary.per, as findings.per); without a
    rank, whether no rank's with steps does (the report's tables are then of the whole profile)."""
    ranks = [r for r in report.get("ranks", []) if (rank is None or r["rank"] == rank) and r.get("per")]
    return bool(ranks) and all(r["per"] == "profile" for r in ranks)


def per_what(report: Dict[str, Any]) -> str:
    """What the report's per-step figures are per: "per step", or the whole profile where no rank
    numbers its steps."""
    return UNMARKED if steps_unmarked(report) else "per step"


def rank_list(ranks: Sequence[int], noun: str = "rank") -> str:
    """``rank 3`` or ``ranks 2–7, 9``: runs of consecutive ranks (or other ``noun``) as ranges."""
    runs: List[List[int]] = []
    for r in ranks:
        if runs and r == runs[-1][-1] + 1:
            runs[-1].append(r)
        else:
            runs.append([r])
    text = ", ".join(f"{run[0]}–{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)) for run in runs)
    return f"{noun}{'' if len(ranks) == 1 else 's'} {text}"


def waited_for_text(f: Dict[str, Any]) -> str:
    """Who waits for the finding's waited-for rank: measured from communication.json's waits, or
    inferred (least exposed comm) without them."""
    if f.get("cause") == "least_exposed":
        return (f"the other ranks likely wait for rank {f['waited_for']} (its exposed comm is the least; "
                "no wait is measured in this profile)")
    return f"the other ranks wait for rank {f['waited_for']}"


NOT_WHOLE = "not loaded whole"  # why a rank a file of which failed is not compared (health.ranks_apart)


def apart_line(per_rank: Sequence[Dict[str, Any]]) -> str:
    """What a finding of ranks not compared with the others alone rests on, said once for it."""
    why = sorted({r["apart"] for r in per_rank})
    line = (f"Only on {rank_list(sorted(r['rank'] for r in per_rank))} ({', '.join(why)}), not compared with "
            "the other ranks")
    # (a file cut: what the rank lost is not known; another run's or other steps' are whole)
    rest = f": it rests on what of {'that rank' if len(per_rank) == 1 else 'those ranks'} loaded."
    return line + (rest if NOT_WHOLE in why else ".")


# The exposed comm's parts (step_account's comm split) as every screen and the report name them:
# its wait is the wait less its synchronization, where communication.json's wait (the Comm pane's,
# the report's comm ops) holds it.
EXPOSED_PARTS = {"synchronization": "sync", "wait": "wait less sync"}


def exposed_parts(split: Dict[str, float]) -> List[Tuple[str, float]]:
    """An exposed split (part -> µs) as (label, µs), the largest first."""
    return [(EXPOSED_PARTS.get(d, d), us) for d, us in sorted(split.items(), key=lambda kv: -kv[1])]


def apart_key(unmarked: str = "") -> str:
    """What ✕ beside a rank means in a pane, with the ranks it could not mark (``ranks_why``)."""
    return f"✕ not compared with the other ranks{': ' + unmarked if unmarked else ''} (h says why)"


def apart_ranks(report: Dict[str, Any]) -> Dict[int, str]:
    """The ranks a report's comparisons across ranks leave out, and why (cluster.ranks[].apart)."""
    return {r["rank"]: r["apart"] for r in report.get("cluster", {}).get("ranks", []) if r.get("apart")}


def apart_mark(apart: Dict[int, str], rank: Optional[int]) -> str:
    """`` ✕ why`` after a rank's figures where the comparisons across ranks leave it out (the
    report's ranks_apart), else nothing."""
    return f" ✕ {apart[rank]}" if rank in apart else ""


def ranks_why(apart: Dict[int, str], ranks: Optional[Sequence[int]] = None) -> str:
    """The ranks of ``apart`` (rank -> why not compared; only those in ``ranks`` where given), each
    with its reason: ``rank 1 (not loaded whole), rank 3 (another run)``."""
    return ", ".join(f"rank {r} ({apart[r]})" for r in sorted(apart) if ranks is None or r in ranks)


def per_step(f: Dict[str, Any], short: bool = False) -> str:
    """What a finding's times are per: a step, or where its rank's profile marks no steps, the
    whole profile (findings.per)."""
    if f.get("per") == "profile":
        return "/profile" if short else "over the whole profile (no steps marked)"
    return "/step" if short else "per step"


def saving_place(f: Dict[str, Any]) -> str:
    """Whose step a finding's saving is on: its rank's, or, when that rank is the one the others
    wait for, theirs."""
    return "on the ranks that wait for it" if f.get("waited_for") == f["rank"] else f"on rank {f['rank']}"


def sql_literal(value: Any) -> str:
    """A DuckDB literal for a value, so SQL shown to the user runs as it reads."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(sql_literal(v) for v in value) + "]"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (int, decimal.Decimal)):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


_PLACEHOLDER = re.compile(r"\?")


def inline_params(sql: str, params: Sequence[Any]) -> str:
    """Replace each `?` in order by its value's literal (the program's SQL has no `?` in strings)."""
    values = iter(params)
    return _PLACEHOLDER.sub(lambda m: sql_literal(next(values)), sql)


def first_named(paths: List[str]) -> str:
    """The first three of what lost_phrase counts, named: "a.csv, b.json, c.csv, …", each as
    literal writes it (a folder's name may hold ESC or a line break)."""
    paths = list(dict.fromkeys(paths))
    return ", ".join(literal(path_text(p)) for p in paths[:3]) + (", …" if len(paths) > 3 else "")


def gap_words(seconds: float) -> str:
    """How far apart two runs' times are: "42.1 s", "28.2 min", "5.3 h", "478.6 days"."""
    for unit, size, past in (("days", 86400, 2 * 86400), ("h", 3600, 2 * 3600), ("min", 60, 60)):
        if seconds >= past:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:.3g} s"


def lost_phrase(paths: List[str]) -> str:
    """What could not be loaded, counted and named for what it is: "1 file", "2 folders", "3 files
    and 1 folder" (a rank folder left out is no file); a file said twice counts once."""
    paths = list(dict.fromkeys(paths))
    folders = sum(os.path.isdir(p) for p in paths)
    return " and ".join(f"{n} {noun}{'' if n == 1 else 's'}"
                        for n, noun in ((len(paths) - folders, "file"), (folders, "folder")) if n)


ACCOUNT_SOURCES = {"overlap_lanes": "the trace's Overlap Analysis"}


def account_check(checks: List[Dict[str, Any]]) -> Optional[Tuple[str, bool]]:
    """How the step account compares with the profiler's own step breakdown (the report's
    step_account_check), in words, and whether it differs; None where no rank has one. A rank
    none of whose steps there is one of its account's was not compared: said, never counted as
    agreeing."""
    if not checks:
        return None
    sources = ", ".join(sorted({ACCOUNT_SOURCES.get(c["source"], literal(c["source"])) for c in checks}))
    compared = [c for c in checks if c.get("steps")]
    # (a rank with no kernel loaded, its kernel file lost, has nothing to account for)
    why = ", ".join(f"rank {c['rank']} " + ("has no kernels loaded" if c.get("kernels") == 0 else
                                            "has none of its kernels' steps there")
                    for c in checks if not c.get("steps"))
    if not compared:
        return f"is not compared with {sources}: {why}", False
    unmatched = f"; not compared: {why}" if why else ""
    off = [c for c in compared if c.get("differs")]
    if off:
        return "differs from " + sources + ": " + ", ".join(
            f"rank {c['rank']} by {c['deviation'] * 100:.1f}%" for c in off) + unmatched, True
    worst = max(c.get("deviation") or 0.0 for c in compared)
    only = f" for rank {', '.join(str(c['rank']) for c in compared)}" if why else ""
    return f"agrees with {sources} (within {max(worst * 100, 0.1):.1f}%){only}{unmatched}", False
