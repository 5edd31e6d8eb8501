"""Reading a profiler CSV into a staging table with DuckDB's reader, every column as text.

Columns are typed by our own SQL afterwards (the auto-detecting reader turns TAB-suffixed and N/A
columns into text unpredictably). Rows DuckDB cannot split (ragged, over 256 MiB) are
rejected and counted, never fatal. The profiler ends every line with a line break; a file that does
not end with one was cut while being written or copied, or trimmed by hand. Its last line loads when
it is a whole row (as many fields as the header, no quote left open); otherwise it is a partial row,
counted as rejected, and the rest is read from a copy without it; so is one that ends on a delimiter
(a cut just after it), or whose last cell is the start of the row before's (``NPU:`` under ``NPU:0``).
(Other cuts inside the last cell's value cannot be told from a whole row, and load.) Zero bytes
that end the file (a crashed writer's space, never filled) are not read, and said. Rows with bytes
that are not UTF-8 are read again from a copy with their lines decoded (base.other_locale: as GBK
where they read so, else those bytes written ``\\xNN``); the header line coming again starts a
table joined after the file's own, which is not read.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import tempfile
from contextlib import nullcontext
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple, Union

import duckdb

from ..errors import SourceError
from ..schema import scratch_dir
from .base import (BOM, LoadResult, RankContext, csv_header, locale_note, other_locale, read_head, refuse_utf16,
                   trailing_zeros, zeros_note)

STAGE_CSV = """
CREATE OR REPLACE TEMP TABLE {table} AS
SELECT {select} FROM read_csv($path, header = true, auto_detect = false, columns = $columns,
                       delim = ',', quote = '"', escape = '"', strict_mode = $strict,
                       max_line_size = $max_row, ignore_errors = true, store_rejects = true,
                       rejects_table = '{table}_rejects', rejects_scan = '{table}_scan')
"""
REJECTS = """
SELECT count(DISTINCT line), count(DISTINCT line) FILTER (error_type = 'INVALID ENCODING'),
       count(DISTINCT line) FILTER (error_type = 'LINE SIZE OVER MAXIMUM')
FROM {table}_rejects
"""
# DuckDB's own limit, 2 MiB, is short of a real row: the input shapes of an op over a few thousand
# tensors (a fused optimizer step) run past it. A file with a row over it is read again with rows
# up to MAX_ROW: its buffers are then that wide, which costs a big file memory the others keep.
FIRST_ROW = 2 << 20
MAX_ROW = 256 << 20
# Python's reader, which looks at a file's last rows and counts a joined table's, stops at 128 KiB
# a cell: as far as DuckDB's.
csv.field_size_limit(MAX_ROW)
# A table joined after the file's own (two exports in one file: `cat a b > c`), told by its header
# coming again (at a line's start, or glued to the last row of a file without its last line break):
# only the first is read, and the file is not loaded whole.
JOINED = "its header again at line"
# The same with the header's names in other units or another order (a KB export joined to an MB
# one): its rows would read in the wrong unit or column. Told by a staged row whose first two cells
# are, but for their units, names of the header's columns (load_rows).
JOINED_OTHER = "a header in other units or order at row"
HEADER_LIKE = r"""
SELECT min(rowid) FROM {table}
WHERE lower(regexp_replace(trim({first}, E' \t\r\n"'), '\s*\([^)]*\)$', '')) IN (SELECT unnest($names))
  AND lower(regexp_replace(trim({second}, E' \t\r\n"'), '\s*\([^)]*\)$', '')) IN (SELECT unnest($names))
"""


def stage_csv(con: duckdb.DuckDBPyConnection, path: Path, table: str,
              select: Optional[Callable[[List[str]], str]] = None) -> Tuple[List[str], int, str]:
    """Load ``path`` into temp table ``table``; return its column names, the count of rows not
    loaded (rejected by the reader, a cut last row, the rows of a table joined after the file's
    own) and a note on why where that is known ("" otherwise).

    ``select(columns)`` gives the staged projection (default: every column, as text); naming only
    the columns a loader needs lets DuckDB skip converting the rest (kernel_details has ~46).
    """
    head = read_head(path)
    if not head.strip():
        raise SourceError("empty file")
    zeros, total = trailing_zeros(path), path.stat().st_size
    zeros_said = zeros_note(zeros, total, rows=True)
    refuse_utf16(head, "CSV")  # its header would read as no column the loader knows
    columns = _named(csv_header(head), head)
    twice = sorted({c for c in columns if columns.count(c) > 1})
    if twice:
        raise SourceError(f"unreadable CSV header: {', '.join(repr(c) for c in twice[:3])} named twice")
    spec = {c: "VARCHAR" for c in columns}
    size = total - zeros
    scan = _scan(path, size, _header_line(head))
    # Zero bytes inside a text file: a block the disk or the copy never filled. The rows there run
    # together or hold the zeros as text, and how many there were is unknown.
    damage = (f"damaged: {scan.zeros:,} zero bytes inside it, from byte {scan.first_zero:,}; the rows there "
              "are lost or hold the zeros") if scan.zeros else ""
    joined, after = "", 0
    if scan.again >= 0:  # the first table is read whole, up to the second's header
        complete, guessed, keep = None, False, scan.again
        after = _rows_from(path, scan.again, size, columns)
        joined = (f"{JOINED} {_breaks(path, 0, scan.again) + 1:,}: another table joined to it (two exports "
                  "in one file?), not loaded")
    else:
        complete, guessed = _complete_size(path, len(columns), size)
        keep = complete if complete is not None else size if zeros else None  # what is read of it
    # CR CR LF: Python's csv writer on Windows, given a file not opened with newline="", writes it
    # at the end of every row, the header's included. DuckDB's lax mode reads it with a line break
    # leading each row's first cell, so such a file is read from a copy with CR LF instead.
    cr_cr_lf = b"\r\r\n" in head
    projection = select(columns) if select else "*"

    def read(locale: bool, wide: bool) -> Tuple[int, int, int, Tuple[int, int]]:
        """The rows rejected, those of them not UTF-8 and too long; and the copy's lines read as
        GBK and written \\xNN."""
        # A temporary folder only for a copy: none to make (nor to fail for want of room) otherwise.
        copied = keep is not None or cr_cr_lf or locale
        read_as = (0, 0)
        with tempfile.TemporaryDirectory(prefix="npu_tui_csv_", dir=scratch_dir()) if copied else nullcontext() as tmp:
            src = path
            if copied:
                src = Path(tmp) / path.name
                read_as = _copy(path, src, keep, cr_cr_lf, locale)
            try:
                con.execute(STAGE_CSV.format(table=table, select=projection),
                            {"path": str(src), "columns": spec, "strict": not scan.mixed,
                             "max_row": MAX_ROW if wide else FIRST_ROW})
            except (duckdb.OutOfMemoryException, duckdb.InterruptException):
                raise  # not the file's fault: the loader tries it again, or was stopped (loader._load_file)
            except duckdb.Error as e:
                raise SourceError(f"unreadable CSV: {str(e).splitlines()[0]}") from None
        return (*con.execute(REJECTS.format(table=table)).fetchone(), read_as)

    rejected, not_utf8, too_long, read_as = read(locale=False, wide=False)
    if not_utf8 or too_long:
        # Rows with bytes of another locale (a GBK name, a file saved by Excel on a Chinese
        # system): their time is real, so they are read again, as GBK where they read so, else
        # with those bytes written as \xNN, as a folder's name is shown, rather than dropped.
        # And rows too long for the first read.
        drop_staged(con, table)
        rejected, _, too_long, read_as = read(locale=bool(not_utf8), wide=bool(too_long))
    note = "; ".join(filter(None, [
        "" if complete is None else MAYBE_CUT if guessed else "cut short: its last row is partial", joined, damage,
        zeros_said, locale_note(not_utf8, "row", *read_as) if not_utf8 else "",
        f"{too_long} row{'s' if too_long > 1 else ''} over {MAX_ROW >> 20} MiB long" if too_long else ""]))
    return columns, rejected + (complete is not None) + after, note


# A column a spreadsheet or pandas added: its cells load under this name, which no loader reads.
UNNAMED = "column {} (no name)"
DELIMITERS = {";": "semicolons (a spreadsheet's list separator in many locales)", "\t": "TABs"}


def _named(columns: List[str], head: bytes) -> List[str]:
    """The header's columns, those without a name at either end (a spreadsheet's empty columns
    after the table, pandas' index before it, where the first row has their cells too) named
    UNNAMED; SourceError for one without a name among the others or the rows (a damaged header),
    and for a header delimited by another character."""
    if len(columns) == 1:
        for delimiter, what in DELIMITERS.items():
            if delimiter.encode() in (_header_line(head) or head):
                raise SourceError(f"unreadable CSV: delimited by {what}, not commas (saved by a spreadsheet?)")
    named = [i for i, c in enumerate(columns) if c]
    inside = [i for i in range(named[0], named[-1]) if not columns[i]] if named else [0]
    row = _first_row(head) if not inside and len(named) < len(columns) else None
    if row is not None and len(row) < len(columns):
        inside = [columns.index("")]
    if inside:
        raise SourceError(f"unreadable CSV header: column {inside[0] + 1} has no name")
    return [c or UNNAMED.format(i + 1) for i, c in enumerate(columns)]


def _first_row(head: bytes) -> Optional[List[str]]:
    """The cells of the first row after the header (blank lines passed over), where the head holds
    it whole: another row starts after it, or a line break ends the head; else None."""
    text = head.decode("utf-8", errors="replace")
    try:
        rows = [r for r in csv.reader(io.StringIO(text, newline="")) if r]
    except csv.Error:
        return None
    if len(rows) > 2 or (len(rows) == 2 and text.endswith(("\n", "\r"))):
        return rows[1]
    return None


def _header_line(head: bytes) -> bytes:
    """The header line as the file spells it (read_head leaves its byte order mark out), without
    its line break; b"" for a file that is its header alone."""
    line, found, _ = head.partition(b"\n")
    return line.rstrip(b"\r") if found else b""


def _rows_from(path: Path, start: int, end: int, header: List[str]) -> int:
    """The rows of the file's bytes [start, end) but its header's, as a reader counts them (a
    quoted cell may hold line breaks: operator_details.csv's call stacks)."""
    def lines():
        with open(path, "rb") as f:
            f.seek(start)
            left = end - start
            for line in f:
                if left <= 0:
                    break
                yield _text(line[:left]).lstrip("\ufeff")
                left -= len(line)
    return sum(1 for row in csv.reader(lines()) if row and [c.strip() for c in row] != header)


def _breaks(path: Path, start: int, end: int) -> int:
    """How many line feeds the file holds in [start, end)."""
    n = 0
    with open(path, "rb") as f:
        f.seek(start)
        left = end - start
        while left > 0 and (block := f.read(min(COUNT_CHUNK, left))):
            n += block.count(b"\n")
            left -= len(block)
    return n


# A last row that is whole in form but whose last cell starts the one above's: cut right after
# that cell, or whole in a file without its last line break. Left out, as a cut row is, and said
# as the guess it is; the run is incomplete all the same (a file cut in half shows no more).
MAYBE_CUT = ("its last row may be cut: no line break follows it, and its last cell is the start of the one "
             "above; left out")


def _complete_size(path: Path, fields: int, size: int) -> Tuple[Optional[int], bool]:
    """None when the file's first ``size`` bytes end with a row's line break or a whole row of
    ``fields`` fields, else the size up to where their last row starts; and whether that row's cut
    is a guess (_prefix_of_above)."""
    with open(path, "rb") as f:
        f.seek(max(0, size - 2))
        end = f.read(2)
    if end[-1:] in (b"\n", b"\r"):
        # A line break inside a quoted cell (operator_details.csv's call stacks) may end a cut
        # too, leaving the quote open. A last line that is a whole row is none: else the quotes
        # before it tell.
        if _whole_row(_last_lines(path, size - (2 if end == b"\r\n" else 1))[1], fields):
            return None, False
        rows = _last_rows(path, size, fields)
        return (None, False) if rows is None or not _open_row(rows[1], fields) else (rows[2], False)
    # Most rows are one line: the last line, whole or cut, is told by itself and the line before.
    before, last, start = _last_lines(path, size)
    if start == 0:
        return 0, False
    if _whole_row(last, fields, before):
        return None, False
    # A quoted cell may hold line breaks: the last row may start lines before the last one.
    rows = _last_rows(path, size, fields)
    if rows is not None:
        before, last, start = rows
        if _whole_row(last, fields, before):
            return None, False
    return start, _whole_row(last, fields) and _prefix_of_above(last, before, fields)


def _open_row(row: bytes, fields: int) -> bool:
    """Whether ``row`` is the start of a row cut inside a quoted cell: closing that quote makes it
    one row of at most ``fields`` cells. (A stray quote in a cell, which leaves a file's quotes
    unpaired, makes the rest of the file the "row", many rows once closed.)"""
    rows = _rows(row + b'"')
    return row.count(b'"') % 2 == 1 and rows is not None and len(rows) == 1 and len(rows[0]) <= fields


LINE_BREAK = re.compile(rb"\r\r\n|\r\n|\n|\r")  # CR CR LF: see stage_csv
COUNT_CHUNK = 1 << 24
TAIL_BYTES = 1 << 16


def _last_lines(path: Path, size: int) -> Tuple[bytes, bytes, int]:
    """The last two lines of a file that does not end with a line break, and where the last starts."""
    blocks: List[bytes] = []  # from the end backwards; joined once (a long last line is many)
    breaks = 0
    with open(path, "rb") as f:
        pos = size
        while pos > 0 and breaks < 3:
            step = min(TAIL_BYTES, pos)
            f.seek(pos - step)
            blocks.append(f.read(step))
            breaks += blocks[-1].count(b"\n") + blocks[-1].count(b"\r")
            pos -= step
    tail = b"".join(reversed(blocks))
    lines = LINE_BREAK.split(tail)
    before = lines[-2] if len(lines) >= 2 and (len(lines) >= 3 or pos == 0) else b""
    return before, lines[-1], size - len(lines[-1])


def _last_rows(path: Path, size: int, fields: int) -> Optional[Tuple[bytes, bytes, int]]:
    """The last two rows of the first ``size`` bytes, where rows end at line breaks outside quotes
    (an even number of quotes before them: an escaped quote is two), and where the last starts;
    None when the file's quotes do not pair up so (a stray quote inside a cell, which the reader
    takes as it is): the row before the last must then be a whole row of ``fields`` cells."""
    with open(path, "rb") as f:
        total = sum(block.count(b'"') for block in iter(lambda: f.read(COUNT_CHUNK), b""))
    tail = TAIL_BYTES
    while True:
        at = max(0, size - tail)
        with open(path, "rb") as f:
            f.seek(at)
            text = f.read(size - at)
        quotes = total - text.count(b'"')  # before the tail
        ends, seen = [], 0  # (start, end) of each line break that ends a row
        for m in LINE_BREAK.finditer(text):
            quotes += text.count(b'"', seen, m.start())
            seen = m.start()
            if quotes % 2 == 0:
                ends.append(m.span())
        if len(ends) >= 2 or at == 0:
            break
        tail *= 8  # a row longer than the tail: look further back
    if not ends:
        return None
    before_from = ends[-2][1] if len(ends) >= 2 else 0
    before, last = text[before_from:ends[-1][0]], text[ends[-1][1]:]
    rows = _rows(before)
    if rows is None or len(rows) != 1 or len(rows[0]) != fields or len(_rows(last) or [last]) != 1:
        return None
    return before, last, at + ends[-1][1]


def _rows(data: bytes) -> Optional[List[List[str]]]:
    """The rows Python's reader makes of ``data`` (a stray quote is a character to it, as to
    DuckDB's); None when it cannot (a quote left open)."""
    try:
        return list(csv.reader(io.StringIO(_text(data), newline=""), strict=True))
    except csv.Error:
        return None


def _text(data: bytes) -> str:
    # Bytes of another encoding are a cell's text, kept as \xNN by the read: they split nothing.
    return data.decode("utf-8", "backslashreplace")


def _whole_row(row: bytes, fields: int, before: bytes = b"") -> bool:
    # A writer that leaves the last line break out still writes the last cell; ending on its
    # delimiter is a cut right after it, and so is a last cell that is the start of the row
    # before's (``NPU:`` under ``NPU:0``). A quote left open is a cut inside a quoted cell.
    if row.count(b'"') % 2 or row.endswith(b","):
        return False
    try:
        cells = next(csv.reader(io.StringIO(_text(row), newline="")))
    except (csv.Error, StopIteration):
        return False
    return len(cells) == fields and not (before and _prefix_of_above(row, before, fields))


def _prefix_of_above(row: bytes, before: bytes, fields: int) -> bool:
    """Whether ``row``'s last cell is the start of ``before``'s (both rows of ``fields`` cells)."""
    try:
        cells = next(csv.reader(io.StringIO(_text(row), newline="")))
        prev = next(csv.reader(io.StringIO(_text(before), newline="")))
    except (csv.Error, StopIteration):
        return False
    return len(cells) == len(prev) == fields and prev[-1] != cells[-1] and prev[-1].startswith(cells[-1])


class _Scan(NamedTuple):
    mixed: bool  # CRLF and bare LF in one file (hand-edited): DuckDB's strict mode fails on them
    zeros: int  # zero bytes
    first_zero: int  # where the first is (-1: none)
    again: int  # where the header line starts again, a table joined on (-1: nowhere)


def _scan(path: Path, size: int, header: bytes, chunk: int = COUNT_CHUNK) -> _Scan:
    """One pass over the file's first ``size`` bytes (those before its trailing zeros) for what the
    read needs to know up front (a failed read aborts the loader's transaction), in one reused
    buffer: a GB file must not be copied chunk by chunk just to be looked at. A search for one byte
    takes a fraction of a count's time, and most files hold no CR and no zero byte: only a chunk
    that holds one is counted. ``header``: the header line, looked for again after it (_header_at)."""
    crlf = bare_lf = False
    zeros = 0
    first_zero = again = -1
    buf = bytearray(chunk)
    cr_before = False  # the previous chunk ended with CR: a CRLF split across the two
    tail = b""  # the end of what was read before: a header line may start in it
    keep = len(header) + len(BOM)
    at = 0
    with open(path, "rb", buffering=0) as f:
        while at < size and (n := f.readinto(buf)):
            n = min(n, size - at)
            if cr_before or buf.find(b"\r", 0, n) >= 0:
                pairs = buf.count(b"\r\n", 0, n) + (cr_before and buf[0] == 0x0A)
                crlf |= pairs > 0
                bare_lf |= buf.count(b"\n", 0, n) > pairs
            else:
                bare_lf |= buf.find(b"\n", 0, n) >= 0
            zero = buf.find(b"\0", 0, n)
            if zero >= 0:
                zeros += buf.count(b"\0", 0, n)
                first_zero = at + zero if first_zero < 0 else first_zero
            if header and again < 0:
                # A header that starts in the tail, then one in the chunk (not copied: a copy
                # of each chunk took half the scan's time).
                seam = tail + bytes(buf[:min(n, keep)])
                hit = _header_at(seam, header, len(seam), at + min(n, keep) >= size, at - len(tail),
                                 max(0, len(tail) - len(header)))
                if hit >= 0:
                    again = at - len(tail) + hit
                elif (hit := _header_at(buf, header, n, at + n >= size, at, len(BOM))) >= 0:
                    again = at + hit
                tail = (tail + bytes(buf[max(0, n - keep):n]))[-keep:]
            cr_before = buf[n - 1] == 0x0D
            at += n
    return _Scan(crlf and bare_lf, zeros, first_zero, again)


def _header_at(data, header: bytes, limit: int, last: bool, base: int, first: int) -> int:
    """Where in ``data[:limit]`` the header begins again, a byte order mark allowed before it (a
    file saved by Excel joined on), when what follows ends it (a line break, more columns, the
    file's end); -1 if none does. It need not start a line: a table joined to one without its last
    line break is glued to that last row (the real 29-row kernel_details.csv ends so). A match that
    ends at ``limit`` is told with the next chunk (the caller keeps its end), unless this is the
    ``last``. ``data`` begins at byte ``base`` of the file (the header there is the file's own);
    matches before ``first`` were looked at with the bytes before them, or will be."""
    at = data.find(header, first, limit)
    while at >= 0:
        end = at + len(header)
        if end == limit and not last:
            break
        start = at - len(BOM) if data[max(0, at - len(BOM)):at] == BOM else at
        if base + start > 0 and data[end:min(end + 1, limit)] in (b"", b"\r", b"\n", b","):
            return start
        at = data.find(header, at + 1, limit)
    return -1


def _copy(path: Path, dst: Path, size: Optional[int], cr_cr_lf: bool, locale: bool = False) -> Tuple[int, int]:
    """``path`` into ``dst``: its first ``size`` bytes (all when None), CR CR LF as CR LF, and with
    ``locale`` each line that is not UTF-8 read as GBK, or its bytes that are not written \\xNN
    (base.other_locale). Returns how many lines were read as GBK, and how many written so."""
    if size is None and not (cr_cr_lf or locale):
        shutil.copyfile(path, dst)
        return 0, 0
    left = os.path.getsize(path) if size is None else size
    carry = b""  # the last line read, which may go on in the next block (a CR CR LF too)
    gbk = escaped = 0
    with open(path, "rb") as f, open(dst, "wb") as out:
        while left > 0 or carry:
            block = f.read(min(COUNT_CHUNK, left)) if left > 0 else b""
            left = left - len(block) if block else 0  # shorter than said (cut since): its end
            data = carry + block
            if left > 0 and block:
                cut = data.rfind(b"\n") + 1
                data, carry = data[:cut], data[cut:]
            else:
                carry = b""
            if cr_cr_lf:
                data = data.replace(b"\r\r\n", b"\r\n")
            if locale:
                data, g, e = _utf8_lines(data)
                gbk, escaped = gbk + g, escaped + e
            out.write(data)
    return gbk, escaped


def _utf8_lines(data: bytes) -> Tuple[bytes, int, int]:
    """``data`` with each line that is not UTF-8 read as GBK or escaped; how many lines each."""
    try:
        data.decode("utf-8")
        return data, 0, 0
    except UnicodeDecodeError:
        pass
    out, gbk, escaped = [], 0, 0
    for line in data.splitlines(keepends=True):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            text, some_escaped = other_locale(line)
            line = text.encode("utf-8")
            gbk, escaped = gbk + (not some_escaped), escaped + some_escaped
        out.append(line)
    return b"".join(out), gbk, escaped


def drop_staged(con: duckdb.DuckDBPyConnection, table: str) -> None:
    for t in (table, f"{table}_rejects", f"{table}_scan"):
        con.execute(f"DROP TABLE IF EXISTS {t}")


def col(columns: List[str], *names: str) -> str:
    """SQL for the first of ``names`` present in the file, else NULL (columns differ by version)."""
    for n in names:
        if n in columns:
            return '"' + n.replace('"', '""') + '"'
    return "NULL"


def _other_header(con: duckdb.DuckDBPyConnection, stage: str, columns: List[str]) -> Optional[int]:
    """The staged row (its rowid: rows stage in file order) that is another header (JOINED_OTHER),
    or None. (Its own header again is _scan's: the file is read up to it.)"""
    if len(columns) < 2:
        return None
    names = sorted({re.sub(r"\s*\([^)]*\)$", "", c.strip()).lower() for c in columns})
    return con.execute(HEADER_LIKE.format(table=stage, first=col(columns, columns[0]), second=col(columns, columns[1])),
                       {"names": names}).fetchone()[0]


def load_rows(con: duckdb.DuckDBPyConnection, path: Path, ctx: RankContext, stage: str, insert: str,
              names: Dict[str, Union[str, Tuple[str, ...]]], usable: Callable[[List[str]], bool], not_it: str,
              empty: str, summary: str = "") -> LoadResult:
    """The whole load of a one-table CSV: stage it, check it is the table (``usable(columns)``,
    else SourceError ``not_it``) and not a header alone (``empty``), then run ``insert`` with
    ``{table}`` and each ``{placeholder}`` of ``names`` set to its column (the first present of
    several names; NULL where the file has none). Rows the insert drops count as skipped, beside the
    rows the reader rejected, except those ``summary`` (a condition, with the same placeholders)
    calls the file's own totals."""
    columns, rejected, note = stage_csv(con, path, stage)
    try:
        if not usable(columns):
            raise SourceError(not_it)
        joined = _other_header(con, stage, columns)
        if joined is not None:
            row = con.execute(f"SELECT count(*) + 1 FROM {stage} WHERE rowid < ?", [joined]).fetchone()[0]
            lost = con.execute(f"DELETE FROM {stage} WHERE rowid > ?", [joined]).fetchone()[0]
            rejected += lost  # (the header row itself stays, and is skipped by the insert)
            note = "; ".join(filter(None, [note, f"{JOINED_OTHER} {row:,}: another table joined to it "
                                                 "(two exports in one file?), not loaded"]))
        total = con.execute(f"SELECT count(*) FROM {stage}").fetchone()[0]
        if total == 0 and rejected == 0:
            raise SourceError(empty)
        cols = {key: col(columns, *((name,) if isinstance(name, str) else name)) for key, name in names.items()}
        if summary:
            total -= con.execute(f"SELECT count(*) FROM {stage} WHERE {summary.format(**cols)}").fetchone()[0]
        sql = insert.format(table=stage, **cols)
        # a job-wide table (ctx.rank None) has no rank column to fill
        rows = con.execute(sql, {"rank": ctx.rank} if "$rank" in sql else {}).fetchone()[0]
        return LoadResult(rows=rows, skipped=rejected + (total - rows), note=note)
    finally:
        drop_staged(con, stage)
