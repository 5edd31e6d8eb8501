"""Staging a Chrome-trace JSON file into a DuckDB temp table, one row per event, never via Python objects.

Shapes read: a bare array of events (torch_npu's trace_view.json, msprof's timeline JSON) or an object
whose ``traceEvents`` holds them (Kineto); plain or gzip.

Columns are given explicitly (auto-detection samples the first events, so keys that appear late are
dropped and mixed number/string fields get mistyped). Times: DuckDB turns a JSON *number* into text
through a double (``1736408883704643.212`` -> ``'1736408883704643.2'``, 250 ns lost), but parses it
exactly into a DECIMAL, and strings such as torch_npu's ``"1736408883704643.212"`` (even with a trailing
TAB) parse into the same DECIMAL. So ``ts`` and ``dur`` are read as DECIMAL(28,3) µs: the reader rounds
finer digits half away from zero to the ns, and the scaling to integer ns stays a cheap multiply (a
wider scale and round() cost 4 of the 10 s a 1.2 GB trace takes to stage) that cannot overflow
(a value past 1e25 µs, past BIGINT ns anyway, is read as none: the event untimed). DuckDB before
2.0 reads a number through a double whatever the type, and text into a DECIMAL that wide slowly:
there they are read as text, and macros_before_2.sql's trace_ns makes the same ns of it. Integers
(pids up to 2^64, flow ids) keep every digit as VARCHAR.

Memory stays bounded whatever the size: the events array is found from the file's head and tail
alone (what surrounds it, Kineto's baseTimeNanoseconds and distributedInfo, is parsed on its own), and
a big one is copied out to a temp folder as pieces split at event boundaries, each a JSON array that
DuckDB reads as a stream, the pieces in parallel. A gzip is decompressed there first.

A collection killed while writing leaves the file cut mid-event. Then the complete events before the
cut are kept, up to the last event boundary; the unfinished event is counted as lost (nothing after
it was ever written).

JSON that breaks among the events (a parser that died mid-write and went on, raw control characters
inside strings, which PyTorch has been known to write) fails the fast read as a whole: the file is
then read again in salvage mode, one event a line (control characters in strings escaped), and the
events that still do not parse are dropped and counted.
"""

from __future__ import annotations

import bisect
import itertools
import json
import os
import re
import tempfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

import duckdb

from ..errors import EmptyTrace, MalformedTrace, SourceError
from ..schema import LINE_TAIL_PASSED_OVER, WIDE_DECIMALS_SLOW, scratch_dir
from .base import (BOM, JOINED_TRACE, KEYS_CUT, inflate, locale_note, other_locale, read_head, refuse_utf16,
                   trailing_zeros, zeros_note)

# Who wrote a trace, told from its head in either shape: Kineto's own keys and device categories
# (torch_npu writes none of them), torch_npu's ts as a string of µs, torch's host event kinds.
_ARRAY = re.compile(rb"^\s*\[\s*\{")
_OBJECT = re.compile(rb"^\s*\{")
_OBJECT_KEY = re.compile(rb'"(traceEvents|schemaVersion)"\s*:')
_KINETO = re.compile(rb'"(schemaVersion|deviceProperties|distributedInfo|External id|Ev Idx)"\s*:'
                     rb'|"cat"\s*:\s*"(kernel|gpu_memcpy|gpu_memset|cuda_runtime|cuda_driver|ac2g|Kernel|Memcpy|Memset)"'
                     rb'|"pid"\s*:\s*"CPU functions"')  # the legacy autograd profiler's export
_STRING_TS = re.compile(rb'"ts"\s*:\s*"\d')
_TORCH_HOST = re.compile(rb'"cat"\s*:\s*"(cpu_op|python_function|user_annotation)"|"name"\s*:\s*"Python"')


@lru_cache(maxsize=4)
def trace_flavour(head: bytes) -> Optional[str]:
    """"kineto" (torch.profiler), "trace_view" (torch_npu) or None for the head of a file. The shape
    does not decide: torch's legacy export writes Kineto events as a bare array, and a trace_view
    may come wrapped in an object. An object of neither is taken for Kineto, as any Chrome trace.
    Cached: both trace sniffers ask about each head discovery reads."""
    array = bool(_ARRAY.match(head))
    if not array and not (_OBJECT.match(head) and _OBJECT_KEY.search(head)):
        return None
    if _kineto_marked(head):
        return "kineto"
    if _TORCH_HOST.search(head) and (array or _STRING_TS.search(head)):
        return "trace_view"
    return None if array else "kineto"


def flavour_told(head: bytes, named: Optional[str]) -> bool:
    """Whether the head of a trace shows whose it is against what its name says (``named``), or
    trace_flavour only fell back on Kineto for want of events (``{"traceEvents": []}``). Under
    torch_npu's own name only a Kineto mark tells: its host events are torch's in either, and a
    trace_view wrapped in an object with numbers for ts (saved again by a viewer) has no other sign
    in its head (its device processes are named a third of the way in)."""
    return _kineto_marked(head) or (named != "trace_view" and bool(_TORCH_HOST.search(head)))


@lru_cache(maxsize=4)
def _kineto_marked(head: bytes) -> bool:
    """Cached as trace_flavour, which asks too: the scan of a head without a mark (torch_npu's 64 KiB)
    takes 0.3 ms, a quarter of a 64-rank reopen's discovery when asked twice a file."""
    return bool(_KINETO.search(head))


DECIMAL_TIME = "DECIMAL(28, 3)"
TIME_TYPE = "VARCHAR" if WIDE_DECIMALS_SLOW else DECIMAL_TIME
EVENT_FIELDS = (
    ("ph", "VARCHAR"),
    ("name", "VARCHAR"),
    ("cat", "VARCHAR"),
    ("pid", "VARCHAR"),
    ("tid", "VARCHAR"),
    ("ts", TIME_TYPE),
    ("dur", TIME_TYPE),
    ("id", "VARCHAR"),
    ("bp", "VARCHAR"),
    ("args", "JSON"),
)
ARRAY_COLUMNS = dict(EVENT_FIELDS)

# ts_ns is absolute when the trace gives baseTimeNanoseconds (Kineto writes ts relative to it).
# TRY: a value past BIGINT ns (hand-edited, or garbage) makes that event untimed, not the file unreadable.
EVENT_SELECT = """
SELECT ph, name, cat, pid, tid,
       TRY_CAST(trace_ns(ts) + $base_ns AS BIGINT) AS ts_ns,
       TRY_CAST(trace_ns(dur) AS BIGINT) AS dur_ns,
       id, bp, args
"""
# The events, from one or more files that each hold a JSON array of them (pieces of a big trace),
# or in salvage mode one event a line, where a line that does not parse is skipped. The rows keep
# the files' order (insertion order is preserved), so their rowid is the event's place in the file:
# seq, given by a view. A window row_number() over the read would gather the parallel read onto one
# thread and double its time.
STAGE_ARRAY = (
    "CREATE OR REPLACE TEMP TABLE {table}_rows AS" + EVENT_SELECT
    + "FROM read_json($paths, format = '{format}', columns = $columns, ignore_errors = true, "
    "maximum_object_size = {max_object}){where}"
)
# An event is read with DuckDB's room for one (its default, 16 MiB, read in buffers of twice that),
# and where one is bigger (a string of megabytes in its args) the file is read again one event a
# line (salvage) with room for 256 MiB: buffers that wide cost every read memory.
FIRST_OBJECT, MAX_OBJECT = 16 << 20, 256 << 20
# records: with one column DuckDB would otherwise take each whole element for its value.
COUNT_ARRAY = ("SELECT count(ph) FROM read_json($paths, format = 'array', records = true, "
               "columns = {'ph': 'VARCHAR'}, ignore_errors = true)")
# Events salvage found inside lines that gave none, each with the row of the line it began on
# (rid), which it takes: its seq stays its place in the file. One a line; a second is added after
# the others.
RECOVERED = ("CREATE OR REPLACE TEMP TABLE {table}_found AS" + EVENT_SELECT + ", npu_tui_rid AS rid "
             "FROM read_json($paths, format = 'newline_delimited', columns = $columns, ignore_errors = true, "
             "maximum_object_size = " + str(MAX_OBJECT) + ") WHERE ph IS NOT NULL")
# Salvage's lines read whole, each as one CSV value ('\x01' is in none: _one_line turned control
# characters to spaces or escapes), and whether each is one JSON value. A line that is not UTF-8
# is skipped: the lines read are the others, in order.
LINE_CHECK = ("CREATE OR REPLACE TEMP TABLE {table}_lines AS SELECT json_valid(line) AS ok FROM read_csv($paths, "
              "columns = {{'line': 'VARCHAR'}}, delim = '\x01', quote = '', escape = '', header = false, "
              "auto_detect = false, ignore_errors = true, max_line_size = " + str(MAX_OBJECT) + ")")
# The rows of these lines (numbers in file order) emptied, as of lines that did not parse: salvage's
# second look takes them.
UNREAD = """
UPDATE {table}_rows SET {nulls} WHERE rowid IN (
  SELECT rid FROM (SELECT row_number() OVER (ORDER BY rowid) - 1 AS n, rowid AS rid FROM {table}_rows)
  WHERE list_contains($lines, n))
"""
IN_PLACE = "UPDATE {table}_rows SET {sets} FROM {table}_found f WHERE {table}_rows.rowid = f.rid"
ADDED = "INSERT INTO {table}_rows SELECT * EXCLUDE (rid) FROM {table}_found WHERE rid IS NULL"
SEQ_VIEW = "CREATE OR REPLACE TEMP VIEW {table} AS SELECT *, rowid AS seq FROM {table}_rows"

# Events that cannot be placed in time: ts missing, unparsable or before the clock's zero (see
# ts_to_ns), or a complete event whose dur is missing, unparsable, NaN, inf or negative. Dropped
# here and counted, so no loader ever sees them.
DROP_UNTIMED = """
DELETE FROM {table}_rows
WHERE (ph IN ('X', 'B', 'E', 'i', 'I', 's', 't', 'f') AND (ts_ns IS NULL OR ts_ns < 0))
   OR (ph = 'X' AND (dur_ns IS NULL OR dur_ns < 0))
"""

# Duration events given as a begin and an end ('B', 'E': the Chrome trace format allows either
# form) made complete ('X') events, as a viewer pairs them: on each thread, in time order (file
# order among equal times), an 'E' closes the latest 'B' still open. The 'B' row takes the event
# (its place in the file, its name and args), with the time to its 'E' as dur; the 'E' goes.
PAIRED = """
CREATE OR REPLACE TEMP TABLE {table}_pairs AS
WITH be AS (
    SELECT rowid AS rid, ph, name, ts_ns, coalesce(pid, '') AS p, coalesce(tid, '') AS t,
           row_number() OVER w AS ord, sum(CASE WHEN ph = 'B' THEN 1 ELSE -1 END) OVER w AS depth
    FROM {table}_rows WHERE ph IN ('B', 'E') AND ts_ns IS NOT NULL
    WINDOW w AS (PARTITION BY coalesce(pid, ''), coalesce(tid, '') ORDER BY ts_ns, rowid ROWS UNBOUNDED PRECEDING)
),
e AS (SELECT *, depth + 1 AS level FROM be WHERE ph = 'E')
SELECT b.rid, e.ts_ns - b.ts_ns AS dur_ns, e.rid AS e_rid, e.name AS e_name
FROM (SELECT *, depth AS level FROM be WHERE ph = 'B') b
ASOF JOIN e ON b.p = e.p AND b.t = e.t AND b.level = e.level AND e.ord > b.ord
"""
AS_COMPLETE = """
UPDATE {table}_rows SET ph = 'X', dur_ns = p.dur_ns, name = coalesce({table}_rows.name, p.e_name)
FROM {table}_pairs p WHERE {table}_rows.rowid = p.rid
"""
PAIRED_ENDS = "DELETE FROM {table}_rows WHERE rowid IN (SELECT e_rid FROM {table}_pairs)"
UNPAIRED = "DELETE FROM {table}_rows WHERE ph IN ('B', 'E')"

# A trace bigger than this is read as pieces split at event boundaries, one per core: DuckDB parses
# one JSON array on one thread, and a {"traceEvents": [...]} object only whole, as one value that
# takes several times the file's size in memory. Pieces are arrays of events on disk, read in
# parallel, each parsed as a stream.
PIECE_BYTES = 32 * 1024 * 1024
HEAD_BYTES = 16 * 1024 * 1024  # how far into an object the traceEvents key is looked for
TAIL_BYTES = 8 * 1024 * 1024  # how far back from the end to look for the end of the events
EVENT_BOUNDARY = re.compile(rb"\}\s*,\s*(?=\{|$)")
EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
CLOSE = re.compile(rb"\]")
COPY_CHUNK = 16 * 1024 * 1024


@dataclass
class StagedTrace:
    """What ``stage_trace`` put in its table, and what the file said about itself."""

    events: int  # events read (of the phases asked for; in salvage, before those are picked)
    lost: int = 0  # events dropped: unfinished at a cut end, or (salvage) not parsable; and no_event
    no_event: int = 0  # entries of the events list that are no event (a trailing {}): no damage
    cut: bool = False  # the file stops before the end of its events
    untimed: int = 0  # events without a usable ts / dur, dropped (DROP_UNTIMED)
    note: str = ""
    base_ns: int = 0  # Kineto's baseTimeNanoseconds, already added to ts_ns
    distributed_info: dict = field(default_factory=dict)  # Kineto's distributedInfo (rank, world_size)
    devices: Optional[list] = None  # Kineto's deviceProperties as written; None where the trace has none

    @property
    def damaged(self) -> bool:
        """Events may be missing: the file stops short, or some of its events did not read."""
        return self.cut or self.lost > self.no_event


def stage_trace(con: duckdb.DuckDBPyConnection, path: Path, table: str, salvage: bool = False,
                phases: Tuple[str, ...] = ()) -> StagedTrace:
    """Load the events of Chrome-trace file ``path`` into temp view ``table`` (over a table of its rows).
    ``phases``: only events of these ``ph`` are kept (a loader that reads no others keeps the
    rest, a Kineto trace's flow arrows, out of memory); the others are neither loaded nor skipped.

    Columns: ph, name, cat, pid, tid, id, bp (VARCHAR), ts_ns, dur_ns (BIGINT ns; dur_ns is >= 0 on
    every 'X' event, and NULL where the event has none), args (JSON), seq (BIGINT: in the file's order,
    its numbers may skip). Events without a usable time are dropped and counted in ``untimed``. Raises
    SourceError with a one-line reason when nothing can be read, MalformedTrace when the JSON
    breaks among the events (then ``salvage=True`` keeps those that parse). Drop the table with
    ``drop_staged_trace`` when done.
    """
    with tempfile.TemporaryDirectory(prefix="npu_tui_", dir=scratch_dir()) as tmp:
        plain, damaged = _plain(path, Path(tmp))
        size, zeros = plain.stat().st_size, trailing_zeros(plain)
        zeros_said = zeros_note(zeros, size)
        damage = (f"gzip stream damaged (zlib noticed at byte {damaged:,} of {path.stat().st_size:,})"
                  if damaged is not None else "")
        try:
            shape = _shape(plain)
            span = _span(plain, shape, size - zeros)
        except SourceError:
            if damage:
                raise SourceError(f"{damage}: no event could be read before it") from None
            raise
        staged = StagedTrace(events=0, cut=span.cut, base_ns=span.base_ns, distributed_info=span.distributed_info,
                             devices=span.devices)
        if damage:
            staged.lost = int(span.cut and not span.at_event_end)
            staged.note = (f"{damage}: the events that parse before it are kept, though those just "
                           f"before it may hold damaged values; what follows is lost")
        elif span.keys_cut:
            staged.note = (f"{KEYS_CUT}: every event kept; keys written after them (Kineto's distributedInfo "
                           "or deviceProperties, where it puts them there) may be missing")
        elif span.at_event_end:
            staged.note = ("file ends after a complete event, its list not closed: every event in it "
                           "kept (any that were to follow are missing)")
        elif span.cut:
            staged.lost = 1
            staged.note = (f"file cut short: kept the complete events before the cut, dropped "
                           f"{size - zeros - span.end} bytes of an unfinished one")
        after = (f"{span.after:,} bytes after the trace's end, starting {span.after_head!r}: not part of it "
                 "(text appended to the file?), ignored" if span.after else "")
        staged.note = "; ".join(filter(None, [staged.note, zeros_said, after]))
        if span.start == span.end:
            raise EmptyTrace()
        lines = (_lines(plain, span, Path(tmp), shape) if salvage
                 else _Lines(_pieces(plain, span, Path(tmp), shape, zeros)))
        pieces, joined = lines.files, lines.joined
        # Salvage filters after the read: its count of what did not parse is of every event.
        paths = [str(p) for p in pieces]
        kept = ", ".join(f"'{p}'" for p in (*phases, *(("B", "E") if "X" in phases else ())))
        # (an entry with no ph is no event: read, to be counted)
        where = f" WHERE ph IN ({kept}) OR ph IS NULL" if phases and not salvage else ""
        try:
            con.execute(STAGE_ARRAY.format(table=table, format="newline_delimited" if salvage else "array",
                                           where=where, max_object=MAX_OBJECT if salvage else FIRST_OBJECT),
                        {"paths": paths, "columns": ARRAY_COLUMNS, "base_ns": span.base_ns})
        except (duckdb.OutOfMemoryException, duckdb.InterruptException):
            raise  # not the file's fault: the loader tries it again, or was stopped (loader._load_file)
        except duckdb.Error as e:
            reason = _reason(e)
            salvageable = reason.startswith(("malformed JSON", "not UTF-8")) or (reason == TOO_BIG and not salvage)
            raise (MalformedTrace if salvageable else SourceError)(reason) from None
        if salvage and LINE_TAIL_PASSED_OVER:
            _more_than_a_value(con, table, lines)
        recovered = _recover(con, table, pieces, Path(tmp), span.base_ns, lines.nul) if salvage else _Recovered()
        # None of the phases asked for: an empty list is still an error, a trace of other events not.
        if where and not con.execute(f"SELECT count(ph) FROM {table}_rows").fetchone()[0] and \
                not con.execute(COUNT_ARRAY, {"paths": paths}).fetchone()[0]:
            _no_event(con.execute(f"SELECT count(*) FROM {table}_rows").fetchone()[0])
    con.execute(SEQ_VIEW.format(table=table))
    unparsed = 0
    if salvage:  # a line that does not parse comes back as a row of NULLs
        # (every field NULL: a line that did not parse, or an empty object, which is no event either)
        unparsed = con.execute(f"SELECT count(*) FROM {table}_rows WHERE COLUMNS(*) IS NULL").fetchone()[0]
    # Entries of the list that are no event (a number, a string, an object without a ph): counted
    # (salvage counts what it could not read its own way).
    no_event = con.execute(f"DELETE FROM {table}_rows WHERE ph IS NULL").fetchone()[0] * (not salvage)
    staged.events = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    dropped = recovered.lost
    staged.lost += dropped
    if recovered.zeros:  # (a block the disk never wrote: what it overwrote is gone with no trace to count)
        said = (f"damaged: {recovered.zeros:,} zero bytes inside it; the events there are lost, how many unknown "
                f"({dropped:,} at least)")
    elif dropped:
        said = f"malformed JSON: {dropped:,} event(s) that do not parse dropped, the rest kept"
    elif recovered.lines:
        zeros = f" ({recovered.zeros_between:,} zero bytes)" if recovered.zeros_between else ""
        said = f"malformed JSON: text that is no event{zeros} dropped from among the events, every event kept"
    else:
        said = ""
    staged.note = "; ".join(filter(None, [staged.note, said]))
    gbk, escaped = lines.gbk + recovered.gbk, lines.escaped + recovered.escaped
    if gbk or escaped:
        staged.note = "; ".join(filter(None, [staged.note, locale_note(gbk + escaped, "event", gbk, escaped)]))
    if joined is not None:
        staged.lost += joined.events
        staged.note = "; ".join(filter(None, [staged.note, f"a second trace from byte {joined.at:,}: {JOINED_TRACE} "
                                              f"(two traces in one file?), its {joined.events:,} events not loaded"]))
    if no_event:
        staged.lost += no_event
        staged.no_event = no_event
        staged.note = "; ".join(filter(None, [staged.note, f"{no_event:,} entries of its events list that are no "
                                              "event (no ph: a number, a string, an object without one): skipped"]))
    if staged.events == 0 and not where:  # filtered: told apart above
        if unparsed:
            raise SourceError(f"malformed JSON: no event could be read ({unparsed:,} of {lines.written:,} "
                              "do not parse)")
        _no_event(no_event)
    if salvage and phases:
        con.execute(f"DELETE FROM {table}_rows WHERE ph NOT IN ({kept})")
    staged.untimed = con.execute(DROP_UNTIMED.format(table=table)).fetchone()[0]
    unpaired, ends = _pair_begin_end(con, table)
    staged.events -= ends  # (a pair is one event)
    if unpaired:
        staged.untimed += unpaired
        staged.note = "; ".join(filter(None, [staged.note, f"{unpaired:,} begin or end events ('B', 'E') "
                                              "without the other half of their pair: dropped"]))
    return staged


def _no_event(entries: int) -> None:
    """Raise for an events list without an event: EmptyTrace, or SourceError where it holds
    ``entries`` that are none (no ph)."""
    if entries:
        raise SourceError(f"no event in its events list: its {entries:,} entries are none (no ph)")
    raise EmptyTrace()


def _pair_begin_end(con: duckdb.DuckDBPyConnection, table: str) -> Tuple[int, int]:
    """Begin and end events made complete ones (PAIRED); returns how many had no pair (dropped),
    and how many ends went into their begin's event."""
    if not con.execute(f"SELECT count(*) FROM {table}_rows WHERE ph IN ('B', 'E')").fetchone()[0]:
        return 0, 0
    try:
        con.execute(PAIRED.format(table=table))
        con.execute(AS_COMPLETE.format(table=table))
        ends = con.execute(PAIRED_ENDS.format(table=table)).fetchone()[0]
        return con.execute(UNPAIRED.format(table=table)).fetchone()[0], ends
    finally:
        con.execute(f"DROP TABLE IF EXISTS {table}_pairs")


# The step of a moment: the highest N of the ProfilerStep#N ranges [lo, hi] (ns) in table {steps}
# that hold it. Ranges can overlap (Kineto's device-side copy of step N runs on into step N+1), so
# time is cut at every range edge: each edge, and the stretch after it, holds one answer, worked
# out over the few ranges into {steps}_from, where a kernel finds its own with an ASOF join on
# from_ns. The range join this replaces grouped a 1.6M-kernel trace's kernels by time (1.3 s).
STEP_FROM = """
CREATE OR REPLACE TEMP TABLE {steps}_from AS
WITH edges AS (SELECT edge, lead(edge) OVER (ORDER BY edge) AS next
               FROM (SELECT DISTINCT unnest([lo, hi]) AS edge FROM {steps}))
SELECT edge AS from_ns, (SELECT max(step) FROM {steps} WHERE lo <= edge AND edge <= hi) AS step FROM edges
UNION ALL
SELECT edge + 1, (SELECT max(step) FROM {steps} WHERE lo <= edge AND next <= hi) FROM edges
WHERE next IS NULL OR next > edge + 1
"""


def drop_staged_trace(con: duckdb.DuckDBPyConnection, table: str) -> None:
    con.execute(f"DROP VIEW IF EXISTS {table}")
    con.execute(f"DROP TABLE IF EXISTS {table}_rows")


def _shape(path: Path) -> str:
    head = read_head(path, 4096)
    refuse_utf16(head, "JSON")
    head = head.lstrip(b" \t\r\n")
    if head[:1] == b"[":
        return "array"
    if head[:1] == b"{":
        return "object"
    raise SourceError("not a Chrome trace: the file is empty or not a JSON array or object")


def _plain(path: Path, tmp: Path) -> Tuple[Path, Optional[int]]:
    """The file itself, or a gzip's content decompressed into ``tmp``, with where (in the gzip)
    zlib found its stream damaged, if it did: a cut or damaged stream gives what it holds before
    that. A gzip of several members (files concatenated) gives them all; bytes after the last
    member that start no other are ignored."""
    with open(path, "rb") as f:
        if f.read(2) != b"\x1f\x8b":
            return path, None
    out = tmp / "trace.json"
    offset = 0  # of the next chunk in the file
    with open(path, "rb") as f, open(out, "wb") as w:
        d, member_ended = zlib.decompressobj(16 + zlib.MAX_WBITS), False
        for chunk in iter(lambda: f.read(COPY_CHUNK), b""):
            at, offset = offset, offset + len(chunk)
            while chunk:
                if member_ended:
                    if chunk[:2] != b"\x1f\x8b":
                        return out, None
                    d, member_ended = zlib.decompressobj(16 + zlib.MAX_WBITS), False
                data, broke = inflate(d, chunk)
                w.write(data)
                if broke is not None:
                    return out, at + broke
                if not d.eof:
                    break
                at += len(chunk) - len(d.unused_data)
                chunk, member_ended = d.unused_data, True
    return out, None


@dataclass
class _Span:
    start: int  # offset just after the events array's '['
    end: int  # offset of its ']' (or of the cut: just after the last complete event)
    cut: bool = False
    base_ns: int = 0
    distributed_info: dict = field(default_factory=dict)
    devices: Optional[list] = None
    # cut just after an event's closing brace: no event is cut in two (what was to follow is unknown)
    at_event_end: bool = False
    # text after the document's end (a log line appended to the file): its size, and how it starts
    after: int = 0
    after_head: str = ""
    # an object cut after its events' ']': every event whole, the keys after them read up to the cut
    keys_cut: bool = False


def _whole_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:  # (UnicodeDecodeError too)
        return False
    return True


def _span(path: Path, shape: str, size: int) -> _Span:
    """Where the events are in the file's first ``size`` bytes, and what the object around them
    says (Kineto's baseTimeNanoseconds, distributedInfo and deviceProperties). Reads the head and
    the tail only."""
    with open(path, "rb") as f:
        head = f.read(min(HEAD_BYTES, size))
        f.seek(max(0, size - TAIL_BYTES))
        tail_at = f.tell()
        tail = f.read(size - tail_at)
    if shape == "array":
        start = head.index(b"[") + 1
        prefix = None
    else:
        m = EVENTS_KEY.search(head)
        if m is None and size <= len(head) and not _whole_json(head):
            # (a gzip cut in its first blocks: what it inflates to ends among the keys before the events)
            raise SourceError(f"file cut short: it ends after {size:,} bytes, before its traceEvents list")
        if m is None:
            raise SourceError("a JSON object without a traceEvents list (in its first "
                              f"{HEAD_BYTES >> 20} MiB)")
        start, prefix = m.end(), head[:m.start()].removeprefix(BOM)
    # The events end at the first ']' after the last event's "ph" after which the rest of the
    # document parses: keys after the events may hold lists of their own (deviceProperties, the
    # process groups of distributedInfo, where a tool that rewrote the trace put them), whose ']'
    # a rest after them parses too; a ']' inside the last event leaves the events' own ']' in its
    # rest, which never parses. (No key after the events holds a "ph".)
    last_event = tail.rfind(b'"ph"')
    found = keys_cut = None
    inside = None  # where an event open at the ']' last read starts: the ']'s after it are in it
    for close in reversed([m.start() for m in CLOSE.finditer(tail, max(last_event, 0))]):
        if tail_at + close < start:
            break
        if inside is not None and close > inside:
            continue
        # The events' ']' ends a list of values: not a ']' inside a string or a list of the last
        # event, where a file cut just after it, or text appended, would look like its end.
        if close:
            ends, inside = _ends_values(tail, close, start - tail_at)
            if not ends:
                continue
        rest = tail[close + 1:]
        meta = _meta(prefix, rest) if prefix is not None else ({} if rest.strip() == b"" else None)
        after = b""
        if meta is None:
            meta, after = _meta_then_text(prefix, rest)
        if meta is not None:
            found = close, meta, after
        elif prefix is not None and rest.lstrip()[:1] in (b"", b","):
            # An object that stops after its events (its closing brace, or keys written after the
            # events, missing): every event is whole; what followed them is read up to the cut.
            keys_cut = close, {**(_meta(prefix, b"}") or {}), **_keys_before_cut(rest)}
        # The one ']' that ends the events read to: the ']'s before it are inside the last event
        # (thousands, in the lists of an op's inputs), each a read of its own.
        break
    if found is None and keys_cut is not None:
        close, meta = keys_cut
        return _Span(start, tail_at + close, False, *_kineto_meta(meta), keys_cut=True)
    if found is not None:
        close, meta, after = found
        head = "".join(c if c.isprintable() else "?" for c in after[:200].decode("utf-8", "replace").split("\n")[0].rstrip())
        return _Span(start, tail_at + close, False, *_kineto_meta(meta), after=len(after),
                     after_head=head if len(head) <= 40 else head[:40] + "…")
    # No end: the file was cut. Read event by event up to the cut, the events end after the last
    # whole one; one left open at the cut is the unfinished one ('}, {' inside its args is no end).
    read = _read_events(tail, len(tail), start - tail_at)
    if read is not None and (read.whole or read.open_at is not None):
        end = tail_at + read.last_end
        if end <= start:
            raise SourceError("file cut short and no complete event could be recovered")
        meta = _meta(prefix, b"}") if prefix is not None else {}
        return _Span(start, end, True, *_kineto_meta(meta or {}), at_event_end=read.open_at is None)
    # Not read that way (an event longer than the tail read, or text between events that is none): the
    # events end at the last event boundary, or after the last event when it is whole.
    bounds = [m for m in EVENT_BOUNDARY.finditer(tail) if tail_at + m.start() >= start]
    ends = [tail_at + m.start() + 1 for m in bounds]
    last_at = tail_at + bounds[-1].end() if bounds else start
    last = tail[last_at - tail_at:].rstrip() if last_at >= tail_at else b""
    whole = _one_event(last[:-1].rstrip() if last.endswith(b"]") else last)
    if whole:
        ends.append(last_at + len(whole))
    if not ends:
        raise SourceError("file cut short and no complete event could be recovered")
    meta = _meta(prefix, b"}") if prefix is not None else {}
    # Nothing after the last event's boundary: the cut fell just after that event's ",".
    return _Span(start, ends[-1], True, *_kineto_meta(meta or {}), at_event_end=bool(whole) or not last)


def _one_event(text: bytes) -> bytes:
    """``text`` when it is one whole JSON object, else b""."""
    try:
        return text if text[:1] == b"{" and isinstance(json.loads(text), dict) else b""
    except (ValueError, RecursionError):
        return b""


def _keys_before_cut(rest: bytes) -> dict:
    """The keys after the events, ``rest`` being ', "key": value, ...' cut somewhere: those whole."""
    text, decoder, got = rest.decode("utf-8", "surrogateescape"), json.JSONDecoder(), {}
    at = SPACE.match(text).end()
    while text.startswith(",", at):
        try:
            key, at = decoder.raw_decode(text, SPACE.match(text, at + 1).end())
            at = SPACE.match(text, at).end()
            if not (isinstance(key, str) and text.startswith(":", at)):
                break
            value, at = decoder.raw_decode(text, SPACE.match(text, at + 1).end())
        except (ValueError, RecursionError):
            break
        got[key] = value
        at = SPACE.match(text, at).end()
    return got


def _meta(prefix: bytes, rest: bytes):
    """The object without its events, parsed; None when it does not parse (not the real end)."""
    try:
        value = json.loads(prefix + b'"traceEvents": []' + rest)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


# How far back _read_events starts: from the earliest event start in the first reach that has one
# (an event is rarely longer than the first), never further than the tail read.
VALUES_READS = (64 << 10, 1 << 20, TAIL_BYTES)
BOUNDARY_TEXT = re.compile(EVENT_BOUNDARY.pattern.decode())  # (read as text: positions of characters)
SPACE = re.compile(r"\s*")


@dataclass
class _EventsRead:
    """The tail up to a point read event by event (_reads_to_end); offsets in the tail's bytes."""
    whole: bool  # the values run to that point
    open_at: Optional[int]  # where one still open there starts (an event cut in two), if one is
    last_end: int  # where the last whole value before it ends (its ',' aside)


def _read_events(tail: bytes, close: int, list_at: int) -> Optional[_EventsRead]:
    """``tail`` up to ``close`` read event by event from the earliest event start within reach (an
    event boundary where an event parses, or the list's start, at ``list_at``); None where there is
    none (an event longer than the tail read, TAIL_BYTES). One pass, whatever the number of
    boundaries (one inside an event's args or strings is passed over with the event, as is an
    event whose brackets close though it does not parse)."""
    decoder = json.JSONDecoder()
    for reach in VALUES_READS:
        near = max(0, close - reach)
        text = tail[near:close].decode("utf-8", "surrogateescape")
        listed = [len(tail[near:list_at].decode("utf-8", "surrogateescape"))] if near <= list_at < close else []
        # The first start that events follow from, else the list's: a boundary inside a string, or
        # in the args of an event longer than the reach, is none (a longer reach may hold its start),
        # nor is one between objects with a ph in an event's args (the ']' of their list follows).
        doomed: Set[int] = set()
        first = next((m.end() for m in BOUNDARY_TEXT.finditer(text)
                      if _events_follow(decoder, text, m.end(), len(text), doomed)),
                     listed[0] if listed else None)
        if first is not None:
            break
    else:
        return None
    whole, open_at = _reads_to_end(decoder, text, first)
    # One never closed is either cut or damaged (its '}' lost): where whole events follow it, it is
    # damaged (dropped by the salvage), and the reading goes on from them.
    while open_at is not None:
        on = next((m.end() for m in BOUNDARY_TEXT.finditer(text, open_at) if _parses(decoder, text, m.end())), None)
        if on is None:
            break
        whole, open_at = _reads_to_end(decoder, text, on)
    before = text[:open_at].rstrip()

    def offset(chars: str) -> int:
        return near + len(chars.encode("utf-8", "surrogateescape"))
    return _EventsRead(whole, None if open_at is None else offset(text[:open_at]),
                       offset(before[:-1].rstrip() if before.endswith(",") else before))


def _ends_values(tail: bytes, close: int, list_at: int) -> Tuple[bool, Optional[int]]:
    """Whether the ']' at ``close`` can close the list of events that starts at ``list_at``, and
    where not, the offset in ``tail`` of the event still open at it (every ']' after that offset
    up to this one is inside that event too: not read again), if that is why. It does when every
    event read up to it parses but damaged ones (dropped by the salvage): one whose brackets close,
    or one never closed that whole events follow. A ']' inside the last event's args leaves that
    event open: a file cut just after it; one that closes nothing the event opened ends the list
    (the event lost its own '}': damaged, not cut)."""
    read = _read_events(tail, close, list_at)
    if read is None:  # one event longer than the tail read, judged by the byte before the ']'
        return tail[:close].rstrip().endswith((b"}", b"[")), None
    if read.open_at is not None:  # (the ']' closing nothing of the open event: the list's own)
        text = tail[read.open_at:close + 1].decode("utf-8", "surrogateescape")
        if _object_end(text, 0)[1] == len(text) - 1:
            return True, None
    return read.whole, read.open_at


def _parses(decoder: json.JSONDecoder, text: str, at: int) -> bool:
    """Whether an event begins at ``at``: an object with a "ph" (a '}, {' inside an event's
    args begins an object too)."""
    try:
        value, _ = decoder.raw_decode(text, SPACE.match(text, at).end())
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and "ph" in value


def _reads_to_end(decoder: json.JSONDecoder, text: str, at: int) -> Tuple[bool, Optional[int]]:
    """Whether the values from ``at``, separated by commas, run to the end of ``text``, a value
    that does not parse taken where its brackets close (a damaged event, not a cut one); and where
    one is open to the end (an event cut in two), where it starts."""
    at = SPACE.match(text, at).end()
    while at < len(text):  # (nothing after a last ',': the ',' before a ']', as a cut just after an event leaves)
        try:
            _, end = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            end, _ = _object_end(text, at)
            if end is None:
                return False, at
        end = SPACE.match(text, end).end()
        if end == len(text):
            return True, None
        if text[end] != ",":
            return False, None
        at = SPACE.match(text, end + 1).end()
    return True, None


def _object_end(text: str, at: int) -> Tuple[Optional[int], Optional[int]]:
    """Where the object at ``at`` ends (after its '}'), its brackets and strings followed whatever
    its values; None when it is none, or a bracket or string is still open at the end of ``text``.
    And where a bracket first closes one it did not open (a ']' there: the object lost its own '}'
    before the list around it ended), if one does."""
    if text[at:at + 1] != "{":
        return None, None
    opened, in_string, escaped = [], False, False
    pairs = {"}": "{", "]": "["}
    for i in range(at, len(text)):
        c = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            opened.append(c)
        elif c in "}]":
            if not opened or opened.pop() != pairs[c]:
                return None, i
            if not opened:
                return i + 1, None
    return None, None


def _meta_then_text(prefix: Optional[bytes], rest: bytes) -> Tuple[Optional[dict], bytes]:
    """The object without its events (of an array: {}) and the text after its end, where a whole
    document is followed by what no JSON document holds there (a log line appended to the file,
    in any encoding); (None, b"") otherwise. A ']' inside the last event's args can make a document
    that ends early too, but what follows it then goes on as JSON does after a value: with ',',
    '}' or ']'."""
    meta: Optional[dict] = {}
    after = rest.lstrip()
    if prefix is not None:
        # (bytes that are not UTF-8 kept as they are: in the text after the end, they are no error)
        text = (prefix + b'"traceEvents": []' + rest).decode("utf-8", "surrogateescape").lstrip()
        try:
            meta, end = json.JSONDecoder().raw_decode(text)  # (which starts at a value: lstrip)
        except (ValueError, RecursionError):
            return None, b""
        if not isinstance(meta, dict):
            return None, b""
        after = text[end:].encode("utf-8", "surrogateescape").lstrip()
    if not after or after[:1] in (b",", b"}", b"]"):
        return None, b""
    return meta, after


def _kineto_meta(meta: dict):
    """baseTimeNanoseconds, distributedInfo and deviceProperties, wherever in the object they are."""
    base = str(meta.get("baseTimeNanoseconds") or "").strip()
    info, devices = meta.get("distributedInfo"), meta.get("deviceProperties")
    return ((int(base) if base.isdigit() else 0), (info if isinstance(info, dict) else {}),
            (devices if isinstance(devices, list) else None))


def _pieces(path: Path, span: _Span, tmp: Path, shape: str, zeros: int) -> list:
    """Files that each hold a JSON array of a consecutive part of the events, split at event
    boundaries; the file itself when it is an array small enough to read at once (and ``zeros``,
    the zero bytes ending it, none)."""
    total = span.end - span.start
    count = max(1, min(os.cpu_count() or 1, total // PIECE_BYTES))
    if count == 1 and shape == "array" and not span.cut and not zeros and not span.after:
        return [path]
    parts = []  # (first byte, end byte) of each piece's events
    begin = span.start
    with open(path, "rb") as f:
        for i in range(1, count):
            f.seek(span.start + i * total // count)
            at = f.tell()
            m = _event_starts(f.read(TAIL_BYTES), span.end - at)
            if m is not None and begin < at + m.start() + 1 and at + m.end() < span.end:
                parts.append((begin, at + m.start() + 1))  # up to this event's closing brace
                begin = at + m.end()  # the next starts after the comma
        parts.append((begin, span.end))
    pieces = [tmp / f"events.{i}.json" for i in range(len(parts))]
    # Written side by side: the reads and writes release the GIL (a 1 GB trace's two pieces, warm:
    # 0.6-0.7 s one after the other, 0.3 s side by side).
    with ThreadPoolExecutor(max_workers=len(parts), thread_name_prefix="npu-tui-pieces") as pool:
        for done in [pool.submit(_write_piece, path, piece, first, end)
                     for piece, (first, end) in zip(pieces, parts)]:
            done.result()
    return pieces


# How much of what follows a '}, {' is read to see whether an event begins there (an event longer
# than this is passed over for the next), how many are tried before the cut is given up (the
# pieces one fewer): a long list of objects in an op's args, or a string full of '}, {', is not
# read through boundary by boundary.
EVENT_PEEK, BOUNDARY_TRIES = 1 << 20, 64


def _event_starts(block: bytes, list_end: int) -> Optional[re.Match]:
    """The first event boundary in ``block`` where an event begins: '}, {' inside a string (the
    repr of a list of dicts in an op's args) or between objects in args is none, and a piece cut
    there would fail to parse, reading a whole valid file in salvage as damaged. ``list_end``: where
    the events' list closes, from the block's start (past it where the block stops before)."""
    decoder = json.JSONDecoder()
    for m in itertools.islice(EVENT_BOUNDARY.finditer(block), BOUNDARY_TRIES):
        text = block[m.end():m.end() + EVENT_PEEK].decode("utf-8", "surrogateescape")
        if _events_follow(decoder, text, 0, list_end - m.end(), set()):
            return m
    return None


def _events_follow(decoder: json.JSONDecoder, text: str, at: int, list_end: int, doomed: Set[int]) -> bool:
    """Whether ``text`` from ``at`` is events, one after another, each followed by a ',', to the
    end of the list (at ``list_end``) or of ``text``. Objects with a "ph" in an event's args are
    followed by the ']' of their own list. ``doomed``: where events start that were read on to a
    no before (filled in here): one reached again is a no without reading on, so that trying every
    boundary of a text reads its events about once (the events followed by more than their list,
    each boundary had read all those after it: a trace of 300 KB took a minute)."""
    starts = []
    while True:
        start = SPACE.match(text, at).end()
        if start in doomed:
            doomed.update(starts)
            return False
        try:
            event, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # one the peek cut is as good as one more event
            if starts and _object_end(text, start) == (None, None):
                return True
            doomed.update(starts)
            return False
        if not (isinstance(event, dict) and "ph" in event):
            doomed.update(starts)
            return False
        starts.append(start)
        at = SPACE.match(text, end).end()
        if at >= min(len(text), list_end):
            return True
        if text[at] != ",":
            doomed.update(starts)
            return False
        at += 1


def _write_piece(path: Path, piece: Path, first: int, end: int) -> None:
    """``[``, bytes [first, end) of ``path``, ``]`` into ``piece``. Through memory: copy_file_range
    was tried and, on a freshly decompressed gzip, sometimes gave DuckDB a piece that read some
    events twice (2 loads in 60 of a two-rank folder)."""
    with open(path, "rb", buffering=0) as f, open(piece, "wb") as out:
        out.write(b"[")
        at = first
        while at < end:
            block = os.pread(f.fileno(), min(COPY_CHUNK, end - at), at)
            if not block:
                break
            out.write(block)  # a buffered write: all of it, however the OS splits it
            at += len(block)
        out.write(b"]")


CONTROL = re.compile(rb"[\x00-\x1f]")
# A JSON string, or a run of control characters outside one (line breaks of pretty-printed JSON).
# Unrolled ("[^"\\]*" runs, then an escape): the alternation form kept backtracking state for each
# character, 5 GB for an event of 40 MiB.
STRING_OR_CONTROL = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\x00-\x1f]+', re.S)


def _one_line(event: bytes) -> bytes:
    """An event on one line: control characters escaped inside strings, turned to spaces outside."""
    def fix(m: re.Match) -> bytes:
        text = m.group()
        if text[:1] != b'"':
            return b" "
        return CONTROL.sub(lambda c: b"\\u%04x" % c.group()[0], text)
    return STRING_OR_CONTROL.sub(fix, event)


# Where a second trace begins among the events (`cat a b > c`): its own traceEvents key, or, of a
# bare array, the end of one array and the start of another (invalid in one JSON document, so only
# looked for once the fast read has failed). Inside a string a key's quotes are escaped. The second
# object begins after the last "}{" before its key: no comma between, so not inside one document.
JOINED_AT = {"object": EVENTS_KEY, "array": re.compile(rb"\}\s*(\])\s*(\[)\s*\{")}
DOCUMENTS_MEET = re.compile(rb"\}\s*\{")


@dataclass
class _Recovered:
    """What salvage found in the lines that gave no event: events whole inside them (read), and the
    events lost: in each stretch left between them, one a "ph" key, or one where an object begins
    without it (torch_npu writes "ph" last: a damaged event may have lost it); text without either
    is no event. Zero bytes among them, where events were lost (how many is unknown: a block never
    written) or where none was."""

    lines: int = 0  # the lines looked at again
    events: int = 0
    lost: int = 0
    zeros: int = 0
    zeros_between: int = 0
    gbk: int = 0  # events read with bytes that are not UTF-8, as _Lines counts them
    escaped: int = 0


# Where an event may begin inside a line that did not parse (a damaged event before it, its '}'
# or the ',' after it lost, put them on one line).
OBJECT_START = re.compile(r"\{")
PH_KEY = re.compile(r'"ph"\s*:')


def _recover(con: duckdb.DuckDBPyConnection, table: str, pieces: List[Path], tmp: Path, base_ns: int,
             nul: Dict[int, int]) -> _Recovered:
    """Salvage's second look at the lines that gave no event (a row without a ph in ``table``_rows:
    a line that did not parse, or a piece of an event split at a '}, {' inside it): each run of
    them joined back as the file had them, the whole events inside read into the table in the rows
    of the lines they begin on (the rows' order is the file's: seq), the rest counted. ``nul``: the
    zero bytes of each line that had any."""
    # (a line's number is its row's place in rowid order: the rowids themselves skip)
    rows = dict(con.execute(f"SELECT n, rid FROM (SELECT row_number() OVER (ORDER BY rowid) - 1 AS n, rowid AS rid, "
                            f"ph FROM {table}_rows) WHERE ph IS NULL").fetchall())
    bad = sorted(rows)
    if not bad:
        return _Recovered()
    wanted, runs = set(bad), []
    firsts = [int(piece.name.split(".")[2]) for piece in pieces] + [bad[-1] + 1]
    for piece, first, after in zip(pieces, firsts, firsts[1:]):
        i = bisect.bisect_left(bad, first)
        if i == len(bad) or bad[i] >= after:
            continue
        with open(piece, "rb") as f:
            for line_no, line in enumerate(f, first):
                if line_no in wanted:
                    if runs and runs[-1][-1][0] == line_no - 1:
                        runs[-1].append((line_no, line.rstrip(b"\n")))
                    else:
                        runs.append([(line_no, line.rstrip(b"\n"))])
    got = _Recovered(lines=len(bad))
    events: List[Tuple[Optional[int], str]] = []  # (the row it takes, if any; its text)
    decoder = json.JSONDecoder()
    for run in runs:
        texts = [line.decode("utf-8", "surrogateescape") for _, line in run]
        text, at = ",".join(texts), 0
        # where each line begins in the run's text, and so which line's row an event there takes
        begins = list(itertools.accumulate((len(t) + 1 for t in texts[:-1]), initial=0))
        taken = set()
        left = []
        for m in OBJECT_START.finditer(text):
            if m.start() < at:
                continue
            try:
                value, end = decoder.raw_decode(text, m.start())
            except (ValueError, RecursionError):  # (brackets nested past Python's limit: no event)
                continue
            if isinstance(value, dict) and "ph" in value:
                left.append(text[at:m.start()])
                line_no = run[bisect.bisect_right(begins, m.start()) - 1][0]
                rid = None if line_no in taken else rows[line_no]
                taken.add(line_no)
                events.append((rid, text[m.start():end]))  # as written: its numbers' digits, its bytes
                at = end
        left.append(text[at:])
        lost = sum(max(len(PH_KEY.findall(t)), int("{" in t)) for t in left)
        zeros = sum(nul.get(n, 0) for n, _ in run)
        got.lost += lost
        if lost:  # a block the disk never wrote, over events not counted
            got.zeros += zeros
        else:
            got.zeros_between += zeros
    if events:
        lines = [e.encode("utf-8", "surrogateescape") for _, e in events]
        # (one in another locale shares its line with the damage: read here as _lines reads the others)
        got.gbk, got.escaped, _ = _read_other_locales(lines)
        path = tmp / "recovered.ndjson"
        path.write_bytes(b"".join(b'{"npu_tui_rid": %s, ' % (b"null" if rid is None else str(rid).encode())
                                  + line[1:] + b"\n" for (rid, _), line in zip(events, lines)))
        try:
            con.execute(RECOVERED.format(table=table), {"paths": [str(path)], "base_ns": base_ns,
                                                        "columns": {**ARRAY_COLUMNS, "npu_tui_rid": "BIGINT"}})
            read = con.execute(f"SELECT count(*) FROM {table}_found").fetchone()[0]
            sets = ", ".join(f'"{n}" = f."{n}"' for n in _row_columns(con, table))
            con.execute(IN_PLACE.format(table=table, sets=sets))
            con.execute(ADDED.format(table=table))
        except duckdb.Error:  # (a value DuckDB cannot take where Python's parser could: those events lost)
            read = 0
        finally:
            con.execute(f"DROP TABLE IF EXISTS {table}_found")
        got.lost += len(events) - read
        got.events = read
    return got


@dataclass
class _Joined:
    at: int  # the byte where the second trace's events begin
    events: int  # its events, not loaded


@dataclass
class _Lines:
    """The files DuckDB reads the events from: the pieces of an array, or salvage's lines, with
    what _lines found writing them."""

    files: list
    written: int = 0  # lines
    gbk: int = 0  # events with bytes that are not UTF-8 read as GBK
    escaped: int = 0  # and those kept with them written \\xNN
    joined: Optional[_Joined] = None  # a second trace joined on
    nul: Dict[int, int] = field(default_factory=dict)  # the zero bytes of each line with any
    foreign: List[int] = field(default_factory=list)  # the lines left in bytes that are not UTF-8 (none parse)


def _more_than_a_value(con: duckdb.DuckDBPyConnection, table: str, lines: _Lines) -> None:
    """Where DuckDB reads a line up to its first value's end and passes over the rest
    (LINE_TAIL_PASSED_OVER), the rows of the lines that are not one JSON value are emptied, as if
    they had not parsed (as DuckDB 2.0 leaves them), for _recover. Those left in bytes that are not
    UTF-8 are such lines (Python's parser took none of them); DuckDB checks the others."""
    con.execute(LINE_CHECK.format(table=table), {"paths": [str(p) for p in lines.files]})
    try:
        read = con.execute(f"SELECT count(*) FROM {table}_lines").fetchone()[0]
        bad = [k for k, in con.execute(f"SELECT k FROM (SELECT row_number() OVER (ORDER BY rowid) - 1 AS k, ok "
                                       f"FROM {table}_lines) WHERE NOT ok").fetchall()]
    finally:
        con.execute(f"DROP TABLE {table}_lines")
    if read + len(lines.foreign) != lines.written:  # a line the CSV reader skipped otherwise: places unknown
        bad = []
    unread = sorted(set(lines.foreign).union(_kth_other(k, lines.foreign) for k in bad))
    if unread:
        nulls = ", ".join(f'"{n}" = NULL' for n in _row_columns(con, table))
        con.execute(UNREAD.format(table=table, nulls=nulls), {"lines": unread})


def _row_columns(con: duckdb.DuckDBPyConnection, table: str) -> List[str]:
    """The columns of a staged trace's rows (EVENT_SELECT's)."""
    return [d[0] for d in con.execute(f"SELECT * FROM {table}_rows LIMIT 0").description]


def _kth_other(k: int, skipped: List[int]) -> int:
    """The ``k``-th number (from 0) that is not in ``skipped`` (sorted)."""
    n = k
    while (after := k + bisect.bisect_right(skipped, n)) != n:
        n = after
    return n


def _lines(path: Path, span: _Span, tmp: Path, shape: str) -> _Lines:
    """Salvage: the events one a line, in pieces as _pieces cuts them. Split at event boundaries
    ("}, {"); a boundary inside a string only makes a bad line (salvage's second look joins them
    again). The events of a trace joined on are counted, not read."""
    got = _Lines([])
    with open(path, "rb") as f:
        f.seek(span.start)
        left, carry, piece = span.end - span.start, b"", 0
        while left > 0 or carry:
            block = f.read(min(PIECE_BYTES, left)) if left > 0 else b""
            left -= len(block)
            text = carry + block
            cuts = [m for m in EVENT_BOUNDARY.finditer(text)]
            if left > 0 and cuts:  # the rest may be cut mid-event: carry it to the next block
                carry, text = text[cuts[-1].end():], text[:cuts[-1].start() + 1]
            elif left > 0:
                carry = text
                continue
            else:
                carry = b""
            second = _second_trace(text, shape)
            if second is not None:
                end, begin = second
                at = span.end - left - len(carry) - len(text) + begin
                got.joined = _Joined(at, _count_events(f, text[begin:] + carry, left))
                text = _until_closed(text[:end])
                left, carry = 0, b""
            events = EVENT_BOUNDARY.split(text)
            # the split takes each event's closing brace with the comma after it, but the last one's
            events = [e + b"}" for e in events[:-1]] + events[-1:]
            lines = [(_one_line(e) if CONTROL.search(e) else e).strip() for e in events]
            if b"\0" in text:  # (each line's zero bytes, for the second look: _one_line turned them to spaces)
                kept = [e.count(b"\0") for e, line in zip(events, lines) if line]
                got.nul.update((got.written + i, zeros) for i, zeros in enumerate(kept) if zeros)
            lines = [line for line in lines if line]
            if not _utf8(text):  # text of another locale (a GBK path in a call stack)
                gbk, escaped, foreign = _read_other_locales(lines)
                got.gbk, got.escaped = got.gbk + gbk, got.escaped + escaped
                got.foreign += [got.written + i for i in foreign]
            # (named for the number of its first line: salvage's second look opens only those it needs)
            name = tmp / f"events.{piece}.{got.written}.ndjson"
            name.write_bytes(b"\n".join(lines) + b"\n")
            got.written += len(lines)
            got.files.append(name)
            piece += 1
    return got


def _second_trace(text: bytes, shape: str) -> Optional[Tuple[int, int]]:
    """Where in ``text`` a first trace ends (its array's ']' or its object's '}' kept) and a second
    begins, or None. A match inside a string of one trace (an event's args holding "}] [{", or a
    key traceEvents of its own) is none: a second array's first event must be whole, and a second
    object must meet the first ("}{", no comma) before its key."""
    for m in JOINED_AT[shape].finditer(text):
        if shape == "array":
            first = EVENT_BOUNDARY.search(text, m.start(2))
            if _one_event(text[m.start(2) + 1:first.start() + 1 if first else len(text)].strip().rstrip(b"]").strip()):
                return m.end(1), m.start(2)
            continue
        meets = list(DOCUMENTS_MEET.finditer(text, 0, m.start()))
        if meets:
            return meets[-1].start() + 1, meets[-1].end() - 1
    return None


def _until_closed(text: bytes) -> bytes:
    """``text``, the events before a second trace, up to the first trace's last event: cut at the
    first ']' that ends a whole event (the list's end: a ']' inside an event ends none). As it is
    where none does (its last event then fails to parse, and is counted)."""
    starts = [0] + [m.end() for m in EVENT_BOUNDARY.finditer(text)]
    for close in CLOSE.finditer(text):
        begin = starts[bisect.bisect_right(starts, close.start()) - 1]
        if _one_event(text[begin:close.start()].strip()):
            return text[:close.start()].rstrip()
    return text


def _count_events(f, text: bytes, left: int) -> int:
    """The events in ``text`` and the ``left`` bytes of ``f`` after it: one "ph" key each."""
    n = text.count(b'"ph"')
    tail = text[-3:]
    while left > 0:
        block = f.read(min(COPY_CHUNK, left))
        if not block:
            break
        left -= len(block)
        n += (tail + block).count(b'"ph"')
        tail = block[-3:]
    return n


def _read_other_locales(lines: List[bytes]) -> Tuple[int, int, List[int]]:
    """The events of ``lines`` with bytes that are not UTF-8, read in place as _other_locale reads
    them; how many read as GBK, how many with bytes written \\xNN, and the places of those that
    parse neither way, left as they are (dropped, and counted, as lines that do not parse)."""
    gbk, escaped, foreign = 0, 0, []
    for i, line in enumerate(lines):
        if not _utf8(line):
            read, as_gbk = _other_locale(line)
            if read is None:
                foreign.append(i)
            else:
                lines[i] = read
                gbk, escaped = gbk + as_gbk, escaped + (not as_gbk)
    return gbk, escaped, foreign


def _other_locale(event: bytes) -> Tuple[Optional[bytes], bool]:
    """An event with bytes that are not UTF-8 as base.other_locale reads it (bytes it cannot read
    written as the JSON text \\\\xNN: an escaped backslash, x, the byte), where it then parses; None
    where it does not. And whether it read as GBK, none of it escaped."""
    text, escaped = other_locale(event, lambda b: f"\\\\x{b:02x}")
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return None, False
    return text.encode("utf-8"), not escaped


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


TOO_BIG = f"an event over {MAX_OBJECT >> 20} MiB of JSON"


def _reason(e: duckdb.Error) -> str:
    """DuckDB's message without the file path and the hints, in one line."""
    text = str(e).strip()
    line = text.splitlines()[0] if text else type(e).__name__
    where = re.search(r"in record/value (\d+): ([^.]*)", line)
    if "UTF-8" in line:
        return "not UTF-8 text" + (f" (event {where.group(1)})" if where else "")
    if "maximum_object_size" in line:
        return TOO_BIG
    if where:
        return f"malformed JSON in event {where.group(1)}: {where.group(2)}"
    return "unreadable JSON: " + line.split(" Error: ", 1)[-1]
