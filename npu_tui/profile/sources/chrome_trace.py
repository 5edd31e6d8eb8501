"""Staging a Chrome-trace JSON file into a DuckDB temp table, one row per event, never via Python objects.

Shapes read: a bare array of events (torch_npu's trace_view.json, msprof's timeline JSON) or an object
whose ``traceEvents`` holds them (Kineto); plain or gzip.

Columns are given explicitly (auto-detection samples the first events, so keys that appear late are
dropped and mixed number/string fields get mistyped). Times: DuckDB turns a JSON *number* into text
through a double (``1736408883704643.212`` -> ``'1736408883704643.2'``, 250 ns lost), but parses it
exactly into a DECIMAL, and strings such as torch_npu's ``"1736408883704643.212"`` (even with a trailing
TAB) parse into the same DECIMAL. So ``ts`` and ``dur`` are read as DECIMAL(38,3) µs: the reader rounds
finer digits half away from zero to the ns, and the scaling to integer ns stays a cheap multiply (a
wider scale and round() cost 4 of the 10 s a 1.2 GB trace takes to stage). Integers (pids up to 2^64, flow ids) keep every digit as VARCHAR.

A collection killed while writing leaves the file cut mid-event. Then the complete events before the
cut are kept: the file is copied to a temp folder, closed after its last complete event, and read
again; the unfinished event is counted as lost (nothing after it was ever written).
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ..errors import SourceError
from .base import read_head

EVENT_FIELDS = (
    ("ph", "VARCHAR"),
    ("name", "VARCHAR"),
    ("cat", "VARCHAR"),
    ("pid", "VARCHAR"),
    ("tid", "VARCHAR"),
    ("ts", "DECIMAL(38, 3)"),
    ("dur", "DECIMAL(38, 3)"),
    ("id", "VARCHAR"),
    ("bp", "VARCHAR"),
    ("args", "JSON"),
)
EVENT_STRUCT = "STRUCT(" + ", ".join(f'"{n}" {t}' for n, t in EVENT_FIELDS) + ")"
ARRAY_COLUMNS = dict(EVENT_FIELDS)
OBJECT_COLUMNS = {
    "traceEvents": EVENT_STRUCT + "[]",
    "baseTimeNanoseconds": "VARCHAR",
    "distributedInfo": "JSON",
}

# ts_ns is absolute when the trace gives baseTimeNanoseconds (Kineto writes ts relative to it).
# TRY: a value past BIGINT ns (hand-edited, or garbage) makes that event untimed, not the file unreadable.
EVENT_SELECT = """
SELECT ph, name, cat, pid, tid,
       TRY_CAST(ts * 1000 + $base_ns AS BIGINT) AS ts_ns,
       TRY_CAST(dur * 1000 AS BIGINT) AS dur_ns,
       id, bp, args,
       row_number() OVER () AS seq  -- file order (parent ops come before children that tie with them)
"""
STAGE_ARRAY = (
    "CREATE OR REPLACE TEMP TABLE {table} AS" + EVENT_SELECT
    + "FROM read_json($path, format = 'array', columns = $columns, ignore_errors = true)"
)
STAGE_DOCUMENT = """
CREATE OR REPLACE TEMP TABLE {table}_doc AS
SELECT * FROM read_json($path, format = 'unstructured', records = true, columns = $columns,
                        ignore_errors = true, maximum_object_size = $max_size)
"""
DOCUMENT_META = "SELECT baseTimeNanoseconds, distributedInfo, len(traceEvents) FROM {table}_doc"
STAGE_OBJECT = (
    "CREATE OR REPLACE TEMP TABLE {table} AS" + EVENT_SELECT
    + "FROM (SELECT unnest(traceEvents, recursive := true) FROM {table}_doc)"
)

# Events that cannot be placed in time: ts missing or unparsable, or a complete event whose dur is
# missing, unparsable, NaN, inf or negative. Dropped here and counted, so no loader ever sees them.
DROP_UNTIMED = """
DELETE FROM {table}
WHERE (ph IN ('X', 'B', 'E', 'i', 'I', 's', 't', 'f') AND ts_ns IS NULL)
   OR (ph = 'X' AND (dur_ns IS NULL OR dur_ns < 0))
"""

PROBE = {
    "array": "SELECT count(*) FROM read_json($path, format = 'array', columns = {'ph': 'VARCHAR'})",
    "object": "SELECT len(traceEvents) FROM read_json($path, format = 'unstructured', records = true, "
              "columns = {'traceEvents': 'JSON[]'}, maximum_object_size = $max_size)",
}

MAX_OBJECT_SIZE = 2**32 - 1  # DuckDB's limit for one JSON value (maximum_object_size is a UINTEGER)
TAIL_BYTES = 8 * 1024 * 1024  # how far back from a cut to look for the last complete event
EVENT_BOUNDARY = re.compile(rb"\}\s*,\s*(?=\{|$)")
MAX_REPAIR_TRIES = 4
COPY_CHUNK = 16 * 1024 * 1024


@dataclass
class StagedTrace:
    """What ``stage_trace`` put in its table, and what the file said about itself."""

    events: int
    lost: int = 0  # unfinished events dropped at a cut end
    untimed: int = 0  # events without a usable ts / dur, dropped (DROP_UNTIMED)
    note: str = ""
    base_ns: int = 0  # Kineto's baseTimeNanoseconds, already added to ts_ns
    distributed_info: dict = field(default_factory=dict)  # Kineto's distributedInfo (rank, world_size)


def stage_trace(con: duckdb.DuckDBPyConnection, path: Path, table: str) -> StagedTrace:
    """Load the events of Chrome-trace file ``path`` into temp table ``table``.

    Columns: ph, name, cat, pid, tid, id, bp (VARCHAR), ts_ns, dur_ns (BIGINT ns; dur_ns is >= 0 on
    every 'X' event, and NULL where the event has none), args (JSON), seq (BIGINT, the event's place
    in the file). Events without a usable time are dropped and counted in ``untimed``. Raises
    SourceError with a one-line reason when nothing can be read. Drop the table with
    ``drop_staged_trace`` when done.
    """
    shape = _shape(path)
    # Checked before reading: a failed read would abort the caller's transaction, leaving no retry.
    if _cut_short(path, shape):
        staged = _stage_repaired(con, path, table, shape)
    else:
        try:
            staged = _stage(con, path, table, shape)
        except duckdb.Error as e:
            raise SourceError(_reason(e)) from None
    if staged.events == 0:
        raise SourceError("no events: the trace is an empty list")
    staged.untimed = con.execute(DROP_UNTIMED.format(table=table)).fetchone()[0]
    return staged


def drop_staged_trace(con: duckdb.DuckDBPyConnection, table: str) -> None:
    for t in (table, f"{table}_doc"):
        con.execute(f"DROP TABLE IF EXISTS {t}")


def _shape(path: Path) -> str:
    head = read_head(path, 4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head[:1] == b"[":
        return "array"
    if head[:1] == b"{":
        return "object"
    raise SourceError("not a Chrome trace: the file is empty or not a JSON array or object")


def _stage(con, path: Path, table: str, shape: str) -> StagedTrace:
    if shape == "array":
        con.execute(STAGE_ARRAY.format(table=table),
                    {"path": str(path), "columns": ARRAY_COLUMNS, "base_ns": 0})
        return StagedTrace(events=_count(con, table))
    con.execute(STAGE_DOCUMENT.format(table=table),
                {"path": str(path), "columns": OBJECT_COLUMNS, "max_size": _document_size(path)})
    base, info, n = con.execute(DOCUMENT_META.format(table=table)).fetchone()
    if n is None:
        raise SourceError("a JSON object without a traceEvents list")
    base_ns = int(base) if base and base.strip().isdigit() else 0
    con.execute(STAGE_OBJECT.format(table=table), {"base_ns": base_ns})
    con.execute(f"DROP TABLE {table}_doc")
    parsed = json.loads(info) if info else {}
    return StagedTrace(events=_count(con, table), base_ns=base_ns,
                       distributed_info=parsed if isinstance(parsed, dict) else {})


def _count(con, table: str) -> int:
    return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def _document_size(path: Path) -> int:
    """An upper bound for the decompressed size (gzip records it mod 2^32 in its last 4 bytes)."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        if f.read(2) == b"\x1f\x8b" and size >= 18:
            f.seek(-4, 2)
            size = max(size, struct.unpack("<I", f.read(4))[0])
    return min(MAX_OBJECT_SIZE, size + 1024)


def _cut_short(path: Path, shape: str) -> bool:
    """Whether the (decompressed) file stops before its closing bracket. Streams bytes, parses nothing."""
    closing = b"]" if shape == "array" else b"}"
    with open(path, "rb") as f:
        if f.read(2) != b"\x1f\x8b":
            f.seek(max(0, path.stat().st_size - 256))
            return not f.read().rstrip().endswith(closing)
        f.seek(0)
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        tail = b""
        for chunk in iter(lambda: f.read(COPY_CHUNK), b""):
            try:
                tail = (tail + d.decompress(chunk))[-256:]
            except zlib.error:
                return True
            if d.eof:
                break
        return not d.eof or not tail.rstrip().endswith(closing)


def _reason(e: duckdb.Error) -> str:
    """DuckDB's message without the file path and the hints, in one line."""
    text = str(e).strip()
    line = text.splitlines()[0] if text else type(e).__name__
    where = re.search(r"in record/value (\d+): ([^.]*)", line)
    if "UTF-8" in line:
        return "not UTF-8 text" + (f" (event {where.group(1)})" if where else "")
    if "maximum_object_size" in line:
        return "trace too large to read as one JSON object (over 4 GiB)"
    if where:
        return f"malformed JSON in event {where.group(1)}: {where.group(2)}"
    return "unreadable JSON: " + line.split(" Error: ", 1)[-1]


def _stage_repaired(con, path: Path, table: str, shape: str) -> StagedTrace:
    """Read a cut file again from a copy closed after its last complete event."""
    closing = b"]" if shape == "array" else b"]}"
    with tempfile.TemporaryDirectory(prefix="npu_tui_") as tmp:
        copy = Path(tmp) / "trace.json"
        size = _decompressed_copy(path, copy)
        with open(copy, "rb") as f:
            f.seek(max(0, size - TAIL_BYTES))
            start = f.tell()
            tail = f.read()
        cuts = [start + m.start() + 1 for m in EVENT_BOUNDARY.finditer(tail)]
        # A '}, {' inside a string would look like an event end: each cut is tried on a separate
        # cursor first, so a failed try leaves the caller's transaction intact.
        probe = con.cursor()
        for cut in reversed(cuts[-MAX_REPAIR_TRIES:]):
            with open(copy, "r+b") as f:
                f.truncate(cut)
                f.seek(cut)
                f.write(closing)
            try:
                params = {"path": str(copy)}
                if shape == "object":
                    params["max_size"] = _document_size(copy)
                probe.execute(PROBE[shape], params)
            except duckdb.Error:
                continue
            staged = _stage(con, copy, table, shape)
            staged.lost = 1
            staged.note = (f"file cut short: kept the {staged.events} complete events before the cut, "
                           f"dropped {size - cut} bytes of an unfinished one")
            return staged
    raise SourceError("file cut short and no complete event could be recovered")


def _decompressed_copy(src: Path, dst: Path) -> int:
    """Copy ``src`` to ``dst`` as plain bytes (a cut gzip stream gives what it holds); return the size."""
    with open(src, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    with open(dst, "wb") as out:
        if not gz:
            with open(src, "rb") as f:
                shutil.copyfileobj(f, out, COPY_CHUNK)
        else:
            with open(src, "rb") as f:
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                for chunk in iter(lambda: f.read(COPY_CHUNK), b""):
                    try:
                        out.write(d.decompress(chunk))
                    except zlib.error:
                        break
        return out.tell()

