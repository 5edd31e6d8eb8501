"""What every source loader shares: the rank context it loads into, its result, and file sniffing."""

from __future__ import annotations

import codecs
import re
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Dict, List, Optional, Set, Tuple

from ..errors import SourceError

HEAD_BYTES = 64 * 1024


@dataclass
class RankContext:
    """One rank being loaded (``rank`` None: a job's cluster outputs). Loaders may fill in
    device_id and the version fields they find."""

    rank: Optional[int]
    root: Path
    files: Dict[str, List[Path]] = field(default_factory=dict)
    device_id: Optional[int] = None
    source_format: Optional[str] = None
    torch_npu_version: Optional[str] = None
    cann_version: Optional[str] = None
    profiler_level: Optional[str] = None
    world_size: Optional[int] = None
    # MindSpore's profiler wrote it (a *_ascend_ms folder, or its profiler_info): its files mostly
    # read as torch_npu's, but for step_trace_time.csv's Stage (see there).
    mindspore: bool = False
    # Kinds that have already put rows in, so a later source can defer to a better one
    # (trace_view kernels are only used when kernel_details.csv gave none).
    loaded: Set[str] = field(default_factory=set)
    # The names of the rank's files that have put rows in (a split stands in for a merged file
    # that gave none).
    gave: Set[str] = field(default_factory=set)
    # When the last of kernel_details.csv's kernels started, unless that file said it was cut: a
    # trace beside it that runs on after has the rows a cut at a line end lost (trace_view). Kept
    # here, as the trace may read in a transaction begun before those rows were committed.
    kernel_file_last_ns: Optional[int] = None
    # kernel_details.csv gave kernels without a step (a file re-exported without Step Id): the
    # trace's ProfilerStep ranges number them once the rank's files are in (trace_view.give_steps).
    stepless_kernels: bool = False
    # (file, first ns, last ns) of each of the rank's Kineto traces loaded so far: the cycles of one
    # process follow each other, so one that covers most of another's time is those events again.
    trace_spans: List[Tuple[Path, int, int]] = field(default_factory=list)
    # The ProfilerStep numbers each of those gave (kineto): a profiling session numbers its own from
    # 0, so a trace that gives one again is another session of the process.
    trace_steps: Dict[int, Path] = field(default_factory=dict)
    # The first of the rank's traces found to be another, earlier, profiling session's: every trace
    # loaded after it is earlier still (kineto.load_order).
    earlier_session: Optional[str] = None
    # msprof's Iteration ranges (step, first ns, last ns) of every timeline file read: a sliced
    # timeline's kernels find their step in another slice's (msprof_timeline.give_steps).
    iterations: List[Tuple[int, int, int]] = field(default_factory=list)
    # A file the loader runs beside the rank's earlier files (loader.DEFERRABLE) calls this before it
    # reads ``loaded`` or ``device_id``: it returns once those files are in.
    settle: Callable[[], None] = lambda: None
    # Set when a trace's JSON broke among its events and its file is read again event by event.
    salvage: bool = False
    # One device of a file merged over several (msprof): only its rows are this rank's; and the
    # devices that file is split between, each a rank of this load.
    device_only: Optional[int] = None
    devices_split: Tuple[int, ...] = ()
    # The devices the rank's per-task file (op_summary) names in its rows, its own and others'.
    devices_seen: Set[int] = field(default_factory=set)


# A file merged over several devices whose rows do not say their device: not loaded (discovery, the
# msprof timeline beside a split op_summary).
NOT_SPLIT = "not split by device"
# One of several devices' tasks loaded as one rank, their figures added together (discovery, a db export).
MERGED_AS_ONE = "loaded as one rank"

# Ranks of one job run at the same time, on clocks that agree to far better than this: a rank's
# files whose times lie further from the others' are another run's (a job run again into the folder).
# Only wall-clock times tell (from 1970: past 1e18 ns since 2001); msprof's own count from each
# host's boot, and hand-made ones from 0.
RUN_GAP_S = 60
WALL_CLOCK_NS = 10**18


@dataclass
class LoadResult:
    rows: int
    skipped: int = 0
    note: str = ""


GZIP_SLICE = 4096


def inflate(d, data: bytes, limit: int = 0) -> Tuple[bytes, Optional[int]]:
    """What the gzip decompressor ``d`` gives for ``data`` (the next bytes of its stream; at most
    ``limit`` bytes when given), and where in ``data`` zlib found the stream broken, or None. The
    output up to that byte is kept (a broken call gives none: the bytes are then fed again, a
    slice, then one, at a time), and ``d`` is spent."""
    saved = d.copy()
    try:
        return d.decompress(data, limit), None
    except zlib.error:
        pass
    out = bytearray()
    for at in range(0, len(data), GZIP_SLICE):
        before = saved.copy()
        try:
            out += saved.decompress(data[at:at + GZIP_SLICE])
        except zlib.error:
            for i in range(at, min(at + GZIP_SLICE, len(data))):
                try:
                    out += before.decompress(data[i:i + 1])
                except zlib.error:
                    return bytes(out[:limit] if limit else out), i
        if limit and len(out) >= limit:
            break
    return bytes(out[:limit] if limit else out), len(data)


BOM = b"\xef\xbb\xbf"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


# A character of three or four bytes in UTF-8 (Chinese written in UTF-8 is one): a line holding one
# is not read as GBK whole, as GB18030 would read those bytes as other characters.
_UTF8_WIDE = re.compile(rb"[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")


def other_locale(data: bytes, escape: Callable[[int], str] = lambda b: f"\\x{b:02x}") -> Tuple[str, bool]:
    """A line that is not UTF-8, as text, and whether any of its bytes had to be written by
    ``escape`` (\\xNN). Read as GB18030 (GBK's superset: a name saved on a Chinese system) when all
    of it reads so and none of it is UTF-8 Chinese; else its UTF-8 as UTF-8, the rest as GBK pairs
    where two bytes make one (a lead byte then its trail, which may be a backslash or a quote), and
    any other byte by ``escape``."""
    if not _UTF8_WIDE.search(data):
        try:
            return data.decode("gb18030"), False
        except UnicodeDecodeError:
            pass
    out, escaped, at = [], False, 0
    view = memoryview(data)
    while at < len(data):
        # A few KiB at a time: an error carries a copy of what it was decoding, and a line may hold
        # thousands of them.
        window = view[at:at + 4096]
        try:
            text, used = codecs.utf_8_decode(window, "strict", at + len(window) >= len(data))
            out.append(text)
            at += used
            continue
        except UnicodeDecodeError as e:
            out.append(codecs.utf_8_decode(window[:e.start], "strict", True)[0])
            at += e.start
        pair = data[at:at + 2]
        try:
            if len(pair) == 2 and 0x81 <= pair[0] <= 0xFE:
                out.append(pair.decode("gb18030"))
                at += 2
                continue
        except UnicodeDecodeError:
            pass
        out.append(escape(data[at]))
        escaped, at = True, at + 1
    return "".join(out), escaped


def locale_note(n: int, noun: str, gbk: int, escaped: int) -> str:
    """What became of ``n`` rows or events with bytes of another encoding: ``gbk`` of the lines
    they were on read as GBK, ``escaped`` kept with some bytes written \\xNN (other_locale)."""
    how = ("read as GBK" if not escaped else "kept with those bytes written as \\xNN" if not gbk else
           "read as GBK where they read so, else kept with those bytes written as \\xNN")
    return f"not UTF-8: {n:,} {noun}{'' if n == 1 else 's'} with bytes of another encoding, {how}"


def refuse_utf16(head: bytes, what: str) -> None:
    """SourceError for a file written in UTF-16 (by Excel's Unicode Text, PowerShell's redirection,
    Notepad's "Unicode"), which every reader here would take for bytes of another encoding."""
    if head[:2] in UTF16_BOMS:
        raise SourceError(f"unreadable {what}: written in UTF-16 (as Excel's Unicode Text, PowerShell's "
                          "redirection and Notepad's Unicode write)")


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first bytes of a file, decompressed when it is gzip (up to any damage in the stream),
    without a UTF-8 byte order mark (Windows editors write one). OSError (unreadable, gone since
    discovery) propagates, so the load log says why."""
    with open(path, "rb") as f:
        raw = f.read(size)
    if raw[:2] == b"\x1f\x8b":
        # A partial read of a gzip stream: decompress what is there, tolerate the cut end.
        raw = inflate(zlib.decompressobj(16 + zlib.MAX_WBITS), raw, size)[0]
    return raw.removeprefix(BOM)


# A kernel file's rows another file of the rank counts (op_statistic.csv) or ran (trace_view.json)
# and it lacks: said on that file, as "kernel_details.csv holds N kernels fewer than this file ...".
FEWER = "fewer than this file"


def kernels_fewer(n: int) -> str:
    return f"kernel_details.csv holds {n:,} kernel{'' if n == 1 else 's'} {FEWER}"


# A trace file that goes on into a second trace (chrome_trace._lines): only the first is read.
JOINED_TRACE = "another trace joined to it"
# A trace object that stops after its events' ']' (chrome_trace._span): every event whole, the keys
# after them (Kineto's distributedInfo, where it puts it there) maybe not.
KEYS_CUT = "file ends after its events, cut in what follows them"


# And the rows it holds more of than op_statistic.csv counts: rows twice, each counted twice.
MORE = "more than this file"


def kernels_more(n: int) -> str:
    return f"kernel_details.csv holds {n:,} kernel{'' if n == 1 else 's'} {MORE}"


def read_tail(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The last bytes of a plain file; b"" for a gzip file, whose end cannot be read without the
    whole stream before it. OSError propagates, as read_head's."""
    with open(path, "rb") as f:
        if f.read(2) == b"\x1f\x8b":
            return b""
        f.seek(max(2, f.seek(0, 2) - size))
        return f.read(size)


ZERO_BLOCK = 1 << 16


def trailing_zeros(path: Path) -> int:
    """How many zero bytes end the file. A writer's space that was never filled (the machine, or
    the writer, stopped before the data reached the disk) reads back as zeros: not the file's."""
    size = path.stat().st_size
    zeros = 0
    with open(path, "rb") as f:
        while zeros < size:
            step = min(ZERO_BLOCK, size - zeros)
            f.seek(size - zeros - step)
            block = f.read(step)
            kept = len(block.rstrip(b"\x00"))
            zeros += step - kept
            if kept:
                break
    return zeros


# Fewer trailing zeros are a writer's terminator, not a crash's blocks (a disk block is 512 bytes
# or more): not read, and not said.
ZEROS_SAID = 512


# What zeros after a CSV's last whole row cost: a JSON document shows its own end, rows do not, and
# the blocks that never reached the disk held what was written after them.
ROWS_LOST = "the rows written there are lost, how many it cannot tell"


def zeros_note(zeros: int, size: int, rows: bool = False) -> str:
    """What the loader says of ``trailing_zeros`` (of a file of ``rows``, one that cannot show it
    ended: ROWS_LOST); SourceError when the file is nothing else."""
    if zeros and zeros == size:
        raise SourceError(f"only zero bytes ({size:,})")
    if zeros < ZEROS_SAID:
        return ""
    note = f"ends in {zeros:,} zero bytes where its writer stopped (a crash): not read"
    return f"{note}; {ROWS_LOST}" if rows else note


def damaged_gzip_head(path: Path) -> bool:
    """Whether ``path`` is a gzip whose stream breaks within its first bytes."""
    with open(path, "rb") as f:
        raw = f.read(HEAD_BYTES)
    return raw[:2] == b"\x1f\x8b" and inflate(zlib.decompressobj(16 + zlib.MAX_WBITS), raw)[1] is not None


def first_line(head: bytes) -> str:
    # \r\n, \n or an old Mac editor's bare \r
    line = head.split(b"\n", 1)[0].split(b"\r", 1)[0]
    return line.decode("utf-8", errors="replace").lstrip("\ufeff")


def csv_header(head: bytes) -> List[str]:
    """Column names of a CSV head (the profiler never quotes header cells)."""
    return list(_header_cells(head))


@lru_cache(maxsize=4)
def _header_cells(head: bytes) -> Tuple[str, ...]:
    # Discovery asks every CSV sniffer about each file's head in turn: split it once. A first line
    # that fills the whole head is no header (a one-line JSON trace's head is one 64 KiB "line"),
    # nor is JSON (a one-line communication.json split at its commas was thousands of cells).
    if len(head) >= HEAD_BYTES and b"\n" not in head and b"\r" not in head:
        return ()
    line = first_line(head)
    if line.lstrip().startswith(("{", "[")):
        return ()
    return tuple(c.strip().strip('"') for c in line.split(","))
